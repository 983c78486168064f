// Which layouts each engine's flags can deploy as priced (src/engine/rules.ts expressRule), and that the search
// offers exactly those.
import { describe, expect, it } from 'vitest';
import { expressRule, layoutRule } from '../../src/engine/rules.js';
import type { ParallelLayout } from '../../src/engine/types.js';
import type { Backend } from '../../src/inputs/types.js';
import { enumerateLayouts } from '../../src/search/candidates.js';
import { testCtx } from './helpers.js';

const VERSION: Record<Backend, string> = { vllm: '0.12.0', sglang: '0.5.6.post2', trtllm: '1.2.0rc5' };
const ctxOf = (backend: Backend, model = 'Qwen/Qwen3-30B-A3B') => testCtx(model, { backend, version: VERSION[backend] });
const L = (tp: number, pp: number, dp: number, moeTp: number, moeEp: number): ParallelLayout => ({ tp, pp, dp, moeTp, moeEp });

describe('expressRule', () => {
  it('vLLM: experts expert parallel over all tp x dp GPUs or tensor parallel over all of them', () => {
    const ctx = ctxOf('vllm');
    expect(expressRule(ctx, L(4, 1, 1, 4, 1))).toBeNull();
    expect(expressRule(ctx, L(4, 1, 1, 1, 4))).toBeNull();
    expect(expressRule(ctx, L(2, 1, 4, 1, 8))).toBeNull();
    expect(expressRule(ctx, L(4, 2, 1, 2, 2))).toMatch(/expert parallel over all tp x dp = 4 GPUs .*moe_tp 2 x moe_ep 2 cannot be deployed/);
    expect(expressRule(ctx, L(8, 1, 1, 2, 4))).toMatch(/cannot be deployed/);
    // Attention DP is offered with expert parallelism only.
    expect(expressRule(ctx, L(1, 1, 4, 4, 1))).toMatch(/expert parallelism only/);
    // A dense model has no experts to split.
    expect(expressRule(ctxOf('vllm', 'Qwen/Qwen3-32B'), L(4, 2, 1, 4, 1))).toBeNull();
  });

  it('SGLang: any expert-parallel width with the rest tensor parallel, attention DP with tp and pp', () => {
    const ctx = ctxOf('sglang');
    for (const l of [L(4, 1, 1, 2, 2), L(8, 1, 1, 2, 4), L(2, 2, 2, 2, 2), L(1, 1, 4, 4, 1), L(2, 1, 4, 1, 8)]) expect(expressRule(ctx, l), JSON.stringify(l)).toBeNull();
  });

  it('TRT-LLM: any expert split; attention DP only with tp 1 and one pipeline stage', () => {
    const ctx = ctxOf('trtllm');
    for (const l of [L(4, 1, 1, 2, 2), L(1, 1, 4, 2, 2), L(1, 1, 8, 1, 8), L(8, 2, 1, 1, 8)]) expect(expressRule(ctx, l), JSON.stringify(l)).toBeNull();
    expect(expressRule(ctx, L(2, 1, 4, 1, 8))).toMatch(/attention tp 1 .* tp 2 with dp 4 cannot be deployed, use tp 1 dp 8/);
    expect(expressRule(ctx, L(1, 2, 4, 1, 4))).toMatch(/does not combine pipeline parallelism with attention data parallelism/);
  });

  it('layoutRule refuses what expressRule refuses, after the model checks', () => {
    const ctx = ctxOf('vllm');
    expect(layoutRule(ctx, L(4, 2, 1, 2, 2), 'agg')).toBe(expressRule(ctx, L(4, 2, 1, 2, 2)));
    expect(layoutRule(ctx, L(4, 1, 1, 1, 2), 'agg')).toMatch(/must equal tp x dp/);
  });
});

describe('the search enumerates only deployable layouts', () => {
  for (const backend of ['vllm', 'sglang', 'trtllm'] as const) {
    it(backend, () => {
      const ctx = ctxOf(backend);
      const layouts = enumerateLayouts(ctx, 16);
      expect(layouts.length).toBeGreaterThan(0);
      for (const l of layouts) expect(expressRule(ctx, l), JSON.stringify(l)).toBeNull();
      const mixed = layouts.some((l) => l.moeTp > 1 && l.moeEp > 1);
      expect(mixed).toBe(backend !== 'vllm');
      expect(layouts.some((l) => l.tp > 1 && l.dp > 1)).toBe(backend !== 'trtllm');
    });
  }
  it('keeps a split the user pinned, for the engine to refuse with its reason', () => {
    const ctx = ctxOf('vllm');
    const pinned = enumerateLayouts(ctx, 8, { moeTp: [2], moeEp: [2] });
    expect(pinned.length).toBeGreaterThan(0);
    for (const l of pinned) expect(layoutRule(ctx, l, 'agg'), JSON.stringify(l)).not.toBeNull();
  });
});
