// Our H200 GEMM tables against GEMMs measured on a real H200 (cuBLAS through torch.mm, bf16), collected by
// `python3 -m collector` into data/measured/. The engines' attention and fp8 kernels differ from torch's
// (paged KV, per-token activation scaling), so only bf16 GEMM is held to the kernel criterion here.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compareTables } from '../../src/perf/compare.js';
import { tableDir } from '../../src/perf/index.js';
import { loadSystem, resolveEngine } from '../../src/inputs/systems.js';
import { dataPath } from '../../src/util/paths.js';

const measured = dataPath('measured', 'h200_sxm', 'torch', '2.11.0');
const gemmOnly = mkdtempSync(join(tmpdir(), 'h200-gemm-'));
for (const f of ['gemm.csv', 'meta.yaml']) copyFileSync(join(measured, f), join(gemmOnly, f));
afterAll(() => rmSync(gemmOnly, { recursive: true, force: true }));

describe('synthesized h200_sxm GEMM against a measured H200', () => {
  it("the default vLLM release's bf16 GEMM is within 10% median / 25% p90 of cuBLAS", () => {
    const { version } = resolveEngine(loadSystem('h200_sxm'), 'vllm');
    const dir = tableDir('h200_sxm', 'vllm', version);
    expect(dir, `no bundled tables for h200_sxm vllm ${version}`).toBeDefined();
    const report = compareTables(gemmOnly, dir!, { interpolate: true, system: 'h200_sxm' });
    const bf16 = report.groups.find((g) => g.op === 'gemm' && g.group === 'bfloat16')!;
    expect(bf16.count).toBeGreaterThan(4000);
    expect(bf16.medianAbsPct).toBeLessThanOrEqual(10);
    expect(bf16.p90AbsPct).toBeLessThanOrEqual(25);
  }, 60_000);
});
