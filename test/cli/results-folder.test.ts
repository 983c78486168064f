// `configure default --save-dir`: one folder per plan, a user's files kept by --force, one run per folder.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { normalizeArgv } from '../../src/cli/argv.js';
import { registerDefault } from '../../src/cli/commands/default.js';
import { dataPath } from '../../src/util/paths.js';
import { runInProcess } from '../modes/cli.js';

const TABLES = existsSync(dataPath('perf', 'h200_sxm', 'vllm'));
const ROOT = mkdtempSync(join(tmpdir(), 'inferplan-folder-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

const LINE = '--hf-id Qwen/Qwen3-32B --system h200_sxm --isl 4000 --osl 500 --ttft 600 --tpot 16.67 --serving-mode agg --top-n 2';
const configure = (extra: string) => runInProcess([registerDefault], normalizeArgv(['default', ...`${LINE} ${extra}`.split(/\s+/).filter(Boolean)]));
const folders = (save: string) => readdirSync(save).filter((n) => !n.startsWith('.')).sort();

describe.skipIf(!TABLES)('results folders of configure default', () => {
  it('two runs differing only in --total-gpus write two folders', async () => {
    const save = join(ROOT, 'gpus');
    expect((await configure(`--total-gpus 4 --save-dir ${save}`)).code).toBe(0);
    expect((await configure(`--total-gpus 8 --save-dir ${save}`)).code).toBe(0);
    const names = folders(save);
    expect(names).toHaveLength(2);
    expect(names.some((n) => n.includes('_gpus4_'))).toBe(true);
    expect(names.some((n) => n.includes('_gpus8_'))).toBe(true);
  });

  it('--force keeps bench/x.json and notes.txt, replaces the files it wrote', async () => {
    const save = join(ROOT, 'force');
    expect((await configure(`--total-gpus 8 --save-dir ${save}`)).code).toBe(0);
    const dir = join(save, folders(save)[0]!);
    mkdirSync(join(dir, 'bench'));
    writeFileSync(join(dir, 'bench', 'x.json'), '{"requests": 100}');
    writeFileSync(join(dir, 'notes.txt'), 'booked 8 GPUs');
    writeFileSync(join(dir, 'report.txt'), 'edited by hand');
    const again = await configure(`--total-gpus 8 --save-dir ${save}`);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exists; pass --force/);
    expect((await configure(`--total-gpus 8 --save-dir ${save} --force`)).code).toBe(0);
    expect(readFileSync(join(dir, 'bench', 'x.json'), 'utf8')).toBe('{"requests": 100}');
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('booked 8 GPUs');
    expect(readFileSync(join(dir, 'report.txt'), 'utf8')).not.toBe('edited by hand');
    expect(readdirSync(save)).toEqual([folders(save)[0]]);
  });

  it('a second run into a folder whose lock is held exits 2 with one line; a leftover .tmp-* is removed', async () => {
    const save = join(ROOT, 'lock');
    expect((await configure(`--total-gpus 8 --save-dir ${save}`)).code).toBe(0);
    const slug = folders(save)[0]!;
    const lock = join(save, `.${slug}.lock`);
    writeFileSync(lock, `${process.pid}\n`); // held by a live process
    const r = await configure(`--total-gpus 8 --save-dir ${save} --force`);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n').filter((l) => l.startsWith('configure: error'))).toEqual([
      expect.stringMatching(/^configure: error: another run \(pid \d+\) is writing .*; wait for it to finish/),
    ]);
    rmSync(lock);
    const tmp = join(save, `.${slug}.tmp-999999999-0123abcd`);
    mkdirSync(tmp);
    writeFileSync(join(tmp, 'summary.json'), '{}');
    expect((await configure(`--total-gpus 8 --save-dir ${save} --force`)).code).toBe(0);
    expect(readdirSync(save)).toEqual([slug]);
  });
});
