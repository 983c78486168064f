// aiconfigurator v0.7-v0.11 spellings of `cli default` run unchanged (docs/default.md lists the mappings).
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FLAG_ALIASES, normalizeArgv } from '../../src/cli/argv.js';
import { registerDefault, servingModeParser } from '../../src/cli/commands/default.js';
import { dataPath } from '../../src/util/paths.js';
import { runInProcess } from '../modes/cli.js';

const TABLES = ['vllm', 'sglang', 'trtllm'].every((b) => existsSync(dataPath('perf', 'h200_sxm', b)));
const ROOT = mkdtempSync(join(tmpdir(), 'inferplan-aic-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

const configure = (line: string) => runInProcess([registerDefault], normalizeArgv(line.split(/\s+/).filter(Boolean)));

/** aiconfigurator v0.11 README: `aiconfigurator cli default --model Qwen/Qwen3-32B ...`, with `aiconfigurator cli` replaced by `configure`. */
const README = 'default --model-path Qwen/Qwen3-32B --system h200_sxm --total-gpus 8 --isl 4000 --osl 500 --ttft 600 --tpot 16.67';

describe('normalizeArgv (aiconfigurator v0.7+ spellings)', () => {
  it('maps --model-path, --model and --perf-db-version to ours, with = forms and v0.6 underscores', () => {
    expect(normalizeArgv(['cli', 'default', '--model-path', 'Qwen/Qwen3-32B', '--model=x', '--perf_db_version', '0.24.0', '--total_gpus=8'])).toEqual([
      'default', '--hf-id', 'Qwen/Qwen3-32B', '--hf-id=x', '--backend-version', '0.24.0', '--total-gpus=8',
    ]);
    expect(normalizeArgv(['default', '--save-dir', 'model-path', '--model-paths'])).toEqual(['default', '--save-dir', 'model-path', '--model-paths']);
    expect(Object.keys(FLAG_ALIASES)).toEqual(['--model-path', '--model', '--perf-db-version']);
  });

  it('reads --serving-mode as aiconfigurator does, refusing AFD (exit 4) and unknown modes (exit 2)', () => {
    expect(servingModeParser('agg')).toEqual(['agg']);
    expect(servingModeParser('disagg')).toEqual(['disagg']);
    expect(servingModeParser('both')).toEqual(['agg', 'disagg']);
    expect(servingModeParser('auto')).toEqual(['agg', 'disagg']);
    expect(() => servingModeParser('afd')).toThrow(expect.objectContaining({ exitCode: 4 }));
    expect(() => servingModeParser('all')).toThrow(/AFD\) is not modelled here/);
    expect(() => servingModeParser('static')).toThrow(expect.objectContaining({ exitCode: 2 }));
  });
});

describe.skipIf(!TABLES)('configure default with aiconfigurator v0.11 flags', () => {
  it('runs the aiconfigurator README line (--model-path, and --model) with exit 0', async () => {
    const r = await configure(README);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^configure default --hf-id Qwen\/Qwen3-32B --system h200_sxm --backend vllm/);
    const m = await configure(`${README.replace('--model-path', '--model')} --serving-mode agg --json`);
    expect(m.code, m.stderr).toBe(0);
    const doc = JSON.parse(m.stdout) as Record<string, unknown>;
    expect(doc.agg).toBeDefined();
    expect(doc.disagg ?? undefined).toBeUndefined();
  });

  it('--backend auto searches every engine of the system and reports the best one', async () => {
    const r = await configure(`${README} --backend auto --serving-mode agg --json`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/--backend auto: vllm \S+: [\d.]+ tokens\/s\/gpu; sglang \S+: [\d.]+ tokens\/s\/gpu; trtllm \S+: [\d.]+ tokens\/s\/gpu; reporting (vllm|sglang|trtllm)/);
    const doc = JSON.parse(r.stdout) as { backendAuto: { backend: string; best?: number }[]; inputs?: { backend: string } };
    const best = doc.backendAuto.reduce((a, b) => ((b.best ?? -1) > (a.best ?? -1) ? b : a));
    expect(r.stderr).toContain(`reporting ${best.backend}`);
    const bad = await configure(`${README} --backend auto --backend-version 0.24.0`);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--backend-version names a release of one engine/);
  });

  it('--decode-system plans heterogeneous disagg; --strict-sla keeps the frontier to configurations meeting the SLA', async () => {
    const r = await configure(`${README} --decode-system b200_sxm --serving-mode disagg --strict-sla --json`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/--decode-system b200_sxm .*--serving-mode disagg --strict-sla/);
    const doc = JSON.parse(r.stdout) as { disagg: { frontier: { meetsSla?: boolean }[] } };
    expect(doc.disagg.frontier.length).toBeGreaterThan(0);
    for (const c of doc.disagg.frontier) expect(c.meetsSla).not.toBe(false);
    const loose = JSON.parse((await configure(`${README} --serving-mode disagg --ttft 200 --json`)).stdout || '{}') as { disagg?: { frontier: { meetsSla?: boolean }[] } };
    // Without --strict-sla the frontier may hold configurations that break a target (marked meetsSla false).
    if (loose.disagg) expect(loose.disagg.frontier.length).toBeGreaterThan(0);
  });

  it('refuses --serving-mode afd with exit 4 and a reason', async () => {
    const r = await configure(`${README} --serving-mode afd`);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/AFD\) is not modelled here; accepted: agg, disagg, both/);
    expect(readdirSync(ROOT)).toEqual([]);
  });
});
