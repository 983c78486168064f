// The family ops (linear and sparse attention, hyper-connections, quantization): roofline answers, the fitted
// model's round trip, and the perf query. No reference data needed.
import { describe, expect, it } from 'vitest';
import { loadSystem } from '../../src/inputs/systems.js';
import { RooflinePerfSource } from '../../src/perf/roofline.js';
import { FamilyPricer, familyGroupOf, familySource, parseFamilyCalibration, partFeatures, partSol, serializeFamilyCalibration, type FamilyCalibration } from '../../src/perf/families.js';
import { fitPart } from '../../src/perf/families-fit.js';
import { splitAlternatives, type FamilyRow } from '../../src/perf/families-reference.js';
import { answerLines } from '../../src/perf/query.js';
import { peaksOf } from '../../src/perf/sol.js';
import type { LinearAttentionQuery, SparseAttentionQuery } from '../../src/perf/types.js';
import type { Row } from '../../src/perf/tables.js';

const system = loadSystem('h200_sxm');
const peaks = peaksOf(system);
const roofline = new RooflinePerfSource(system, { system: system.name, backend: 'vllm', version: '0.24.0', kind: 'synthesized', calibratedOn: 'roofline' });

const gdn = (over: Partial<LinearAttentionQuery> = {}): LinearAttentionQuery => ({
  kind: 'gdn', phase: 'context', batch: 1, seq: 1024, heads: 64, keyHeads: 16, headDim: 128, valueDim: 128, stateDim: 0, convKernel: 4, dtype: 'bfloat16', ...over,
});
const dsa = (over: Partial<SparseAttentionQuery> = {}): SparseAttentionQuery => ({
  kind: 'dsa', phase: 'generation', batch: 8, seq: 8192, heads: 16, kvHeads: 1, hidden: 7168, qLoraRank: 1536, kvLoraRank: 512, qkNopeHeadDim: 128,
  qkRopeHeadDim: 64, vHeadDim: 128, indexHeads: 64, indexHeadDim: 128, topk: 2048, compressRatio: 1, window: 0, dtype: 'fp8_block', kvDtype: 'fp8', ...over,
});

describe('family ops at the roofline', () => {
  it('answer positive latencies that grow with the work', () => {
    for (const kind of ['gdn', 'mamba2', 'kda'] as const) {
      const q = gdn({ kind, stateDim: kind === 'mamba2' ? 128 : 0 });
      const small = roofline.linearAttention(q);
      expect(small).toBeGreaterThan(0);
      expect(roofline.linearAttention({ ...q, batch: 16 })).toBeGreaterThan(small);
      expect(roofline.linearAttention({ ...q, phase: 'generation', seq: 1, batch: 64 })).toBeGreaterThan(0);
    }
    for (const kind of ['dsa', 'dsv4_csa', 'dsv4_hca', 'minimax_msa'] as const) {
      const q = dsa({ kind });
      expect(roofline.sparseAttention(q)).toBeGreaterThan(0);
      expect(roofline.sparseAttention({ ...q, batch: 64 })).toBeGreaterThan(roofline.sparseAttention(q));
    }
    expect(roofline.hyperConnection({ tokens: 4096, hidden: 4096, multiplier: 4, sinkhornIters: 20 })).toBeGreaterThan(roofline.hyperConnection({ tokens: 16, hidden: 4096, multiplier: 4, sinkhornIters: 20 }));
    expect(roofline.quantize({ mode: 'dynamic', m: 4096, k: 7168, dtype: 'fp8' })).toBeGreaterThan(roofline.quantize({ mode: 'static', m: 4096, k: 7168, dtype: 'fp8' }));
  });

  it('sparse attention reads the selected keys, not the whole cache, in decode', () => {
    // Past top-k the decode attention work stops growing; only the indexer's scan of the keys does.
    const at = (seq: number, part: 'with' | 'without'): number => partSol(peaks, 'dsa.generation.module', dsa({ seq, ...(part === 'without' ? { indexHeads: 0 } : {}) }) as unknown as Row);
    expect(at(65536, 'without') / at(8192, 'without')).toBeLessThan(1.05);
    expect(at(65536, 'with')).toBeGreaterThan(at(8192, 'with'));
  });
});

