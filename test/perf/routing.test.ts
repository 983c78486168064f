import { describe, expect, it } from 'vitest';
import { loadSystem } from '../../src/inputs/systems.js';
import { loadPerfSource } from '../../src/perf/index.js';
import { busiestRankLoad } from '../../src/perf/routing.js';
import { moeSol, peaksOf } from '../../src/perf/sol.js';

describe('expert load on the busiest rank', () => {
  it('balanced routing spreads the copies evenly over the ranks', () => {
    expect(busiestRankLoad(64, 256, 8, 8)).toEqual({ copies: 64, active: 32 });
    expect(busiestRankLoad(2, 256, 8, 8)).toEqual({ copies: 2, active: 2 });
  });

  it('power-law routing keeps every copy, is deterministic, and never exceeds the rank', () => {
    const a = busiestRankLoad(512, 128, 8, 1, 'power_law_1.2');
    expect(a.copies).toBe(512 * 8);
    expect(busiestRankLoad(512, 128, 8, 1, 'power_law_1.2')).toEqual(a);
    for (const [t, e, k, ep] of [[1, 256, 8, 8], [16, 8, 2, 1], [4096, 384, 8, 32], [3, 128, 8, 4]] as const) {
      const l = busiestRankLoad(t, e, k, ep, 'power_law_1.01');
      // The busiest rank holds at least its share of the copies and at most one active expert per copy.
      expect(l.copies).toBeGreaterThanOrEqual((t * k) / ep);
      expect(l.active).toBeLessThanOrEqual(Math.min(e / ep, l.copies));
      expect(l.active).toBeGreaterThan(0);
    }
  });

  it('skew touches fewer experts for few tokens and loads the hot rank for many', () => {
    expect(busiestRankLoad(4, 8, 2, 1, 'power_law_1.01').active).toBeLessThan(busiestRankLoad(4, 8, 2, 1).active);
    expect(busiestRankLoad(8192, 256, 8, 32, 'power_law_1.2').copies).toBeGreaterThan(1.5 * busiestRankLoad(8192, 256, 8, 32).copies);
  });

  it('the expert layer speed of light follows the routing', () => {
    const p = peaksOf(loadSystem('l40s'));
    const sol = (tokens: number, ep: number, d?: string) => moeSol(p, 'bfloat16', tokens, 4096, 14336, 2, 8, 8 / ep, ep, d);
    // Mixtral on one rank, 4 tokens: skew reads fewer experts' weights.
    expect(sol(4, 1, 'power_law_1.01')).toBeLessThan(sol(4, 1));
    // Many tokens at EP 8: the hot rank computes more than its share.
    expect(sol(16384, 8, 'power_law_1.2')).toBeGreaterThan(sol(16384, 8));
  });
});

describe('MoE tables that hold skewed routings only', () => {
  it('price balanced routing no faster than its roofline, and the skewed routing as measured', async () => {
    const h200 = loadSystem('h200_sxm');
    // SGLang 0.5.6.post2 on H200 measured power-law routing only.
    const src = await loadPerfSource({ system: h200, backend: 'sglang', version: '0.5.6.post2' });
    const q = { dtype: 'fp8_block' as const, tokens: 16, hidden: 4096, inter: 1536, topk: 8, experts: 128, moeTp: 4, moeEp: 1 };
    const balancedSol = moeSol(peaksOf(h200), 'fp8_block', 16, 4096, 1536, 8, 128, 4, 1);
    const skewed = src.moe({ ...q, distribution: 'power_law_1.01' });
    expect(skewed).toBeLessThan(balancedSol);
    expect(skewed).toBeGreaterThanOrEqual(moeSol(peaksOf(h200), 'fp8_block', 16, 4096, 1536, 8, 128, 4, 1, 'power_law_1.01'));
    expect(src.moe(q)).toBeGreaterThanOrEqual(balancedSol);
  });
});
