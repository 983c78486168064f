// The results directory: DIR/<slug>/ with the summary, the report, the chart and, per mode, the CSVs,
// the experiment file and one deployable bundle per top configuration. Built in memory, written to a
// temporary sibling and renamed into place, so readers never see half a directory.
import { existsSync } from 'node:fs';
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import type { EngineContext } from '../engine/types.js';
import type { Mode, SearchResult } from '../search/types.js';
import { InputError } from '../util/errors.js';
import { renderParetoChart } from './chart.js';
import { buildCandidatesCsv } from './csv.js';
import { buildExpConfig } from './exp-config.js';
import { buildGeneratorConfig } from './generator-config.js';
import { parseDynamoVersion } from './images.js';
import { buildDeployManifest, buildEngineConfigs } from './k8s.js';
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
  /** The console report; colour codes and the timing line are removed. */
  reportText: string;
  /** The --json document, written as summary.json (timing keys removed). */
  json: unknown;
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
    add(`${mode}/exp_config.yaml`, buildExpConfig(result.inputs, mode, ctx, opts.images));
    top.forEach((candidate, i) => {
      const dir = `${mode}/top${i + 1}`;
      const p: PlanInput = { inputs: result.inputs, ctx, candidate, dynamoVersion: opts.dynamoVersion, images: opts.images };
      add(`${dir}/generator_config.yaml`, buildGeneratorConfig(p));
      add(`${dir}/k8s_deploy.yaml`, buildDeployManifest(p));
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
  }
  return { files, warnings: [...warnings] };
}

/**
 * Write DIR/<slug>/ atomically and return its path. An existing directory is replaced only with force
 * (else InputError, exit 2). Nothing is written outside saveDir, whatever the model id.
 */
export async function writeResultsDir(saveDir: string, result: SearchResult, ctx: EngineContext, opts: ResultsDirOptions): Promise<string> {
  const slug = resultsSlug(result.inputs);
  const root = resolve(saveDir);
  const target = insideDir(root, slug);
  if (existsSync(target) && !opts.force) {
    throw new InputError(`${target} already exists; pass --force to replace it`);
  }
  const { files, warnings } = await buildResultsTree(result, ctx, opts);
  try {
    await mkdir(root, { recursive: true });
  } catch (e) {
    throw new InputError(`--save-dir ${root}: cannot create it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const tmp = insideDir(root, `.${slug}.tmp-${tag}`);
  try {
    for (const f of files) {
      const full = insideDir(tmp, f.path);
      await mkdir(dirname(full), { recursive: true });
      await writeFile(full, f.content);
      await chmod(full, f.executable ? 0o755 : 0o644);
    }
    if (existsSync(target)) {
      const old = insideDir(root, `.${slug}.old-${tag}`);
      await rename(target, old);
      await rename(tmp, target);
      await rm(old, { recursive: true, force: true });
    } else {
      await rename(tmp, target);
    }
  } catch (e) {
    await rm(tmp, { recursive: true, force: true });
    const code = (e as NodeJS.ErrnoException).code;
    // A directory the user cannot write to is bad input, not an internal error.
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS' || code === 'ENOSPC') {
      throw new InputError(`--save-dir ${root}: cannot write results (${code})`);
    }
    throw e;
  }
  for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
  return target;
}

