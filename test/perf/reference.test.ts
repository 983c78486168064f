// Checks against the third-party reference kernel tables; skipped when ../shared is absent.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSystem } from '../../src/inputs/systems.js';
import { loadPerfSource } from '../../src/perf/index.js';
import { listRefTables, readRefTable } from '../../src/perf/reference.js';
import { referencePath } from '../../src/util/paths.js';

const REF = referencePath('aic-silicon', 'kernels');
if (!existsSync(REF)) console.log(`reference kernel tables not found at ${REF}: skipping the reference-based perf tests`);

describe.skipIf(!existsSync(REF))('against the reference kernel tables', () => {
  it('an aiconfigurator directory works as --perf-data and returns measured rows', async () => {
    const sys = loadSystem('h200_sxm');
    // Only the all-reduce folder (linked, not copied), so the test reads one small parquet file.
    const dir = mkdtempSync(join(tmpdir(), 'aic-'));
    mkdirSync(join(dir, 'h200_sxm', 'comm', 'vllm'), { recursive: true });
    symlinkSync(join(REF, 'h200_sxm', 'comm', 'vllm', '0.19.0'), join(dir, 'h200_sxm', 'comm', 'vllm', '0.19.0'));
    const src = await loadPerfSource({ system: sys, backend: 'vllm', version: '0.19.0', perfData: dir });
    expect(src.info.fallbackOps).toContain('gemm');
    expect(src.info.kind).toBe('aiconfigurator');
    const t = listRefTables(REF).find((x) => x.system === 'h200_sxm' && x.framework === 'vllm' && x.version === '0.19.0' && x.file === 'custom_allreduce_perf.parquet')!;
    const rows = (await readRefTable(t))!.rows;
    for (const r of rows.slice(0, 20)) {
      const v = src.allReduce({ dtype: 'bfloat16', gpus: r.gpus as number, elements: r.elements as number });
      // Measured rows come back as measured, up to the running maximum that keeps the curve monotone.
      expect(Math.abs(v / (r.latency_ms as number) - 1)).toBeLessThan(0.05);
    }
  });

  it('synthesized GEMM tables track measured H200 vLLM GEMMs (median error under 15% on a sample)', async () => {
    const sys = loadSystem('h200_sxm');
    const src = await loadPerfSource({ system: sys, backend: 'vllm', version: '0.19.0' });
    const t = listRefTables(REF).find((x) => x.system === 'h200_sxm' && x.framework === 'vllm' && x.version === '0.19.0' && x.file === 'gemm_perf.parquet')!;
    const rows = (await readRefTable(t))!.rows.filter((_, i) => i % 37 === 0);
    const errs = rows.map((r) => Math.abs(src.gemm({ dtype: r.dtype as 'bfloat16', m: r.m as number, n: r.n as number, k: r.k as number }) / (r.latency_ms as number) - 1)).sort((a, b) => a - b);
    expect(errs[Math.floor(errs.length / 2)]!).toBeLessThan(0.15);
  });

  it('synthesized MoE tables track measured H200 vLLM rows under each routing (median under 10%, p90 under 25%)', async () => {
    const sys = loadSystem('h200_sxm');
    const src = await loadPerfSource({ system: sys, backend: 'vllm', version: '0.19.0' });
    const t = listRefTables(REF).find((x) => x.system === 'h200_sxm' && x.framework === 'vllm' && x.version === '0.19.0' && x.file === 'moe_perf.parquet')!;
    const rows = (await readRefTable(t))!.rows.filter((r, i) => i % 17 === 0 && r.dtype === 'fp8_block');
    for (const distribution of ['balanced', 'power_law_1.01', 'power_law_1.2']) {
      const errs = rows.filter((r) => r.distribution === distribution).map((r) => Math.abs(src.moe({
        dtype: 'fp8_block', tokens: r.tokens as number, hidden: r.hidden as number, inter: r.inter as number, topk: r.topk as number,
        experts: r.experts as number, moeTp: r.moe_tp as number, moeEp: r.moe_ep as number, distribution,
      }) / (r.latency_ms as number) - 1)).sort((a, b) => a - b);
      expect(errs.length, distribution).toBeGreaterThan(50);
      expect(errs[Math.floor(errs.length / 2)]!, distribution).toBeLessThan(0.1);
      expect(errs[Math.floor(errs.length * 0.9)]!, distribution).toBeLessThan(0.25);
    }
  });
});
