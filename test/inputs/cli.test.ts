// The listing commands and the input errors as a user sees them: exit code, one line on stderr, no stack trace.
// Commands run in-process (fast); one spawn checks the real entry point.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerModels } from '../../src/cli/commands/models.js';
import { registerSystems } from '../../src/cli/commands/systems.js';

const ROOT = join(import.meta.dirname, '../..');
const tmp = mkdtempSync(join(tmpdir(), 'inferplan-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let saved: { offline?: string; cache?: string };
beforeEach(() => {
  saved = { offline: process.env.HF_HUB_OFFLINE, cache: process.env.HF_HUB_CACHE };
  process.env.HF_HUB_OFFLINE = '1';
  process.env.HF_HUB_CACHE = join(tmp, 'no-cache');
});
afterEach(() => {
  for (const [k, v] of [['HF_HUB_OFFLINE', saved.offline], ['HF_HUB_CACHE', saved.cache]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  process.exitCode = undefined;
  vi.restoreAllMocks();
});

async function configure(...args: string[]) {
  const program = new Command('configure').exitOverride();
  registerModels(program);
  registerSystems(program);
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((stdout += String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((stderr += String(s)), true));
  process.exitCode = undefined;
  await program.parseAsync(args, { from: 'user' });
  const code = process.exitCode ?? 0;
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

describe('configure models / systems', () => {
  it('models --json lists every bundled model with its parameter count', async () => {
    const r = await configure('models', '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { models: { id: string; paramsB: number; quant: { gemmDtype: string } }[] };
    expect(doc.models.length).toBeGreaterThanOrEqual(35);
    expect(doc.models.find((m) => m.id === 'Qwen/Qwen3-32B')?.paramsB).toBeCloseTo(32.76, 2);
    expect(doc.models.find((m) => m.id === 'openai/gpt-oss-120b')?.quant.gemmDtype).toBe('bfloat16');
  });

  it('models prints a table', async () => {
    const r = await configure('models');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/│ Qwen\/Qwen3-32B +│ qwen3 +│ 32\.76 +│ 64 +│ 64 full +│ 5120 +│ 64\/8 /);
  });

  it('malformed config.json: exit 2, one line, no stack', async () => {
    const dir = join(tmp, 'bad');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), '{"architectures": ["LlamaForCausalLM"],');
    const r = await configure('models', '--hf-id', dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^configure: error: .*bad\/config\.json is not valid JSON/);
  });

  it('unknown architecture: exit 4 naming the supported ones, JSON error document', async () => {
    const dir = join(tmp, 'mamba');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ architectures: ['MambaForCausalLM'], hidden_size: 8 }));
    const r = await configure('models', '--hf-id', dir, '--json');
    expect(r.code).toBe(4);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/architecture MambaForCausalLM is not supported; supported: LlamaForCausalLM/);
    expect(JSON.parse(r.stdout).error.exitCode).toBe(4);
  });

  it('systems --json through the real entry point: systems, backends, versions and defaults', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'systems', '--json'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(0);
    const doc = JSON.parse(r.stdout) as { systems: { name: string; backends: Record<string, { default: string; versions: string[] }> }[] };
    expect(doc.systems.map((s) => s.name)).toEqual(['a100_sxm', 'b200_sxm', 'b300_sxm', 'gb200_sxm', 'gb300', 'h100_sxm', 'h200_sxm', 'l40s']);
    expect(doc.systems.find((s) => s.name === 'h100_sxm')?.backends.vllm?.default).toBe('0.24.0');
    expect(doc.systems.find((s) => s.name === 'gb300')?.backends.trtllm?.versions).toContain('1.3.0rc23');
    // Engine releases only: no Dynamo image tag (0.x TRT-LLM versions) among them.
    for (const s of doc.systems) expect(s.backends.trtllm?.versions.filter((v) => v.startsWith('0.')) ?? [], s.name).toEqual([]);
  });
});
