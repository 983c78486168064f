import { describe, expect, it } from 'vitest';
import { checkSupport, dtypeNotes } from '../../src/search/support.js';
import { NoFeasibleError, UnsupportedError } from '../../src/util/errors.js';
import type { SearchResult } from '../../src/search/types.js';
import { fakeContext, fakeEngine, fakeSystem } from './fakes.js';

const sys = fakeSystem();

describe('support check', () => {
  it('reports every backend and version, with the smallest layout and one-node fit', async () => {
    const o = { weightsGiB: 100, kvGiBPerSeq: 1 };
    const r = await checkSupport(
      { engine: fakeEngine(o), loadContext: async (b) => fakeContext(o, sys, b as 'vllm') },
      { modelId: 'test/fake-model', system: sys },
    );
    expect(r.rows.map((x) => `${x.backend}@${x.version}`)).toEqual(['vllm@0.1.0', 'vllm@0.2.0', 'sglang@0.5.0']);
    expect(r.supported).toBe(true);
    expect(r.rows[0]!.fit).toMatchObject({ fitsOneNode: true, parallel: 'tp2pp1', gpus: 2 });
    expect(r.rows[1]!.isDefault).toBe(true);
    expect(r.slaMet).toBeUndefined();
  });

  it('says why a backend cannot model the architecture and is unsupported when none can', async () => {
    const o = { weightsGiB: 10, kvGiBPerSeq: 1 };
    const r = await checkSupport(
      {
        engine: fakeEngine(o),
        loadContext: async (b) => {
          throw new UnsupportedError(`no ${b} data for MLA attention`);
        },
      },
      { modelId: 'x', system: sys, backend: 'vllm' },
    );
    expect(r.supported).toBe(false);
    expect(r.rows).toHaveLength(2);
    expect(r.rows[0]!.reason).toMatch(/no vllm data for MLA/);
  });

  it('reports weights that need more than one node', async () => {
    const o = { weightsGiB: 1000, kvGiBPerSeq: 1 };
    const r = await checkSupport(
      { engine: fakeEngine(o), loadContext: async () => fakeContext(o, sys) },
      { modelId: 'x', system: sys, backend: 'vllm', version: '0.2.0' },
    );
    expect(r.rows).toHaveLength(1);
    expect(r.rows[0]!.fit).toMatchObject({ fitsOneNode: false, parallel: 'tp8pp2', gpus: 16 });
  });

  it('runs the search with a budget and reports whether any layout meets the SLA', async () => {
    const o = { weightsGiB: 10, kvGiBPerSeq: 1 };
    const engine = fakeEngine(o);
    const ctx = fakeContext(o, sys);
    const meets = (version: string): SearchResult => {
      const est = engine.estimateAgg(ctx, { tp: 1, pp: 1, dp: 1, moeTp: 1, moeEp: 1, batchSize: 8, maxNumTokens: 8192 });
      if ('refused' in est && est.refused) throw new Error('unexpected');
      const cand = { estimate: est as never, parallel: 'tp1pp1', gpusUsed: 8, clusterTokPerSPerGpu: 123, meetsSla: true };
      const mode = { mode: 'agg' as const, evaluated: 1, feasible: 1, removed: { memory: 0, engine: 0, ttft: 0, tpot: 0, request_latency: 0 }, top: [cand], frontier: [cand], nearMisses: [] };
      return version === '0.1.0'
        ? ({ verdict: { winner: 'agg', text: 'agg wins' }, agg: mode } as unknown as SearchResult)
        : ({ verdict: { winner: 'none', text: 'tpot removed 40' } } as unknown as SearchResult);
    };
    const r = await checkSupport(
      {
        engine,
        loadContext: async (_b, v) => ({ ...ctx, version: v }),
        search: (c) => {
          if (c.version === '0.5.0') throw new NoFeasibleError('nothing meets ttft');
          return meets(c.version);
        },
      },
      { modelId: 'x', system: sys, budget: { totalGpus: 8, sla: { ttftMs: 500, tpotMs: 20 } } },
    );
    expect(r.rows.map((x) => x.sla?.met)).toEqual([true, false, false]);
    expect(r.rows[0]!.sla).toMatchObject({ mode: 'agg', parallel: 'tp1pp1', tokPerSPerGpu: 123 });
    expect(r.rows[1]!.sla?.reason).toBe('tpot removed 40');
    expect(r.rows[2]!.sla?.reason).toBe('nothing meets ttft');
    expect(r.slaMet).toBe(true);
  });

  it('lets internal errors through', async () => {
    const o = { weightsGiB: 10, kvGiBPerSeq: 1 };
    await expect(
      checkSupport({ engine: fakeEngine(o), loadContext: async () => { throw new Error('boom'); } }, { modelId: 'x', system: sys }),
    ).rejects.toThrow('boom');
  });

  it('notes weight formats the GPU has no native tensor cores for', () => {
    const ctx = fakeContext({ weightsGiB: 10, kvGiBPerSeq: 1 });
    expect(dtypeNotes(ctx)).toEqual([]);
    const fp4 = { ...ctx, gemmDtype: 'nvfp4' as const, moeDtype: 'nvfp4' as const };
    expect(dtypeNotes(fp4)).toHaveLength(1);
    expect(dtypeNotes(fp4)[0]).toMatch(/no native nvfp4 tensor cores/);
    const withFp4 = { ...fp4, system: fakeSystem({ gpu: { ...ctx.system.gpu, tflops: { bfloat16: 1, fp8: 2, nvfp4: 4 } } }) };
    expect(dtypeNotes(withFp4)).toEqual([]);
    expect(dtypeNotes({ ...ctx, gemmDtype: 'int4_wo' })).toEqual([]);
  });
});
