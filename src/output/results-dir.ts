// The results directory: DIR/<slug>/ with the summary, the report, the chart and, per mode, the CSVs,
// the experiment file and one deployable bundle per top configuration. Built in memory, written to a
// temporary sibling and renamed into place, so readers never see half a directory; `--force` replaces
// only the files listed in the folder's manifest.
import { existsSync } from 'node:fs';
import { chmod, mkdir, open, readdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { EngineContext } from '../engine/types.js';
import type { Mode, SearchResult } from '../search/types.js';
import { InputError, UnsupportedError } from '../util/errors.js';
import { rethrowWriteError } from '../util/files.js';
import { renderParetoChart } from './chart.js';
import { buildCandidatesCsv } from './csv.js';
import { buildExpConfig } from './exp-config.js';
import { buildGeneratorConfig } from './generator-config.js';
import { parseDynamoVersion } from './images.js';
import { buildDeployManifest, buildEngineConfigs } from './k8s.js';
import { PlannerHandoff } from './planner-bundle.js';
import { buildBenchJob } from './k8s-bench.js';
import { buildLlmdValues, llmdRefusal, type Target } from './llmd.js';
import type { ClusterOptions } from './cluster.js';
import { insideDir, resultsSlug } from './naming.js';
import { derivePlan, imageOf, type ImageOverrides, type PlanInput } from './plan.js';
import { workerCommand } from './engine-args.js';
import { buildBenchScript, buildRunScripts } from './scripts.js';

export interface ResultsDirOptions {
  force?: boolean;
  /** --dynamo-version: the Dynamo release (or line) of the manifests and scripts; default: the newest release shipping the engine. */
  dynamoVersion?: string;
  /** Images given by the user (--image), by component. */
  images?: ImageOverrides;
  /** --planner: disaggregated candidates get the SLA planner, its profiles and their plots (src/output/planner-bundle.ts). */
  planner?: boolean;
  /** Namespace, secrets, model cache and model names of the manifests (--namespace, ...). */
  cluster?: ClusterOptions;
  /** --target: Dynamo manifests (default) or llm-d model service Helm values. */
  target?: Target;
  /** The console report; colour codes and the timing line are removed. */
  reportText: string;
  /** The --json document, written as summary.json (timing keys removed). */
  json: unknown;
  /** Command inputs that change the plan but are not in the search result (e.g. strictSla), folded into the folder name. */
  variant?: Record<string, unknown>;
}

export interface TreeFile {
  /** Path relative to the slug directory, '/'-separated. */
  path: string;
  content: string | Buffer;
  executable: boolean;
}

const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;
const TIMING_LINE = /\b(completed|finished|took|elapsed)\b.*\d\s*(ms|s|sec|seconds)\b/i;

/** Drop colour codes and the line that reports how long the run took. */
export function cleanReport(text: string): string {
  const lines = text.replace(ANSI, '').replace(/\r\n/g, '\n').split('\n').filter((l) => !TIMING_LINE.test(l));
  return lines.join('\n').replace(/\n*$/, '\n');
}

/** Remove run-time measurements (any key starting with "elapsed") so the file is the same on every run. */
export function stripTiming(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripTiming);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (/^elapsed/i.test(k)) continue;
      out[k] = stripTiming(v);
    }
    return out;
  }
  return value;
}

