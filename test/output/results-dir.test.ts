import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { buildResultsTree, MANIFEST, resultsFolder, writeResultsDir } from '../../src/output/results-dir.js';
import { parseGeneratorConfig } from '../../src/output/generator-config.js';
import { parseExperimentFile } from '../../src/output/exp-config.js';
import { InputError } from '../../src/util/errors.js';
import { fixture } from './fixtures.js';

const ROOT = mkdtempSync(join(tmpdir(), 'inferplan-results-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

const REPORT = '\u001b[1mBest: agg\u001b[0m at 1126.8 tokens/s/gpu\nAll experiments completed in 0.42 seconds\n';
/** The fixture's results folder (gpus8 and the hash of the other inputs). */
const SLUG = basename(resultsFolder(ROOT, fixture().result, fixture().ctx, {}));
const JSON_DOC = { verdict: 'agg', elapsedMs: 412.3, nested: { elapsed_ms: 5, keep: 1 } };

/** Minimal RFC 4180 reader for the tests (quoted fields, doubled quotes). */
function parseCsv(buf: Buffer, _o: { columns: true }): Record<string, string>[] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  const text = buf.toString('utf8');
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') row.push(cell), (cell = '');
    else if (ch === '\n') row.push(cell), rows.push(row), (row = []), (cell = '');
    else cell += ch;
  }
  const [head, ...body] = rows;
  return body.map((r) => Object.fromEntries(head.map((h, i) => [h, r[i]])));
}

