// Sliding windows the tables do not list: the calibrated model answers at a width its group measured; any other
// width is full attention scaled by the roofline to the window (the fitted surfaces know measured widths only).
import { describe, expect, it } from 'vitest';
import { loadSystem } from '../../src/inputs/systems.js';
import { loadCalibration, modelLatency, resolvedModel } from '../../src/perf/calibration.js';
import { loadPerfSource } from '../../src/perf/index.js';
import { contextAttentionSol, peaksOf } from '../../src/perf/sol.js';
import { OP_SPECS, type Row } from '../../src/perf/tables.js';

const system = loadSystem('h100_sxm');
const peaks = peaksOf(system);
// SGLang 0.5.14 measured head_dim 256 prefill attention with a 1024-token window on H100 (Gemma-style layers).
const q = { batch: 1, seq: 16384, prefix: 0, heads: 16, kvHeads: 8, headDim: 256, dtype: 'bfloat16', kvDtype: 'fp8' } as const;

describe('sliding-window attention outside the tables', () => {
  it('a width the group measured is the calibrated model', async () => {
    const src = await loadPerfSource({ system, backend: 'sglang', version: '0.5.14' });
    const model = resolvedModel(loadCalibration('h100_sxm')!, 'sglang', '0.5.14', 'context_attention', 'sglang/0.5.14')!;
    const r: Row = { batch: 1, seq: q.seq, heads: q.heads, kv_heads: q.kvHeads, head_dim: q.headDim, dtype: q.dtype, kv_dtype: q.kvDtype, window: 1024 };
    const want = modelLatency('context_attention', model, r, OP_SPECS.context_attention.sol(peaks, r))!;
    expect(src.contextAttention({ ...q, window: 1024 })).toBeCloseTo(want, 9);
    // That kernel gains little from the window: well above the roofline-scaled full attention.
    const full = src.contextAttention({ ...q, window: 0 });
    const scaled = (full * contextAttentionSol(peaks, 1, q.seq, 0, q.heads, q.kvHeads, q.headDim, q.dtype, q.kvDtype, 1024)) /
      contextAttentionSol(peaks, 1, q.seq, 0, q.heads, q.kvHeads, q.headDim, q.dtype, q.kvDtype, 0);
    expect(want).toBeGreaterThan(2 * scaled);
  });

  it('another width is full attention scaled by the roofline', async () => {
    const src = await loadPerfSource({ system, backend: 'sglang', version: '0.5.14' });
    const sol = (w: number): number => contextAttentionSol(peaks, 1, q.seq, 0, q.heads, q.kvHeads, q.headDim, q.dtype, q.kvDtype, w);
    const full = src.contextAttention({ ...q, window: 0 });
    expect(src.contextAttention({ ...q, window: 2048 })).toBeCloseTo(Math.max((full * sol(2048)) / sol(0), sol(2048)), 9);
  });
});
