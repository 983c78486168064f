// The planner commands and flags as users run them (in process): planner-profile writes the hand-off folder of a
// given layout; --planner needs a results directory.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../modes/cli.js';
import { registerPlannerProfile } from '../../src/cli/commands/planner-profile.js';
import { registerDefault } from '../../src/cli/commands/default.js';

const dir = mkdtempSync(join(tmpdir(), 'inferplan-planner-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LAYOUT = ['--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--backend', 'vllm', '--isl', '4000', '--osl', '500', '--ttft', '600', '--tpot', '16.67'];

describe('configure planner-profile', () => {
  it('writes the profiles, the ConfigMap and the DGD with the Planner for the given pools', async () => {
    const out = join(dir, 'p');
    const r = await runInProcess([registerPlannerProfile], ['planner-profile', ...LAYOUT, '--prefill-tp', '2', '--decode-tp', '4', '--decode-workers', '1', '--total-gpus', '16', '--prefill-points', '5', '--dynamo-version', '1.4.0', '--out', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({ prefillGpus: 2, decodeGpus: 4 });
    const prefill = JSON.parse(readFileSync(join(out, 'planner/prefill_raw_data.json'), 'utf8'));
    expect(prefill.prefill_isl).toContain(4000);
    expect(prefill.prefill_isl.length).toBeLessThanOrEqual(6);
    const docs = YAML.parseAllDocuments(readFileSync(join(out, 'k8s_deploy.yaml'), 'utf8')).map((d) => d.toJS());
    const dgd = docs.find((d) => d.kind === 'DynamoGraphDeployment');
    const planner = dgd.spec.components.find((c: { name: string }) => c.name === 'Planner');
    expect(JSON.parse(planner.podTemplate.spec.containers[0].args[1])).toMatchObject({ prefill_engine_num_gpu: 2, decode_engine_num_gpu: 4, max_gpu_budget: 16 });
    expect(existsSync(join(out, 'planner/mocker_perf_data.npz'))).toBe(true);
  }, 60_000);

  it('exits 4 for a layout that does not fit, and 2 for a budget smaller than the layout', async () => {
    const tooSmall = await runInProcess([registerPlannerProfile], ['planner-profile', '--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h100_sxm', '--prefill-tp', '1', '--decode-tp', '1', '--out', join(dir, 'x')]);
    expect(tooSmall.code).toBe(4);
    const budget = await runInProcess([registerPlannerProfile], ['planner-profile', ...LAYOUT, '--prefill-tp', '4', '--decode-tp', '4', '--total-gpus', '4', '--out', join(dir, 'y')]);
    expect(budget.code).toBe(2);
    expect(budget.stderr).toContain('--total-gpus 4 is smaller');
  }, 60_000);

  it('replaces a folder with --force only when every file can go in: nothing of it is touched otherwise', async () => {
    const out = join(dir, 'q');
    const args = ['planner-profile', ...LAYOUT, '--prefill-tp', '2', '--decode-tp', '4', '--prefill-points', '3', '--out', out, '--force'];
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'k8s_deploy.yaml'), 'mine\n');
    writeFileSync(join(out, 'planner'), 'a file where the hand-off needs a folder\n');
    const r = await runInProcess([registerPlannerProfile], args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is a file, where the hand-off needs a folder');
    expect(readFileSync(join(out, 'k8s_deploy.yaml'), 'utf8')).toBe('mine\n');
    expect(readdirSync(out).sort()).toEqual(['k8s_deploy.yaml', 'planner']);
    rmSync(join(out, 'planner'));
    const ok = await runInProcess([registerPlannerProfile], args);
    expect(ok.code, ok.stderr).toBe(0);
    expect(readFileSync(join(out, 'k8s_deploy.yaml'), 'utf8')).toContain('DynamoGraphDeployment');
    expect(readdirSync(out).filter((f) => f.includes('.tmp-'))).toEqual([]);
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
  }, 60_000);
});

describe('--planner', () => {
  it('without --save-dir is a usage error (exit 2)', async () => {
    const r = await runInProcess([registerDefault], ['default', ...LAYOUT, '--total-gpus', '8', '--planner']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--planner writes the planner files into the results directory');
  });
});