/** Every file of the results directory, in a fixed order. Pure apart from the chart rendering. */
export async function buildResultsTree(result: SearchResult, ctx: EngineContext, opts: ResultsDirOptions): Promise<{ files: TreeFile[]; warnings: string[] }> {
  parseDynamoVersion(opts.dynamoVersion);
  // The model service runs vLLM only: refuse the whole run before writing anything for another engine.
  if (opts.target === 'llm-d' && result.inputs.backend !== 'vllm') {
    throw new UnsupportedError(`--target llm-d deploys vLLM (the model service runs vllm serve), not ${result.inputs.backend}; accepted: --backend vllm, or --target dynamo`);
  }
  const files: TreeFile[] = [];
  const warnings = new Set<string>();
  const add = (path: string, content: string | Buffer, executable = false): void => {
    files.push({ path, content, executable });
  };
  add('summary.json', JSON.stringify(stripTiming(opts.json), null, 2) + '\n');
  add('report.txt', cleanReport(opts.reportText));
  const chart = await renderParetoChart(result);
  add('pareto_frontier.vl.json', JSON.stringify(chart.spec, null, 2) + '\n');
  add('pareto_frontier.svg', chart.svg.endsWith('\n') ? chart.svg : chart.svg + '\n');
  add('pareto_frontier.png', chart.png);
  const modes: Mode[] = (['agg', 'disagg'] as const).filter((m) => result[m] !== undefined);
  for (const mode of modes) {
    const r = result[mode]!;
    const top = r.top.slice(0, Math.max(1, result.inputs.topN));
    add(`${mode}/best_config_topn.csv`, buildCandidatesCsv(mode, top, result.inputs, ctx));
    add(`${mode}/pareto.csv`, buildCandidatesCsv(mode, r.frontier, result.inputs, ctx));
    add(`${mode}/exp_config.yaml`, buildExpConfig(result.inputs, mode, ctx, opts.images, opts.cluster));
    const handoff = new PlannerHandoff(opts.planner === true);
    top.forEach((candidate, i) => {
      const dir = `${mode}/top${i + 1}`;
      const p: PlanInput = { inputs: result.inputs, ctx, candidate, dynamoVersion: opts.dynamoVersion, images: opts.images, cluster: opts.cluster };
      handoff.attach(dir, p, warnings);
      add(`${dir}/generator_config.yaml`, buildGeneratorConfig(p));
      if (opts.target === 'llm-d') {
        const refusal = llmdRefusal(derivePlan(p));
        if (refusal === undefined) add(`${dir}/llmd_values.yaml`, buildLlmdValues(p));
        else warnings.add(`${dir}: no llmd_values.yaml: ${refusal.replace(/^--target llm-d:? ?/, '')}`);
      } else {
        add(`${dir}/k8s_deploy.yaml`, buildDeployManifest(p));
        add(`${dir}/k8s_bench.yaml`, buildBenchJob(p));
      }
      for (const s of buildRunScripts(p)) add(`${dir}/${s.name}`, s.content, true);
      add(`${dir}/bench.sh`, buildBenchScript(p), true);
      for (const e of buildEngineConfigs(p)) add(`${dir}/${e.name}`, e.content);
      const plan = derivePlan(p);
      const runsRuntimeImage = ['frontend' as const, ...plan.groups.map((g) => g.role)].some((c) => imageOf(plan, c) === plan.image.image);
      if (plan.image.match !== 'exact' && runsRuntimeImage) {
        const uses = `manifests use ${plan.image.image} (${plan.backend} ${plan.image.shipsVersion})`;
        warnings.add(
          plan.image.requested
            ? `no runtime image of Dynamo ${plan.image.requested} ships ${plan.backend} ${plan.version}; ${uses}`
            : `no Dynamo runtime image ships ${plan.backend} ${plan.version}; ${uses}`,
        );
      }
      for (const g of plan.groups) for (const n of workerCommand(plan, g).notes) warnings.add(n);
      if (new Set(plan.groups.map((g) => g.system.name)).size > 1) {
        warnings.add(`prefill and decode run on different GPU systems; add a nodeSelector per worker service in ${mode}/top*/k8s_deploy.yaml (see the inferplan/gpu-system annotations)`);
      }
    });
    for (const f of await handoff.files()) add(f.path, f.content);
  }
  return { files, warnings: [...warnings] };
}

/** The manifest of the files inferplan wrote in a results folder; `--force` replaces only these. */
export const MANIFEST = '.inferplan-files.json';

/**
 * The results folder a run writes under saveDir. The slug encodes every input that changes the plan; the
 * Dynamo release and images change only how it is deployed, so rerunning with another --dynamo-version or
 * --image (and --force) rewrites the same folder.
 */
export function resultsFolder(saveDir: string, result: SearchResult, ctx: EngineContext, opts: Pick<ResultsDirOptions, 'variant'>): string {
  const modes = (['agg', 'disagg'] as const).filter((m) => result[m] !== undefined);
  const slug = resultsSlug(result.inputs, { dtypes: [ctx.gemmDtype, ctx.moeDtype, ctx.kvDtype], modes, ...opts.variant });
  return insideDir(resolve(saveDir), slug);
}

/**
 * Write DIR/<slug>/ and return its path. A new folder appears at once (built in a temporary sibling, then
 * renamed). An existing folder is replaced only with force (else InputError, exit 2), and then only the files
 * inferplan wrote there (listed in MANIFEST) are replaced or removed: anything else (a bench/ folder of
 * measured runs, notes) is kept. One run at a time per folder: a second run while `.<slug>.lock` is held fails
 * (exit 2). Temporary folders left by interrupted runs are removed. Nothing is written outside saveDir.
 */