/** path -> [mode, sha256] of every file under dir. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const full = join(d, name);
      const st = statSync(full);
      if (st.isDirectory()) walk(full);
      else out[relative(dir, full)] = `${(st.mode & 0o777).toString(8)} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`;
    }
  };
  walk(dir);
  return out;
}

describe('writeResultsDir', () => {
  it('writes the documented layout', async () => {
    expect(SLUG).toMatch(/^Qwen--Qwen3-32B_h200_sxm_vllm_gpus8_isl4000_osl500_ttft600_tpot16.67_[0-9a-f]{6}$/);
    const { result, ctx } = fixture();
    const dir = await writeResultsDir(join(ROOT, 'a'), result, ctx, { reportText: REPORT, json: JSON_DOC });
    expect(dir).toBe(resolve(ROOT, 'a', SLUG));
    const files = Object.keys(tree(dir));
    for (const f of ['summary.json', 'report.txt', 'pareto_frontier.vl.json', 'pareto_frontier.svg', 'pareto_frontier.png']) expect(files).toContain(f);
    for (const mode of ['agg', 'disagg']) {
      for (const f of ['best_config_topn.csv', 'pareto.csv', 'exp_config.yaml', 'top1/generator_config.yaml', 'top1/k8s_deploy.yaml', 'top1/run_0.sh', 'top1/bench.sh']) {
        expect(files).toContain(`${mode}/${f}`);
      }
    }
    expect(files.filter((f) => f.startsWith('agg/top')).map((f) => f.split('/')[1])).toEqual(expect.arrayContaining(['top1', 'top2', 'top3']));
    expect(statSync(join(dir, 'agg/top1/run_0.sh')).mode & 0o111).toBe(0o111);
    expect(statSync(join(dir, 'agg/top1/k8s_deploy.yaml')).mode & 0o111).toBe(0);
    // report without colour or timing; summary without elapsed keys
    expect(readFileSync(join(dir, 'report.txt'), 'utf8')).toBe('Best: agg at 1126.8 tokens/s/gpu\n');
    expect(JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))).toEqual({ verdict: 'agg', nested: { keep: 1 } });
    // no temporary leftovers, no lock; the manifest lists every file written
    expect(readdirSync(join(ROOT, 'a'))).toEqual([SLUG]);
    const manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as { files: string[] };
    expect(manifest.files).toEqual(files.filter((f) => f !== MANIFEST).sort());
  });

  it('writes CSVs with aiconfigurator column names and our additions', async () => {
    const dir = join(ROOT, 'a', SLUG);
    const agg = parseCsv(readFileSync(join(dir, 'agg/best_config_topn.csv')), { columns: true }) as Record<string, string>[];
    expect(agg).toHaveLength(3);
    for (const c of ['tokens/s/gpu', 'tokens/s/user', 'ttft', 'tpot', 'request_latency', 'concurrency', 'bs', 'tp', 'pp', 'parallel', 'replicas', 'gpus/replica', 'total_gpus', 'ttft_low', 'ttft_high', 'calibrated_on', 'mem_per_gpu_gib', 'kv_tokens']) {
      expect(Object.keys(agg[0])).toContain(c);
    }
    expect(Object.keys(agg[0]).at(-1)).toBe('tokens/s/gpu_cluster');
    expect(agg[0].parallel).toBe('tp2pp1');
    // concurrency and bs mean what `estimate --concurrency / --batch-size` take; per replica / rank are named so.
    expect(agg[0]).toMatchObject({ concurrency: '128', 'concurrency/replica': '32', replicas: '4', bs: '32', 'bs/dp_rank': '32' });
    expect(Number(agg[0].ttft_low)).toBeLessThan(Number(agg[0].ttft));
    const dis = parseCsv(readFileSync(join(dir, 'disagg/pareto.csv')), { columns: true }) as Record<string, string>[];
    expect(dis).toHaveLength(2);
    for (const c of ['(p)workers', '(p)bs', '(p)tp', '(p)pp', '(p)parallel', '(d)workers', '(d)bs', '(d)parallel', 'kv_transfer_ms']) expect(Object.keys(dis[0])).toContain(c);
    expect(Number(dis[0].concurrency)).toBe(Number(dis[0]['concurrency/replica']) * Number(dis[0].replicas));
  });

  it('reruns byte for byte, including the chart', async () => {
    const one = fixture();
    const two = fixture();
    const a = await writeResultsDir(join(ROOT, 'r1'), one.result, one.ctx, { reportText: REPORT, json: JSON_DOC });
    const b = await writeResultsDir(join(ROOT, 'r2'), two.result, two.ctx, { reportText: REPORT, json: { ...JSON_DOC, elapsedMs: 999 } });
    const ta = tree(a);
    expect(Object.keys(ta).length).toBeGreaterThan(20);
    expect(tree(b)).toEqual(ta);
  });

  it('refuses to replace an existing directory without force (exit 2); with force replaces only the files it wrote', async () => {
    const { result, ctx } = fixture();
    const save = join(ROOT, 'force');
    const dir = await writeResultsDir(save, result, ctx, { reportText: '', json: {} });
    const before = tree(dir);
    // The user's files: measured runs and notes, and one inside a folder inferplan writes.
    mkdirSync(join(dir, 'bench'));
    writeFileSync(join(dir, 'bench', 'x.json'), '{"aiperf": 1}');
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    writeFileSync(join(dir, 'agg', 'top1', 'measured.csv'), 'a,b');
    const err = await writeResultsDir(save, result, ctx, { reportText: '', json: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/--force/);
    // One of ours changed by hand is replaced; one the new plan lacks is removed (with its empty folder).
    writeFileSync(join(dir, 'report.txt'), 'edited');
    await writeResultsDir(save, result, ctx, { reportText: '', json: {}, force: true });
    expect(readFileSync(join(dir, 'bench', 'x.json'), 'utf8')).toBe('{"aiperf": 1}');
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
    expect(readFileSync(join(dir, 'agg', 'top1', 'measured.csv'), 'utf8')).toBe('a,b');
    expect(readFileSync(join(dir, 'report.txt'), 'utf8')).toBe('\n');
    const after = tree(dir);
    for (const [f, h] of Object.entries(before)) expect(after[f], f).toBe(h);
    expect(readdirSync(save).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('removes the files of the previous plan that the new one lacks, and keeps folders holding a user file', async () => {
    const { result, ctx } = fixture();
    const save = join(ROOT, 'shrink');
    const dir = await writeResultsDir(save, result, ctx, { reportText: '', json: {} });
    expect(existsSync(join(dir, 'agg', 'top3'))).toBe(true);
    writeFileSync(join(dir, 'agg', 'top2', 'mine.txt'), 'x');
    // Same folder, a plan with one top configuration per mode: pretend the manifest also lists files that
    // the new plan does not write by rewriting it with an extra entry.
    const m = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as { files: string[] };
    mkdirSync(join(dir, 'agg', 'top9'));
    writeFileSync(join(dir, 'agg', 'top9', 'k8s_deploy.yaml'), 'old');
    writeFileSync(join(dir, MANIFEST), JSON.stringify({ files: [...m.files, 'agg/top9/k8s_deploy.yaml', '../../escape.txt'] }));
    await writeResultsDir(save, result, ctx, { reportText: '', json: {}, force: true });
    expect(existsSync(join(dir, 'agg', 'top9'))).toBe(false);
    expect(readFileSync(join(dir, 'agg', 'top2', 'mine.txt'), 'utf8')).toBe('x');
    expect((JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as { files: string[] }).files).toEqual(m.files);
  });

  it('fails with exit 2 while another run holds the folder, and takes over the lock of a run that is gone', async () => {
    const { result, ctx } = fixture();
    const save = join(ROOT, 'locked');
    mkdirSync(save, { recursive: true });
    const lock = join(save, `.${SLUG}.lock`);
    writeFileSync(lock, `${process.pid}\n`); // a live process holds it
    const err = await writeResultsDir(save, result, ctx, { reportText: '', json: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/another run \(pid \d+\) is writing/);
    expect((err as Error).message.split('\n')).toHaveLength(1);
    expect(existsSync(join(save, SLUG))).toBe(false);
    writeFileSync(lock, '999999999\n'); // no such process: an interrupted run
    const dir = await writeResultsDir(save, result, ctx, { reportText: '', json: {} });
    expect(existsSync(join(dir, 'summary.json'))).toBe(true);
    expect(existsSync(lock)).toBe(false);
  });

  it('removes temporary folders left by interrupted runs', async () => {
    const { result, ctx } = fixture();
    const save = join(ROOT, 'leftover');
    const ours = join(save, `.${SLUG}.tmp-${process.pid}-0badc0de`);
    const othersGone = join(save, '.other_slug.tmp-999999999-deadbeef');
    const othersLive = join(save, `.other_slug.tmp-${process.pid}-cafef00d`);
    for (const d of [ours, othersGone, othersLive]) {
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, 'summary.json'), '{}');
    }
    await writeResultsDir(save, result, ctx, { reportText: '', json: {} });
    expect(existsSync(ours)).toBe(false);
    expect(existsSync(othersGone)).toBe(false);
    expect(existsSync(othersLive)).toBe(true); // a live run's, into another folder
  });

  it('keeps a hostile model id inside the save directory', async () => {
    const save = join(ROOT, 'jail', 'inner');
    mkdirSync(save, { recursive: true });
    for (const id of ['../../x', '/etc/passwd', '..\\..\\win', '.hidden/../../y']) {
      const { result, ctx } = fixture({ modelId: id, modes: ['agg'] });
      const dir = await writeResultsDir(save, result, ctx, { reportText: '', json: {}, force: true });
      expect(resolve(dir).startsWith(resolve(save) + '/'), `${id} -> ${dir}`).toBe(true);
      expect(relative(save, dir).includes('/')).toBe(false);
    }
    expect(readdirSync(join(ROOT, 'jail'))).toEqual(['inner']);
  });

  it('writes only the modes present, and files other commands read back', async () => {
    const { result, ctx } = fixture({ modes: ['disagg'], backend: 'trtllm' });
    const dir = await writeResultsDir(join(ROOT, 'only'), result, ctx, { reportText: '', json: {}, dynamoVersion: '1.x' });
    expect(existsSync(join(dir, 'agg'))).toBe(false);
    const top = join(dir, 'disagg/top1');
    expect(readdirSync(top).sort()).toEqual(['bench.sh', 'decode_config.yaml', 'generator_config.yaml', 'k8s_bench.yaml', 'k8s_deploy.yaml', 'prefill_config.yaml', 'run_0.sh']);
    const plan = parseGeneratorConfig(readFileSync(join(top, 'generator_config.yaml'), 'utf8'), 'generator_config.yaml');
    expect(plan.mode).toBe('disagg');
    expect(plan.disagg?.decode.workers).toBe(2);
    expect(plan.bench.concurrencies).toContain(Math.round(plan.predicted.concurrency));
    const exp = parseExperimentFile(readFileSync(join(dir, 'disagg/exp_config.yaml'), 'utf8'), 'exp_config.yaml');
    expect(exp.experiments[0]).toMatchObject({ name: 'disagg', mode: 'disagg', backend: 'trtllm', total_gpus: 8, isl: 4000, osl: 500, ttft: 600, tpot: 16.67 });
    // bench.sh writes where validate --plan looks
    expect(readFileSync(join(top, 'bench.sh'), 'utf8')).toContain('--artifact-dir "$out"');
    expect(readFileSync(join(top, 'bench.sh'), 'utf8')).toContain('out="$SCRIPT_DIR/bench/c$c"');
  });

  it('writes a mode with no feasible configuration as CSV headers only', async () => {
    const { result, ctx } = fixture({ backend: 'sglang' });
    result.disagg = { ...result.disagg!, top: [], frontier: [], feasible: 0 };
    const dir = await writeResultsDir(join(ROOT, 'empty'), result, ctx, { reportText: '', json: {} });
    expect(readdirSync(join(dir, 'disagg')).sort()).toEqual(['best_config_topn.csv', 'exp_config.yaml', 'pareto.csv']);
    expect(readFileSync(join(dir, 'disagg/pareto.csv'), 'utf8').trim().split('\n')).toHaveLength(1);
    expect(readFileSync(join(dir, 'pareto_frontier.svg'), 'utf8')).toContain('<svg');
  });

  it('reports a save directory that is a file as bad input', async () => {
    const { result, ctx } = fixture({ modes: ['agg'] });
    const file = join(ROOT, 'a-file');
    writeFileSync(file, 'x');
    const err = await writeResultsDir(file, result, ctx, { reportText: '', json: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/--save-dir .*a-file: cannot create it/);
  });

  it('writes the manifests of the Dynamo release asked for, with the image given, and records the image for exp', async () => {
    const { result, ctx } = fixture({ modes: ['disagg'] });
    const img = 'registry.example.com/dynamo/vllm:my-build';
    const images = { frontend: img, agg: img, prefill: img, decode: img };
    const { files, warnings } = await buildResultsTree(result, ctx, { reportText: '', json: {}, dynamoVersion: '1.4.0', images });
    const text = (path: string) => String(files.find((f) => f.path === path)!.content);
    const dgd = YAML.parse(text('disagg/top1/k8s_deploy.yaml'));
    expect(dgd.apiVersion).toBe('nvidia.com/v1beta1');
    expect(dgd.metadata.annotations['inferplan/image-match']).toMatch(/^given by the user \(--image\)/);
    expect(dgd.spec.components.map((c: any) => [c.podTemplate.spec.containers[0].image, c.runtimeVersionOverride])).toEqual([
      [img, '1.4.0'],
      [img, '1.4.0'],
      [img, '1.4.0'],
    ]);
    expect(YAML.parse(text('disagg/exp_config.yaml')).experiments[0].image).toBe(img);
    // Every component runs the given image: no warning about the runtime image's engine.
    expect(warnings.filter((w) => /runtime image/.test(w))).toEqual([]);
    const plain = await buildResultsTree(result, ctx, { reportText: '', json: {}, dynamoVersion: '1.2.0' });
    expect(plain.warnings).toContain('no runtime image of Dynamo 1.2.0 ships vllm 0.12.0; manifests use nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.0 (vllm 0.20.1)');
    expect(YAML.parse(String(plain.files.find((f) => f.path === 'disagg/exp_config.yaml')!.content)).experiments[0].image).toBeUndefined();
  });

  it('rejects an unknown --dynamo-version before writing anything', async () => {
    const { result, ctx } = fixture();
    await expect(writeResultsDir(join(ROOT, 'dv'), result, ctx, { reportText: '', json: {}, dynamoVersion: '2.5' })).rejects.toThrow(/dynamo-version/);
    expect(existsSync(join(ROOT, 'dv'))).toBe(false);
  });
});
