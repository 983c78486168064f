import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runInProcess } from './cli.js';
import { registerSupport } from '../../src/cli/commands/support.js';

const run = (args: string[]) => runInProcess([registerSupport], args);

describe('configure support (end to end)', () => {
  it('an unknown architecture exits 4 and lists the supported ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inferplan-arch-'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ architectures: ['FooForCausalLM'], hidden_size: 1024 }));
    const r = await run(['support', '--hf-id', dir, '--system', 'h200_sxm', '--json']);
    expect(r.code).toBe(4);
    const doc = JSON.parse(r.stdout);
    expect(doc.error.exitCode).toBe(4);
    expect(doc.error.detail.supported).toContain('Qwen3ForCausalLM');
  });

  it('lists every version of one backend; DeepSeek-V3 needs more than one A100 node', async () => {
    const r = await run(['support', '--hf-id', 'deepseek-ai/DeepSeek-V3', '--system', 'a100_sxm', '--backend', 'vllm', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.supported).toBe(true);
    expect(doc.rows.every((x: { backend: string }) => x.backend === 'vllm')).toBe(true);
    expect(doc.rows[0].fit.fitsOneNode).toBe(false);
    expect(doc.rows[0].fit.gpus).toBeGreaterThan(8);
  });

  it('with a budget and SLA runs the search on each version and says whether a layout meets it', async () => {
    const r = await run([
      'support', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--backend', 'sglang', '--backend-version', '0.5.9',
      '--total-gpus', '2', '--isl', '2000', '--osl', '200', '--ttft', '2000', '--tpot', '50',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/sglang\s+0\.5\.9\s+yes\s+tp1pp1 \(1 GPU\)\s+yes\s+yes: (agg|disagg) /);
    expect(r.stdout).toMatch(/a layout meets the SLA: yes/);
  });

  it('an impossible SLA is reported per version, still exit 0 (the model is supported)', async () => {
    const r = await run([
      'support', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--backend', 'vllm', '--backend-version', '0.12.0',
      '--total-gpus', '1', '--ttft', '1', '--tpot', '0.1', '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.slaMet).toBe(false);
    expect(doc.rows[0].sla.met).toBe(false);
  });

  it('rejects an unknown backend (exit 2) and an unsupported version (row says why, exit 4)', async () => {
    expect((await run(['support', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--backend', 'tgi'])).code).toBe(2);
    const r = await run(['support', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--backend', 'vllm', '--backend-version', '9.9.9']);
    expect(r.code).toBe(4);
    expect(r.stdout).toMatch(/no: vllm version "9.9.9" is not supported on h200_sxm/);
  });

  it('--system all checks every bundled system', async () => {
    const r = await run(['support', '--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'all', '--backend', 'vllm', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    const { systemNames } = await import('../../src/inputs/systems.js');
    expect(doc.systems.map((x: { system: string }) => x.system)).toEqual(systemNames());
    // 131 GiB of bf16 weights: two GPUs on H200 (140 GiB), more on 80 GiB parts.
    const h200 = doc.systems.find((x: { system: string }) => x.system === 'h200_sxm');
    expect(h200.rows[0].fit.gpus).toBe(2);
    const h100 = doc.systems.find((x: { system: string }) => x.system === 'h100_sxm');
    expect(h100.rows[0].fit.gpus).toBe(4);
  });
});