export async function writeResultsDir(saveDir: string, result: SearchResult, ctx: EngineContext, opts: ResultsDirOptions): Promise<string> {
  const target = resultsFolder(saveDir, result, ctx, opts);
  const root = dirname(target);
  const slug = basename(target);
  if (existsSync(target) && !opts.force) {
    throw new InputError(`${target} already exists; pass --force to replace the files inferplan wrote there`);
  }
  const { files, warnings } = await buildResultsTree(result, ctx, opts);
  try {
    await mkdir(root, { recursive: true });
  } catch (e) {
    throw new InputError(`--save-dir ${root}: cannot create it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const release = await acquireLock(root, slug, target).catch((e: unknown) => rethrowWriteError(e, `--save-dir ${root}: cannot write results`));
  try {
    await removeStaleTemporaries(root, slug);
    if (existsSync(target) && !opts.force) {
      throw new InputError(`${target} already exists; pass --force to replace the files inferplan wrote there`);
    }
    await writeTree(root, slug, target, files);
  } catch (e) {
    // A directory the user cannot write to (or a full disk) is bad input, not an internal error.
    rethrowWriteError(e, `--save-dir ${root}: cannot write results`);
  } finally {
    await release();
  }
  for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
  return target;
}

async function writeTree(root: string, slug: string, target: string, files: TreeFile[]): Promise<void> {
  const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const tmp = insideDir(root, `.${slug}.tmp-${tag}`);
  const paths = files.map((f) => f.path);
  try {
    for (const f of files) await writeOne(tmp, f.path, f.content, f.executable);
    if (!existsSync(target)) {
      await writeOne(tmp, MANIFEST, manifestText(paths), false);
      await rename(tmp, target);
      return;
    }
    // Replace in place: first record every file that may be ours (old and new), so an interrupted run
    // leaves a manifest that still names them; then remove the old files the new plan lacks, move the new
    // ones in, and write the final manifest.
    const old = await readManifest(target);
    const keep = new Set(paths);
    await writeOne(target, MANIFEST, manifestText([...new Set([...old, ...paths])]), false);
    for (const p of old) if (!keep.has(p)) await removeOurs(target, p);
    for (const p of paths) {
      const dest = insideDir(target, p);
      await mkdir(dirname(dest), { recursive: true });
      await rename(insideDir(tmp, p), dest);
    }
    await writeOne(target, MANIFEST, manifestText(paths), false);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

async function writeOne(dir: string, path: string, content: string | Buffer, executable: boolean): Promise<void> {
  const full = insideDir(dir, path);
  await mkdir(dirname(full), { recursive: true });
  await writeFile(full, content);
  await chmod(full, executable ? 0o755 : 0o644);
}

function manifestText(paths: string[]): string {
  return JSON.stringify({ note: 'files written by inferplan; --force replaces these and keeps everything else', files: [...paths].sort() }, null, 2) + '\n';
}

/** The paths the manifest lists (none when there is no manifest: a folder of an older release keeps every file it has). */
async function readManifest(target: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(join(target, MANIFEST), 'utf8');
  } catch {
    return [];
  }
  try {
    const doc = JSON.parse(text) as { files?: unknown };
    return Array.isArray(doc.files) ? doc.files.filter((p): p is string => typeof p === 'string' && p !== '' && !p.includes('\0')) : [];
  } catch {
    throw new InputError(`${join(target, MANIFEST)} is not valid JSON; fix or delete it to let --force know which files inferplan wrote`);
  }
}

/** Remove one file we wrote, then its parent folders up to the results folder while they are empty. */
async function removeOurs(target: string, path: string): Promise<void> {
  let full: string;
  try {
    full = insideDir(target, path);
  } catch {
    return; // a manifest entry pointing outside the folder is ignored, never followed
  }
  await rm(full, { force: true });
  for (let dir = dirname(full); dir !== target && dir.startsWith(target + sep); dir = dirname(dir)) {
    try {
      await rmdir(dir);
    } catch {
      break; // not empty: holds a file of the user's
    }
  }
}

/**
 * Take `.<slug>.lock` in saveDir (exclusive create). A lock whose process is gone (an interrupted run) is
 * taken over; a live one fails with InputError (exit 2) rather than waiting: a CI job should not hang.
 */
async function acquireLock(root: string, slug: string, target: string): Promise<() => Promise<void>> {
  const lock = insideDir(root, `.${slug}.lock`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await open(lock, 'wx');
      await fh.writeFile(`${process.pid}\n`);
      await fh.close();
      return async () => {
        await rm(lock, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number.parseInt(await readFile(lock, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
        throw new InputError(`another run (pid ${pid}) is writing ${target}; wait for it to finish (or delete ${lock} if no run is)`);
      }
      await rm(lock, { force: true });
    }
  }
  throw new InputError(`cannot take the lock ${lock}; another run is writing ${target}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const TEMPORARY = /^\.(.+)\.(tmp|old)-(\d+)-[0-9a-f]+$/;

/**
 * Remove `.<slug>.tmp-*` / `.old-*` folders of interrupted runs: this folder's (we hold its lock), and
 * other folders' whose process is gone.
 */
async function removeStaleTemporaries(root: string, slug: string): Promise<void> {
  for (const name of await readdir(root).catch(() => [] as string[])) {
    const m = TEMPORARY.exec(name);
    if (!m) continue;
    if (m[1] === slug || !isAlive(Number(m[3]))) await rm(insideDir(root, name), { recursive: true, force: true });
  }
}
