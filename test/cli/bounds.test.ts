// Work is bounded by the inputs: budgets and targets beyond the largest deployment planned are refused up front.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { registerDefault } from '../../src/cli/commands/default.js';
import { registerRecommend } from '../../src/cli/commands/recommend.js';
import { MAX_DEPLOYMENT_GPUS } from '../../src/search/limits.js';
import { runInProcess } from '../modes/cli.js';

const root = mkdtempSync(join(tmpdir(), 'inferplan-bounds-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('bounded work', () => {
  it('recommend refuses a target that needs more GPUs than one deployment planned, writing nothing', async () => {
    const out = join(root, 'rec');
    const r = await runInProcess([registerRecommend], ['recommend', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--target-concurrency', '100000000', '--save-dir', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`--target-concurrency 100000000 needs \\d+ GPUs .*more than the ${MAX_DEPLOYMENT_GPUS} inferplan plans`));
    expect(r.stderr.trim().split('\n').filter((l) => l.startsWith('configure: error'))).toHaveLength(1);
    expect(existsSync(out)).toBe(false);
  }, 60_000);
  it.each([
    [registerDefault, ['default', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--total-gpus', String(MAX_DEPLOYMENT_GPUS + 1)], '--total-gpus'],
    [registerRecommend, ['recommend', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--target-concurrency', '10', '--max-gpus', '1e9'], '--max-gpus'],
  ] as const)('refuses a GPU budget above the largest deployment (%#)', async (register, args, flag) => {
    const r = await runInProcess([register], [...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(flag);
  });
});
