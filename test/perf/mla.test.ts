import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { composeDecodeModules, mlaDecodeGemms, MLA_MODULE_DTYPES } from '../../src/perf/mla.js';
import { MLA_DECODE_KERNEL_FILE, readRefTable } from '../../src/perf/reference.js';
import { loadPerfSource } from '../../src/perf/index.js';
import { loadSystem } from '../../src/inputs/systems.js';
import { referencePath } from '../../src/util/paths.js';
import type { Dtype } from '../../src/inputs/types.js';

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

const REF = referencePath('aic-silicon', 'kernels', 'gb200', 'mla', 'trtllm', '1.3.0rc10');
if (!existsSync(REF)) console.log(`reference MLA tables not found at ${REF}: skipping the composed-module check`);

describe.skipIf(!existsSync(REF))('composed decode module against the one TRT-LLM measured (GB200)', () => {
  it('matches it at median within 10%, and 80% of shapes within 0.75-1.25x', async () => {
    const table = (file: string) => ({ system: 'gb200', family: 'mla', framework: 'trtllm', version: '1.3.0rc10', file, path: join(REF, file) });
    const kernel = (await readRefTable(table(MLA_DECODE_KERNEL_FILE)))!.rows.filter((r) => r.kv_dtype === 'bfloat16');
    const modules = (await readRefTable(table('mla_generation_module_perf.parquet')))!.rows;
    const perf = await loadPerfSource({ system: loadSystem('gb200_sxm'), backend: 'trtllm', version: '1.3.0rc10' });
    const composed = new Map(composeDecodeModules(kernel, (dtype, m, n, k) => perf.gemm({ dtype: dtype as Dtype, m, n, k }))
      .map((r) => [`${r.dtype}|${r.heads}|${r.batch}|${r.seq}`, r.latency_ms as number]));
    // The module tables count a decode step's KV length one token past the kernel tables' (isl 1 + step).
    const ratios = modules.flatMap((r) => {
      const c = composed.get(`${r.dtype}|${r.heads}|${r.batch}|${(r.seq as number) - 1}`);
      return c === undefined ? [] : [c / (r.latency_ms as number)];
    }).sort((a, b) => a - b);
    expect(ratios.length).toBeGreaterThan(1000);
    const q = (p: number) => ratios[Math.floor(p * (ratios.length - 1))]!;
    expect(q(0.5)).toBeGreaterThan(0.9);
    expect(q(0.5)).toBeLessThan(1.1);
    expect(q(0.1)).toBeGreaterThan(0.7);
    expect(q(0.9)).toBeLessThan(1.25);
  });
});
