// Sub-tile GEMMs (n or k below one 128-wide tile) are left out of the fit: a kernel's slow path there must not
// raise the tables over the small shapes the engine serves. The data check skips when ../shared is absent.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadSystem } from '../../src/inputs/systems.js';
import { loadPerfSource } from '../../src/perf/index.js';
import { GEMM_TILE, isSubTileGemm } from '../../src/perf/grid.js';
import { listRefTables, readRefTable, REF_FILE_OP } from '../../src/perf/reference.js';
import { referencePath } from '../../src/util/paths.js';

const REF = referencePath('aic-silicon', 'kernels');
if (!existsSync(REF)) console.log(`reference kernel tables not found at ${REF}: skipping the sub-tile GEMM data check`);

describe('sub-tile GEMM shapes', () => {
  it('are those narrower than one tile in n or k, whatever m', () => {
    expect(isSubTileGemm({ m: 1, n: GEMM_TILE, k: GEMM_TILE })).toBe(false);
    expect(isSubTileGemm({ m: 4096, n: 64, k: 4096 })).toBe(true);
    expect(isSubTileGemm({ m: 4096, n: 4096, k: 32 })).toBe(true);
  });

  it.skipIf(!existsSync(REF))('do not raise vLLM 0.24.0 block-FP8 on H100 at decode sizes (its k = 32 / 64 rows run 3x slower)', async () => {
    const t = listRefTables(REF).find((x) => x.system === 'h100_sxm' && x.framework === 'vllm' && x.version === '0.24.0' && REF_FILE_OP[x.file] === 'gemm')!;
    const rows = (await readRefTable(t))!.rows.filter((r) => r.dtype === 'fp8_block' && (r.m as number) <= 16);
    const src = await loadPerfSource({ system: loadSystem('h100_sxm'), backend: 'vllm', version: '0.24.0' });
    const served = rows.filter((r) => !isSubTileGemm(r) && (r.n as number) <= 16384 && (r.k as number) <= 16384);
    const subTile = rows.filter(isSubTileGemm);
    const ratio = (r: Record<string, unknown>): number =>
      src.gemm({ dtype: 'fp8_block', m: r.m as number, n: r.n as number, k: r.k as number }) / (r.latency_ms as number);
    const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1]!;
    expect(median(subTile.map((r) => r.latency_ms as number)) / median(served.map((r) => r.latency_ms as number))).toBeGreaterThan(2);
    // With the sub-tile rows in the fit these were priced 1.8x their measurement.
    expect(median(served.map(ratio))).toBeGreaterThan(0.85);
    expect(median(served.map(ratio))).toBeLessThan(1.15);
  });
});
