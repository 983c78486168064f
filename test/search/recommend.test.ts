import { existsSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { Command } from 'commander';
import type { AggConfig, AggEstimate, EngineContext } from '../../src/engine/types.js';
import type { SearchEngine } from '../../src/search/port.js';
import { recommendWith } from '../../src/search/recommend.js';
import { recommendToJson } from '../../src/search/json.js';
import { renderRecommend } from '../../src/output/console.js';
import { registerRecommend } from '../../src/cli/commands/recommend.js';
import { dataPath } from '../../src/util/paths.js';
import { DEFAULT_KNOBS, fakeContext, fakeEngine } from './fake.js';

const SLA = { ttftMs: 2000, tpotMs: 30 };

/** tp1 serves 1 req/s and 10 clients per replica on 1 GPU; tp2 serves 2.5 req/s and 20 clients on 2 GPUs. */
function fixedRates(): SearchEngine {
  const base = fakeEngine();
  return {
    ...base,
    estimateAgg(ctx: EngineContext, c: AggConfig, opts?: { replicas?: number }) {
      const e = base.estimateAgg(ctx, c, opts) as AggEstimate;
      const r = e.replicas;
      const one = c.tp === 1 ? { rate: 1, clients: 10 } : { rate: 2.5, clients: 20 };
      return {
        ...e,
        metrics: { ...e.metrics, ttftMs: 10, tpotMs: 10, requestsPerS: one.rate * r, concurrency: one.clients * r, tokPerSPerGpu: (one.rate * 1000) / c.tp },
      };
    },
  };
}
const ONLY = { tp: [1, 2], pp: [1], batch: [8] };

describe('recommend', () => {
  it('replicates the unit that needs the fewest GPUs for a request rate', () => {
    const r = recommendWith(fixedRates(), fakeContext(), { target: { kind: 'rate', requestsPerS: 5 }, sla: SLA, topN: 5, modes: ['agg'], restrict: ONLY });
    // tp1: 5 replicas = 5 GPUs; tp2: ceil(5 / 2.5) = 2 replicas = 4 GPUs.
    expect(r.best).toMatchObject({ parallel: 'tp2pp1', replicas: 2, gpus: 4, share: 1 });
    expect(r.agg.map((x) => [x.parallel, x.gpus])).toEqual([
      ['tp2pp1', 4],
      ['tp1pp1', 5],
    ]);
    // The deployment is re-priced with its replica count.
    expect((r.best!.candidate.estimate as AggEstimate).replicas).toBe(2);
    expect(r.best!.candidate.gpusUsed).toBe(4);
  });

  it('matches a concurrency target', () => {
    const r = recommendWith(fixedRates(), fakeContext(), { target: { kind: 'concurrency', clients: 45 }, sla: SLA, topN: 5, modes: ['agg'], restrict: ONLY });
    // tp1: ceil(45/10) = 5 GPUs; tp2: ceil(45/20) = 3 replicas = 6 GPUs.
    expect(r.best).toMatchObject({ parallel: 'tp1pp1', replicas: 5, gpus: 5 });
    expect(r.best!.share).toBeCloseTo(50 / 45);
  });

  it('reports the largest share served when --max-gpus is too small', () => {
    const r = recommendWith(fixedRates(), fakeContext(), { target: { kind: 'rate', requestsPerS: 100 }, maxGpus: 4, sla: SLA, topN: 5, modes: ['agg'], restrict: ONLY });
    // Within 4 GPUs: tp2 x2 = 5 req/s beats tp1 x4 = 4 req/s.
    expect(r.best).toMatchObject({ parallel: 'tp2pp1', gpus: 4 });
    expect(r.best!.share).toBeCloseTo(0.05);
    expect(recommendToJson(r).best?.meetsTarget).toBe(false);
  });

  it('finds a model that needs exactly two nodes', () => {
    // 1500 GiB of weights on 120 GiB GPUs: 16 GPUs (two 8-GPU nodes) is the smallest power-of-two layout.
    const engine = fakeEngine({ ...DEFAULT_KNOBS, weightsGiB: 1500 });
    const r = recommendWith(engine, fakeContext({ gpusPerNode: 8 }), { target: { kind: 'rate', requestsPerS: 0.01 }, sla: { ttftMs: 1e6, tpotMs: 1e6 }, topN: 3, modes: ['agg', 'disagg'] });
    expect(r.best?.gpus).toBe(16);
    expect(r.best?.replicas).toBe(1);
    expect(r.unitBudget).toBe(16);
    const text = renderRecommend(r, { color: false });
    expect(text).toContain('16 x fake_sxm');
  });

  it('grows the unit search past two nodes when nothing smaller fits', () => {
    const engine = fakeEngine({ ...DEFAULT_KNOBS, weightsGiB: 3000 });
    const r = recommendWith(engine, fakeContext({ gpusPerNode: 8 }), { target: { kind: 'rate', requestsPerS: 0.01 }, sla: { ttftMs: 1e6, tpotMs: 1e6 }, topN: 3, modes: ['agg'] });
    expect(r.unitBudget).toBe(32);
    expect(r.best?.gpus).toBe(32);
  });
});

describe('configure recommend flags', () => {
  it('needs exactly one target (exit 2)', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const program = new Command('configure').exitOverride();
      registerRecommend(program);
      for (const c of program.commands) c.exitOverride();
      await program.parseAsync(['recommend', '--hf-id', 'x', '--system', 'h200_sxm'], { from: 'user' });
      expect(process.exitCode).toBe(2);
      expect(String(err.mock.calls[0]?.[0])).toMatch(/exactly one of --target-request-rate/);
    } finally {
      err.mockRestore();
      process.exitCode = 0;
    }
  });
});

const TABLES = existsSync(dataPath('perf', 'h200_sxm', 'vllm'));
if (!TABLES) console.log('recommend: data/perf tables for h200_sxm vllm are absent; the priced CLI case is skipped');

describe.skipIf(!TABLES)('configure recommend with the inference model', () => {
  it('sizes Llama-3.1-70B on H200 for 20 req/s and prints one JSON document', async () => {
    let stdout = '';
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((stdout += String(s)), true));
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const program = new Command('configure').exitOverride();
      registerRecommend(program);
      for (const c of program.commands) c.exitOverride();
      process.exitCode = 0;
      await program.parseAsync(
        ['recommend', '--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h200_sxm', '--target-request-rate', '20', '--isl', '4000', '--osl', '500', '--ttft', '1000', '--tpot', '30', '--json'],
        { from: 'user' },
      );
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
    expect(process.exitCode).toBe(0);
    process.exitCode = 0;
    const doc = JSON.parse(stdout);
    expect(doc.best.meetsTarget).toBe(true);
    expect(doc.best.gpus).toBe(doc.best.replicas * doc.best.unitGpus);
    expect(doc.best.unitRequestsPerS * doc.best.replicas).toBeGreaterThanOrEqual(20);
    // Fewer replicas would not carry the load.
    expect(doc.best.unitRequestsPerS * (doc.best.replicas - 1)).toBeLessThan(20);
    expect(doc.best.deployment.metrics.tpotMs).toBeLessThanOrEqual(30);
    expect(doc.best.deployment.metrics.ttftMs).toBeLessThanOrEqual(1000);
    for (const r of [...doc.agg, ...doc.disagg]) expect(r.gpus).toBeGreaterThanOrEqual(doc.best.gpus);
  }, 60_000);
});
