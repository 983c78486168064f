import { describe, expect, it } from 'vitest';
import { composeDecodeModules, mlaDecodeGemms, MLA_MODULE_DTYPES } from '../../src/perf/mla.js';

describe('composed MLA decode modules', () => {
  it('name the five GEMMs of a DeepSeek-V3 decode step at 16 heads per GPU', () => {
    expect(mlaDecodeGemms(16)).toEqual([[2112, 7168], [3072, 1536], [8192, 128], [2048, 512], [7168, 2048]]);
  });

  it('add the GEMMs of the batch to the kernel, per GEMM format the engine prices', () => {
    const kernel = { phase: 'generation', batch: 8, seq: 4096, heads: 16, dtype: 'bfloat16', kv_dtype: 'fp8', latency_ms: 0.04 };
    const seen: number[] = [];
    const gemmMs = (dtype: string, m: number) => {
      seen.push(m);
      return dtype === 'nvfp4' ? undefined : dtype === 'fp8_block' ? 0.005 : 0.01;
    };
    const rows = composeDecodeModules([kernel, { ...kernel, phase: 'context' }], gemmMs);
    expect(rows.map((r) => r.dtype)).toEqual(['bfloat16', 'fp8_block']);
    expect(rows[0]!.latency_ms).toBeCloseTo(0.04 + 5 * 0.01, 9);
    expect(rows[1]!.latency_ms).toBeCloseTo(0.04 + 5 * 0.005, 9);
    expect(rows[1]!.kv_dtype).toBe('fp8');
    expect(new Set(seen)).toEqual(new Set([8]));
    expect(MLA_MODULE_DTYPES).toContain('nvfp4');
  });
});
