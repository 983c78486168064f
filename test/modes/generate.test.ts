import { describe, expect, it } from 'vitest';
import { generate, generateBatch, layoutOrder, MIN_SEQUENCES, smallestLayout } from '../../src/search/generate.js';
import { NoFeasibleError } from '../../src/util/errors.js';
import { fakeContext, fakeEngine, fakeSystem } from './fakes.js';

const sla = { ttftMs: 1000, tpotMs: 30 };

describe('generate: smallest layout', () => {
  it('picks tp2 for weights that cannot fit on one 80 GiB GPU but fit on two', () => {
    const o = { weightsGiB: 100, kvGiBPerSeq: 1 };
    const s = smallestLayout(fakeEngine(o), fakeContext(o));
    expect(s.layout).toMatchObject({ tp: 2, pp: 1 });
    expect(s.trials.map((t) => t.parallel)).toEqual(['tp1pp1', 'tp2pp1']);
    expect(s.trials[0]!.rejected).toMatch(/exceed/);
  });

  it('passes over a layout whose weights fit but whose KV cache holds fewer than MIN_SEQUENCES sequences', () => {
    // tp1: 72 - 60 = 12 GiB of KV = 12 sequences < 16; tp2: 72 - 30 = 42 GiB / 0.5 = 84 sequences.
    const o = { weightsGiB: 60, kvGiBPerSeq: 1 };
    const s = smallestLayout(fakeEngine(o), fakeContext(o));
    expect(MIN_SEQUENCES).toBe(16);
    expect(s.layout.tp).toBe(2);
    expect(s.trials[0]!.rejected).toMatch(/holds 12 sequences/);
  });

  it('goes to pipeline stages of a full node after tp8', () => {
    // 1000 GiB: tp8 holds 125 GiB/GPU > 72 → refused; tp8pp2 = 62.5 GiB/GPU → 9.5 GiB KV / (1/16) = 152 seqs.
    const o = { weightsGiB: 1000, kvGiBPerSeq: 1 };
    const s = smallestLayout(fakeEngine(o), fakeContext(o));
    expect(s.layout).toMatchObject({ tp: 8, pp: 2 });
    expect(s.trials.map((t) => t.gpus)).toEqual([1, 2, 4, 8, 16]);
  });

  it('skips layouts the engine refuses', () => {
    const o = { weightsGiB: 10, kvGiBPerSeq: 1, refuseTp: [1] };
    const s = smallestLayout(fakeEngine(o), fakeContext(o));
    expect(s.layout.tp).toBe(2);
    expect(s.trials[0]!.rejected).toMatch(/refused by the fake engine/);
  });

  it('tries expert parallelism first for MoE when the expert count divides', () => {
    const ctx = fakeContext({ weightsGiB: 10, kvGiBPerSeq: 1, moeExperts: 128 });
    const order = layoutOrder(ctx);
    expect(order[2]![0]).toMatchObject({ tp: 4, moeEp: 4, moeTp: 1 });
    expect(order[0]).toHaveLength(1);
  });

  it('for MoE, one memory rejection per shape (expert tp vs ep shards the same bytes)', () => {
    const o = { weightsGiB: 1000, kvGiBPerSeq: 1, moeExperts: 128 };
    const s = smallestLayout(fakeEngine(o), fakeContext(o));
    expect(s.trials.map((t) => t.parallel)).toEqual(['tp1pp1dp1etp1ep1', 'tp2pp1dp1etp1ep2', 'tp4pp1dp1etp1ep4', 'tp8pp1dp1etp1ep8', 'tp8pp2dp1etp1ep8']);
  });

  it('for MoE, falls back to expert tp when the engine refuses expert parallelism', () => {
    const o = { weightsGiB: 100, kvGiBPerSeq: 1, moeExperts: 128 };
    const engine = { ...fakeEngine(o), layoutRule: (_c: unknown, l: { moeEp: number }) => (l.moeEp > 1 ? 'no ep here' : null) };
    const s = smallestLayout(engine, fakeContext(o));
    expect(s.layout).toMatchObject({ tp: 2, moeTp: 2, moeEp: 1 });
    expect(s.trials.map((t) => t.rejected === null ? 'ok' : t.rejected.slice(0, 10))).toEqual(['weights 10', 'no ep here', 'ok']);
  });

  it('throws NoFeasibleError (exit 3) when nothing up to the cap fits', () => {
    const o = { weightsGiB: 100_000, kvGiBPerSeq: 1 };
    expect(() => smallestLayout(fakeEngine(o), fakeContext(o))).toThrow(NoFeasibleError);
  });

  it('respects the node size of small systems', () => {
    const sys = fakeSystem({ gpusPerNode: 4 });
    const o = { weightsGiB: 400, kvGiBPerSeq: 1 };
    const s = smallestLayout(fakeEngine(o), fakeContext(o, sys));
    expect(s.layout).toMatchObject({ tp: 4, pp: 2 });
  });
});

describe('generate: prediction and result', () => {
  it('predicts at the largest power of two the KV cache holds, capped at 256', () => {
    expect(generateBatch({ maxSequences: 84 } as never)).toBe(64);
    expect(generateBatch({ maxSequences: 5000 } as never)).toBe(256);
    expect(generateBatch({ maxSequences: 5000 } as never, 128)).toBe(128);
  });

  it('wraps one candidate in a SearchResult with replicas over the budget', () => {
    const o = { weightsGiB: 100, kvGiBPerSeq: 1 };
    const g = generate(fakeEngine(o), fakeContext(o), { totalGpus: 8, sla });
    // tp2: (72 - 50) / 0.5 = 44 sequences → batch 32; 4 replicas on 8 GPUs.
    expect(g.batch).toBe(32);
    expect(g.replicas).toBe(4);
    expect(g.result.agg?.top).toHaveLength(1);
    expect(g.result.inputs.totalGpus).toBe(8);
    expect(g.candidate.gpusUsed).toBe(8);
    expect(g.candidate.parallel).toBe('tp2pp1');
    // tpot = 10 + 32/8 = 14 ms: meets 30 ms.
    expect(g.candidate.meetsSla).toBe(true);
    expect(g.result.verdict.winner).toBe('agg');
  });

  it('marks the SLA targets the naive layout breaks', () => {
    const o = { weightsGiB: 10, kvGiBPerSeq: 0.1 };
    const g = generate(fakeEngine(o), fakeContext(o), { sla: { ttftMs: 100, tpotMs: 20 } });
    // tp1, batch 256 → tpot 42 ms, ttft 200 ms.
    expect(g.batch).toBe(256);
    expect(g.candidate.broke).toEqual(['ttft', 'tpot']);
    expect(g.result.agg?.feasible).toBe(0);
    expect(g.result.inputs.totalGpus).toBe(1);
  });

  it('refuses a budget smaller than the smallest layout', () => {
    const o = { weightsGiB: 100, kvGiBPerSeq: 1 };
    expect(() => generate(fakeEngine(o), fakeContext(o), { totalGpus: 1, sla })).toThrow(/up to 1 GPUs/);
  });
});
