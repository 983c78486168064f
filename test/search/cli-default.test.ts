// `configure default` through commander with the real inference model (in-process), and usage errors
// through the real entry point (a child process).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Command } from 'commander';
import { registerDefault } from '../../src/cli/commands/default.js';
import { dataPath } from '../../src/util/paths.js';

// The in-process cases price real layouts, so they need the bundled performance tables.
const TABLES = ['h200_sxm', 'h100_sxm'].every((s) => existsSync(dataPath('perf', s, 'vllm')));
if (!TABLES) console.log('cli-default: data/perf tables for h200_sxm/h100_sxm vllm are absent; pricing cases skipped');

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((stdout += String(s)), true));
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((stderr += String(s)), true));
  const program = new Command('configure').exitOverride();
  registerDefault(program);
  for (const c of program.commands) c.exitOverride();
  process.exitCode = 0;
  try {
    await program.parseAsync(['default', ...args], { from: 'user' });
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  const code = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { code, stdout, stderr };
}

afterEach(() => {
  process.exitCode = 0;
});

const QWEN = ['--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--total-gpus', '2'];

describe.skipIf(!TABLES)('configure default', () => {
  it('prints one JSON document with verdict, top-N per mode, frontier and evaluated counts', async () => {
    const r = await run([...QWEN, '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.inputs).toMatchObject({ model: 'Qwen/Qwen3-32B', totalGpus: 2, backend: 'vllm', workload: { isl: 4000, osl: 1000, prefix: 0 } });
    expect(doc.verdict.text).toMatch(/^((agg|disagg) wins: |agg and disagg tie)/);
    expect(doc.agg.top.length).toBeGreaterThan(0);
    expect(doc.agg.top[0]).toHaveProperty('bands.ttftMs.low');
    // Which measured runs the bands of each mode come from.
    expect(doc.inputs.bandBasis.agg.ttft).toMatch(/agg runs on .* \(\d+\)$/);
    expect(doc.inputs.bandBasis.disagg.tpot).toMatch(/disagg runs on .* \(\d+\)$/);
    expect(doc.agg.frontier.length).toBeGreaterThan(0);
    expect(doc.evaluated).toBe(doc.agg.evaluated + doc.disagg.evaluated);
    expect(doc.elapsed.searchMs).toBeGreaterThan(0);
    expect(doc.explanation).toBeNull();
    // Effective parameters go to stderr in --json mode.
    expect(r.stderr).toMatch(/--isl 4000 --osl 1000 .*--ttft 2000 --tpot 30/);
  }, 60_000);

  it('exits 3 when the model cannot fit, with the memory explanation in --json', async () => {
    const r = await run(['--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h100_sxm', '--total-gpus', '1', '--json']);
    expect(r.code).toBe(3);
    const doc = JSON.parse(r.stdout);
    expect(doc.error.exitCode).toBe(3);
    const agg = doc.error.detail.modes.find((m: { mode: string }) => m.mode === 'agg');
    expect(agg.removed.memory).toBeGreaterThan(0);
    expect(agg.nearMisses[0].broke).toBe('memory');
  }, 60_000);

  it('exits 3 for an unmeetable TTFT and names it', async () => {
    const r = await run([...QWEN, '--ttft', '1']);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('Nearest misses');
    expect(r.stdout).toMatch(/ttft [\d.]+ ms > 1\.00 ms/);
    expect(r.stderr).toMatch(/configure: error: no configuration on 2 GPUs meets .*removed by ttft/);
  }, 60_000);

  it('exits 3 for an unmeetable TPOT and names it', async () => {
    const r = await run([...QWEN, '--tpot', '0.5', '--json']);
    expect(r.code).toBe(3);
    const doc = JSON.parse(r.stdout);
    for (const m of doc.error.detail.modes) {
      expect(m.removed.tpot).toBeGreaterThan(0);
      for (const n of m.nearMisses) expect(n.broke).toBe('tpot');
    }
  }, 60_000);

  it('--sla-confidence judges targets with a margin, reports each candidate\'s chance and echoes the flag', async () => {
    const plain = JSON.parse((await run([...QWEN, '--tpot', '20', '--json'])).stdout);
    const r = await run([...QWEN, '--tpot', '20', '--sla-confidence', '0.9', '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.inputs.sla).toMatchObject({ tpotMs: 20, confidence: 0.9 });
    expect(r.stderr).toMatch(/--sla-confidence 0\.9/);
    for (const c of doc.agg.top) expect(c.chance.tpot).toBeGreaterThanOrEqual(0.895);
    expect(plain.agg.top[0].chance.tpot).toBeGreaterThanOrEqual(0.495);
    expect(doc.agg.top[0].clusterTokPerSPerGpu).toBeLessThanOrEqual(plain.agg.top[0].clusterTokPerSPerGpu);
  }, 60_000);

  it('--sla-confidence outside (0, 1) is bad input', async () => {
    await expect(run([...QWEN, '--sla-confidence', '1.5'])).rejects.toThrow(/--sla-confidence "1.5" is not a probability; accepted: a number between 0 and 1/);
  });
});

describe('configure default usage errors', () => {
  it('exits 2 for a bad flag value and for an unknown flag', () => {
    const bin = ['--import', 'tsx', 'src/cli/main.ts', 'default'];
    const bad = spawnSync(process.execPath, [...bin, ...QWEN.slice(0, 4), '--total-gpus', 'many'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--total-gpus must be a positive integer/);
    const unknown = spawnSync(process.execPath, [...bin, ...QWEN, '--bogus'], { encoding: 'utf8' });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown option/);
  }, 60_000);
});

// Blackwell Ultra: each backend once per system, each of the three model kinds (dense, MXFP4 MoE, MLA MoE) in turn.
const ULTRA = ['b300_sxm', 'gb300'].every((s) => existsSync(dataPath('perf', s)));
describe.skipIf(!ULTRA)('configure default on Blackwell Ultra', () => {
  const cases = ['b300_sxm', 'gb300'].flatMap((system, i) =>
    (['vllm', 'sglang', 'trtllm'] as const).map((backend, j) => {
      const model = ['Qwen/Qwen3-32B', 'openai/gpt-oss-120b', 'deepseek-ai/DeepSeek-R1'][(i + j) % 3]!;
      return { system, backend, model, gpus: model.includes('DeepSeek') ? '8' : '4' };
    }),
  );
  it.each(cases)('$model on $system with $backend', async ({ system, backend, model, gpus }) => {
    const r = await run(['--hf-id', model, '--system', system, '--backend', backend, '--total-gpus', gpus, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.inputs).toMatchObject({ system, backend });
    expect(doc.verdict.text).toMatch(/^((agg|disagg) wins: |agg and disagg tie)/);
  }, 60_000);
});