describe('fitted family models', () => {
  // Synthetic rows measured at a known efficiency that falls with size: the fit recovers them.
  const rows: FamilyRow[] = [];
  for (const batch of [1, 2, 4, 8, 16, 32, 64])
    for (const seq of [64, 256, 1024, 4096])
      for (const heads of [8, 16, 32, 64]) {
        const row = gdn({ batch, seq, heads, keyHeads: heads / 4 }) as unknown as Row;
        const sol = partSol(peaks, 'gdn.context.core', row);
        rows.push({ part: 'gdn.context.core', row, latency: sol * (1.5 + 0.2 * Math.log2(heads)) + 0.01, kernel: 'k', model: 'm' });
      }
  const model = fitPart('gdn.context.core', peaks, rows)!;
  const cal: FamilyCalibration = { system: 'h200_sxm', generator: 'test', sources: { 'vllm/0.24.0': { 'gdn.context.core': model } } };

  it('reproduce the rows they were fitted on and survive the file round trip', () => {
    const pricer = new FamilyPricer(peaks, 'vllm', '0.24.0', parseFamilyCalibration(serializeFamilyCalibration(cal)));
    const errs = rows.map((r) => Math.abs(pricer.part(r.part, r.row) / r.latency - 1)).sort((a, b) => a - b);
    expect(errs[Math.floor(errs.length / 2)]!).toBeLessThan(0.05);
    expect(errs[Math.floor(errs.length * 0.9)]!).toBeLessThan(0.15);
  });

  it('answer other releases from the nearest measured one, and other groups from the closest', () => {
    expect(familySource(cal, 'vllm', '0.19.0', 'gdn.context.core')).toBe('vllm/0.24.0');
    expect(familySource(cal, 'sglang', '0.5.14', 'gdn.context.core')).toBe('vllm/0.24.0');
    expect(familySource(cal, 'vllm', '0.24.0', 'gdn.generation.core')).toBeUndefined();
    expect(familyGroupOf(model, 'float16')?.g).toBe(model.groups.bfloat16);
    expect(partFeatures('gdn.context.core').group(rows[0]!.row)).toBe('bfloat16');
  });

  it('never answer below the speed of light', () => {
    const pricer = new FamilyPricer(peaks, 'vllm', '0.24.0', cal);
    for (const batch of [1, 1024]) {
      const r = gdn({ batch, seq: 65536 }) as unknown as Row;
      expect(pricer.part('gdn.context.core', r)).toBeGreaterThanOrEqual(partSol(peaks, 'gdn.context.core', r));
    }
  });
});

describe('heads below the measured ones', () => {
  // A decode state update timed with a model's full 64 heads only: a fixed 5 us launch plus 1.2x its speed of light.
  // A tensor-parallel worker runs 8 of them per GPU: the fixed cost stays, the surfaces must not scale it down.
  const FIXED = 0.005;
  const rows: FamilyRow[] = [];
  for (const batch of [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]) {
    const row = gdn({ phase: 'generation', seq: 1, batch }) as unknown as Row;
    rows.push({ part: 'gdn.generation.core', row, latency: FIXED + 1.2 * partSol(peaks, 'gdn.generation.core', row), kernel: 'k', model: 'm' });
  }
  const model = fitPart('gdn.generation.core', peaks, rows)!;
  const pricer = new FamilyPricer(peaks, 'sglang', '0.5.9', { system: 'h200_sxm', generator: 'test', sources: { 'sglang/0.5.9': { 'gdn.generation.core': model } } });

  it('are never priced under the least latency the group measured', () => {
    expect(model.groups.bfloat16!.floor).toBeCloseTo(Math.min(...rows.map((r) => r.latency)), 9);
    for (const batch of [1, 4]) {
      const tp8 = gdn({ phase: 'generation', seq: 1, batch, heads: 8, keyHeads: 2 }) as unknown as Row;
      expect(pricer.part('gdn.generation.core', tp8)).toBeGreaterThanOrEqual(FIXED);
    }
    // Where the work is larger than the least measured, the surfaces answer as fitted.
    const big = gdn({ phase: 'generation', seq: 1, batch: 512, heads: 8, keyHeads: 2 }) as unknown as Row;
    expect(pricer.part('gdn.generation.core', big)).toBeGreaterThan(model.groups.bfloat16!.floor!);
  });
});

