import { describe, expect, it } from 'vitest';
import type { AggConfig, AggEstimate, EngineContext } from '../../src/engine/types.js';
import type { SearchEngine } from '../../src/search/port.js';
import { runSearchWith } from '../../src/search/search.js';
import { explain, hasFeasible, noFeasibleMessage } from '../../src/search/explain.js';
import { searchToJson } from '../../src/search/json.js';
import { batchGrid, prefillBatches } from '../../src/search/candidates.js';
import { renderNoFeasible, renderReport } from '../../src/output/console.js';
import { DEFAULT_KNOBS, fakeContext, fakeEngine } from './fake.js';

const SLA = { ttftMs: 2000, tpotMs: 30 };

describe('runSearch on a fake inference model', () => {
  it('ranks by throughput over the whole budget, so layouts that strand GPUs lose', () => {
    // tp2 is faster per GPU (120 vs 100) but on 3 GPUs one replica strands a GPU: 120 * 2/3 = 80 < 100.
    const base = fakeEngine();
    const engine: SearchEngine = {
      ...base,
      estimateAgg(ctx: EngineContext, c: AggConfig, opts?: { replicas?: number }) {
        const e = base.estimateAgg(ctx, c, opts) as AggEstimate;
        const perGpu = c.tp === 1 ? 100 : 120;
        return { ...e, metrics: { ...e.metrics, tokPerSPerGpu: perGpu, ttftMs: 10, tpotMs: 10 } };
      },
    };
    const r = runSearchWith(engine, fakeContext(), { totalGpus: 3, sla: SLA, topN: 5, modes: ['agg'], restrict: { tp: [1, 2], pp: [1], batch: [8] } });
    expect(r.agg!.top.map((c) => [c.parallel, c.gpusUsed, c.clusterTokPerSPerGpu])).toEqual([
      ['tp1pp1', 3, 100],
      ['tp2pp1', 2, 80],
    ]);
    expect(r.verdict.text).toBe('agg wins: 100 tokens/s/gpu (disagg not searched)');
  });

  it('rate matching finds the same best disagg deployment as trying every worker split', () => {
    const engine = fakeEngine();
    const ctx = fakeContext();
    const budget = 6;
    const r = runSearchWith(engine, ctx, { totalGpus: budget, sla: { ttftMs: 1e9, tpotMs: 1e9 }, topN: 5, modes: ['disagg'], restrict: { tp: [1, 2], pp: [1] } });
    // Brute force over the same space with the same fake.
    let best = 0;
    for (const pt of [1, 2]) for (const dt of [1, 2]) for (const bp of prefillBatches(ctx.workload.isl)) {
      const dMem = engine.memoryFor(ctx, { tp: dt, pp: 1, dp: 1, moeTp: dt, moeEp: 1 }, 8192) as { maxSequences: number };
      for (const bd of batchGrid(dMem.maxSequences)) for (let x = 1; x * pt + dt <= budget; x++) for (let y = 1; x * pt + y * dt <= budget; y++) {
        const e = engine.estimateDisagg(ctx, {
          prefill: { tp: pt, pp: 1, dp: 1, moeTp: pt, moeEp: 1, batchSize: bp, maxNumTokens: bp * ctx.workload.isl, workers: x },
          decode: { tp: dt, pp: 1, dp: 1, moeTp: dt, moeEp: 1, batchSize: bd, maxNumTokens: 8192, workers: y },
        });
        if ('metrics' in e) {
          const unit = x * pt + y * dt;
          best = Math.max(best, (e.metrics.tokPerSPerGpu * unit * Math.floor(budget / unit)) / budget);
        }
      }
    }
    expect(r.disagg!.top[0].clusterTokPerSPerGpu).toBeCloseTo(best, 6);
    expect(r.disagg!.evaluated).toBeGreaterThan(r.disagg!.counters!.engineCalls);
  });

  it('returns a frontier of mutually non-dominated points and a top-N that meets the SLA', () => {
    const r = runSearchWith(fakeEngine(), fakeContext(), { totalGpus: 8, sla: SLA, topN: 5, modes: ['agg', 'disagg'] });
    for (const m of [r.agg!, r.disagg!]) {
      expect(m.top.length).toBeGreaterThan(0);
      expect(m.top.length).toBeLessThanOrEqual(5);
      expect(new Set(m.top.map((c) => c.parallel)).size).toBe(m.top.length);
      for (const c of m.top) {
        expect(c.estimate.metrics.ttftMs).toBeLessThanOrEqual(SLA.ttftMs);
        expect(c.estimate.metrics.tpotMs).toBeLessThanOrEqual(SLA.tpotMs);
      }
      for (let i = 1; i < m.top.length; i++) expect(m.top[i - 1].clusterTokPerSPerGpu).toBeGreaterThanOrEqual(m.top[i].clusterTokPerSPerGpu);
      for (const a of m.frontier) {
        for (const b of m.frontier) {
          if (a === b) continue;
          const dominates = b.clusterTokPerSPerGpu >= a.clusterTokPerSPerGpu && b.estimate.metrics.tokPerSPerUser >= a.estimate.metrics.tokPerSPerUser &&
            (b.clusterTokPerSPerGpu > a.clusterTokPerSPerGpu || b.estimate.metrics.tokPerSPerUser > a.estimate.metrics.tokPerSPerUser);
          expect(dominates).toBe(false);
        }
      }
      // The best feasible point is on or under the frontier.
      expect(Math.max(...m.frontier.map((c) => c.clusterTokPerSPerGpu))).toBeGreaterThanOrEqual(m.top[0].clusterTokPerSPerGpu);
    }
    const winner = r.agg!.top[0].clusterTokPerSPerGpu >= r.disagg!.top[0].clusterTokPerSPerGpu ? 'agg' : 'disagg';
    expect(r.verdict.winner).toBe(winner);
    const doc = searchToJson(r);
    expect(doc.best?.mode).toBe(winner);
    expect(doc.agg?.top[0].rank).toBe(1);
    expect(doc.explanation).toBeNull();
    const text = renderReport(r, { color: false });
    expect(text).toContain(r.verdict.text);
    expect(text).toMatch(/\d+ \(=\d+x\d+\)/);
    expect(text).not.toMatch(/\u001b\[/);
    expect(renderReport(r, { color: true })).toMatch(/\u001b\[/);
  });

  it('explains an unmeetable TPOT: every priced candidate removed by tpot, nearest misses name it', () => {
    const r = runSearchWith(fakeEngine(), fakeContext(), { totalGpus: 4, sla: { ttftMs: 1e6, tpotMs: 0.5 }, topN: 5, modes: ['agg', 'disagg'] });
    expect(hasFeasible(r)).toBe(false);
    expect(r.verdict.winner).toBe('none');
    const d = explain(r);
    const agg = d.modes.find((m) => m.mode === 'agg')!;
    expect(agg.removed.tpot).toBe(agg.evaluated);
    expect(agg.nearMisses.length).toBeGreaterThan(0);
    expect(agg.nearMisses.every((n) => n.broke === 'tpot')).toBe(true);
    expect(agg.nearMisses[0].detail).toMatch(/tpot [\d.]+ ms > 0.50 ms/);
    expect(noFeasibleMessage(d)).toMatch(/removed by tpot/);
    expect(renderNoFeasible(d)).toContain('Nearest misses');
    expect(searchToJson(r).explanation?.modes.length).toBe(2);
  });

  it('explains an unmeetable TTFT', () => {
    const r = runSearchWith(fakeEngine(), fakeContext(), { totalGpus: 4, sla: { ttftMs: 1, tpotMs: 1e6 }, topN: 5, modes: ['agg'] });
    const agg = explain(r).modes[0];
    expect(agg.removed.ttft).toBe(agg.evaluated);
    expect(agg.nearMisses[0].broke).toBe('ttft');
  });

  it('explains a model that cannot fit: memory removed everything', () => {
    const engine = fakeEngine({ ...DEFAULT_KNOBS, weightsGiB: 1000 });
    const r = runSearchWith(engine, fakeContext(), { totalGpus: 4, sla: SLA, topN: 5, modes: ['agg', 'disagg'] });
    const d = explain(r);
    for (const m of d.modes) {
      expect(m.feasible).toBe(0);
      expect(m.removed.memory).toBe(m.evaluated);
      expect(m.evaluated).toBeGreaterThan(0);
    }
    // The largest layouts (closest to fitting) come first.
    expect(d.modes[0].nearMisses[0].broke).toBe('memory');
    expect(['tp4pp1', 'tp2pp2', 'tp1pp4']).toContain(d.modes[0].nearMisses[0].parallel);
    expect(d.modes[0].nearMisses[0].detail).toMatch(/GiB per GPU/);
    expect(engine.calls).toBe(0);
  });

  it('respects search restrictions and refuses layouts through the engine rule', () => {
    const engine = fakeEngine({ ...DEFAULT_KNOBS, rule: (l) => (l.pp > 1 ? 'no pipeline parallelism here' : null) });
    const r = runSearchWith(engine, fakeContext(), { totalGpus: 8, sla: SLA, topN: 10, modes: ['agg'], restrict: { tp: [2, 4] } });
    expect(r.agg!.removed.engine).toBeGreaterThan(0);
    expect(new Set(r.agg!.top.map((c) => c.parallel))).toEqual(new Set(['tp2pp1', 'tp4pp1']));
  });
});
