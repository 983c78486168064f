// The family ops against the third-party reference tables; skipped when ../shared is absent.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadSystem } from '../../src/inputs/systems.js';
import { FamilyPricer, familyCalibrationPath, loadFamilyCalibration, serializeFamilyCalibration } from '../../src/perf/families.js';
import { fitPart, fitSystemFamilies } from '../../src/perf/families-fit.js';
import { readFamilyTable, sparseKindOf } from '../../src/perf/families-reference.js';
import { loadPerfSource } from '../../src/perf/index.js';
import { listRefTables } from '../../src/perf/reference.js';
import { peaksOf } from '../../src/perf/sol.js';
import { referencePath } from '../../src/util/paths.js';

const REF = referencePath('aic-silicon', 'kernels');
if (!existsSync(REF)) console.log(`reference kernel tables not found at ${REF}: skipping the family reference tests`);

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;

describe.skipIf(!existsSync(REF))('family ops against the reference tables', () => {
  const system = loadSystem('h200_sxm');
  const peaks = peaksOf(system);
  const table = (family: string, framework: string, version: string, file: string) =>
    listRefTables(REF).find((t) => t.system === 'h200_sxm' && t.family === family && t.framework === framework && t.version === version && t.file === file)!;

  it('reads a linear-attention table as its timed parts', async () => {
    const rows = await readFamilyTable(table('linear_attention', 'trtllm', '1.3.0rc20', 'gdn_perf.parquet'));
    const parts = new Set(rows.map((r) => r.part));
    expect([...parts].sort()).toEqual(['gdn.context.conv', 'gdn.context.core', 'gdn.generation.conv', 'gdn.generation.core']);
    expect(rows.every((r) => r.latency > 0 && (r.row.heads as number) > 0)).toBe(true);
  });

  it('maps module tables to kinds and leaves kernels timed alone out', () => {
    expect(sparseKindOf('dsa_context_module_skip_indexer')).toEqual({ kind: 'dsa', phase: 'context', skipIndexer: true });
    expect(sparseKindOf('dsv4_flash_hca_generation_module')?.kind).toBe('dsv4_hca');
    expect(sparseKindOf('msa_generation_module')?.kind).toBe('minimax_msa');
    expect(sparseKindOf('glm5_topk_module')).toBeUndefined();
  });

  it('a fit reproduces the decode rows of a sparse-attention module', async () => {
    const rows = (await readFamilyTable(table('sparse_attention', 'vllm', '0.24.0', 'dsa_generation_module_perf.parquet'))).filter((r) => r.row.dtype === 'fp8_block');
    const model = fitPart('dsa.generation.module', peaks, rows)!;
    const pricer = new FamilyPricer(peaks, 'vllm', '0.24.0', { system: 'h200_sxm', generator: 'test', sources: { 'vllm/0.24.0': { 'dsa.generation.module': model } } });
    expect(median(rows.map((r) => Math.abs(pricer.part(r.part, r.row) / r.latency - 1)))).toBeLessThan(0.1);
  });

  it.skipIf(!loadFamilyCalibration('h200_sxm'))('the shipped calibration prices the engine lookups of a measured release', async () => {
    const src = await loadPerfSource({ system, backend: 'vllm', version: '0.24.0' });
    const rows = (await readFamilyTable(table('msa', 'vllm', '0.24.0', 'msa_generation_module_perf.parquet'))).slice(0, 400);
    const errs = rows.map((r) => Math.abs(src.sparseAttention(r.row as never) / r.latency - 1));
    expect(median(errs)).toBeLessThan(0.1);
  });

  it.skipIf(!loadFamilyCalibration('l40s'))('the shipped calibration is what the fit writes (L40S, the smallest)', async () => {
    const cal = await fitSystemFamilies(REF, 'l40s');
    expect(serializeFamilyCalibration(cal) === readFileSync(familyCalibrationPath('l40s'), 'utf8')).toBe(true);
  }, 120_000);
});