describe('a format no table timed', () => {
  // A decode module timed with bf16 projections only: a fixed cost of 0.08 ms (launches) plus 1.5x its speed of
  // light. Per-tensor FP8 is priced from that group: the fixed cost stays, the rest scales with FP8's speed of light.
  const FIXED = 0.08;
  const rows: FamilyRow[] = [];
  for (const batch of [1, 2, 4, 8, 16, 32, 64, 128, 256])
    for (const seq of [1024, 4096, 16384])
      for (const heads of [8, 16, 32]) {
        const row = dsa({ dtype: 'bfloat16', batch, seq, heads }) as unknown as Row;
        rows.push({ part: 'dsa.generation.module', row, latency: FIXED + 1.5 * partSol(peaks, 'dsa.generation.module', row), kernel: 'k', model: 'm' });
      }
  const model = fitPart('dsa.generation.module', peaks, rows)!;
  const pricer = new FamilyPricer(peaks, 'sglang', '0.5.10', { system: 'h200_sxm', generator: 'test', sources: { 'sglang/0.5.10': { 'dsa.generation.module': model } } });
  const price = (over: Partial<SparseAttentionQuery>) => pricer.part('dsa.generation.module', dsa(over) as unknown as Row);

  it('keeps the substitute\'s fixed cost and scales the rest with its own speed of light', () => {
    for (const batch of [4, 64, 256]) {
      const fp8 = dsa({ dtype: 'fp8', batch }) as unknown as Row;
      const expected = FIXED + 1.5 * partSol(peaks, 'dsa.generation.module', fp8);
      expect(price({ dtype: 'fp8', batch }) / expected).toBeGreaterThan(0.85);
      expect(price({ dtype: 'fp8', batch }) / expected).toBeLessThan(1.15);
      expect(price({ dtype: 'fp8', batch })).toBeLessThan(price({ dtype: 'bfloat16', batch }));
    }
    // Scaling the whole bf16 time by the ratio of the speeds of light would put a launch-bound step below its fixed cost.
    expect(price({ dtype: 'fp8', batch: 1, seq: 1024 })).toBeGreaterThan(FIXED);
  });
});

describe('configure perf query', () => {
  it('answers the family ops, with dimensions defaulted to a representative model', async () => {
    const out = await answerLines([
      JSON.stringify({ op: 'linear_attention', kind: 'gdn', phase: 'context', batch: 4, seq: 2048 }),
      JSON.stringify({ op: 'linear_attention', kind: 'mamba2', phase: 'generation', batch: 64 }),
      JSON.stringify({ op: 'sparse_attention', kind: 'dsa', phase: 'generation', batch: 32, seq: 8192, heads: 16 }),
      JSON.stringify({ op: 'sparse_attention', kind: 'dsv4_hca', phase: 'context', seq: 4096 }),
      JSON.stringify({ op: 'hyper_connection', tokens: 2048 }),
      JSON.stringify({ op: 'quantize', m: 4096, k: 7168 }),
      JSON.stringify({ op: 'linear_attention', kind: 'rwkv', phase: 'context', seq: 8 }),
    ], { system: 'h200_sxm', backend: 'vllm', version: '0.24.0' });
    const docs = out.map((l) => JSON.parse(l) as { latency_ms?: number; error?: string });
    for (const d of docs.slice(0, 6)) expect(d.latency_ms).toBeGreaterThan(0);
    expect(docs[6]!.error).toMatch(/kind/);
  });
});

describe('reference rows', () => {
  it('set the slower of two kernels timed on one shape apart, and keep repeats of one kernel', () => {
    const row = { batch: 1 } as Row;
    const r = (kernel: string, latency: number, batch = 1): FamilyRow => ({ part: 'dsa.context.module', row: { ...row, batch }, latency, kernel, model: 'm' });
    const rows = [r('sparse', 2), r('kv', 1), r('kv', 1.1), r('sparse', 3, 2), r('sparse', 3.2, 2)];
    const { served, alternative } = splitAlternatives(rows);
    expect(alternative.map((x) => x.kernel)).toEqual(['sparse']);
    expect(served).toHaveLength(4);
  });
});
