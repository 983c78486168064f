// The planner hand-off files of one disaggregated candidate, next to its k8s_deploy.yaml:
//   planner_profile_configmap.yaml   the profile ConfigMap alone (k8s_deploy.yaml carries it too)
//   planner/prefill_raw_data.json, planner/decode_raw_data.json      what the ConfigMap holds
//   planner/selected_{prefill,decode}_interpolation/raw_data.npz     the profiler's NPZ layout
//   planner/mocker_perf_data.npz                                     the mocker's --planner-profile-data form
//   planner/prefill_profile.png, planner/decode_profile.png          the curves, to check by eye
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import YAML from 'yaml';
import type { EngineContext } from '../engine/types.js';
import type { RankedCandidate, SearchInputs } from '../search/types.js';
import { escapeControl } from '../util/text.js';
import { clusterOf, deployDocuments, renderDocuments, YAML_OPTIONS } from './k8s.js';
import { InputError } from '../util/errors.js';
import { rethrowWriteError } from '../util/files.js';
import { insideDir } from './naming.js';
import { derivePlan, type PlanInput } from './plan.js';
import { withPlanner, type PlannerSettings } from './planner.js';
import { buildPlannerProfile, profileJsonFiles, profileNpzFiles, type ProfileGrid } from './planner-profile.js';
import { decodePlotSpec, prefillPlotSpec, renderPng } from './planner-plot.js';

/** Why the planner is not added to agg plans (one line for warnings and docs). */
export const AGG_PLANNER_NOTE =
  "the SLA planner scales disaggregated prefill and decode workers; agg plans get no Planner (use Dynamo's load-based autoscaling for them)";

/** The planner settings of a disaggregated candidate: its profiles and the SLA; or why there are none. */
export function plannerSettingsFor(
  inputs: SearchInputs,
  ctx: EngineContext,
  candidate: RankedCandidate,
  opts: { grid?: Partial<ProfileGrid>; maxGpuBudget?: number; overrides?: Record<string, unknown> } = {},
): PlannerSettings | string {
  const est = candidate.estimate;
  if (est.mode !== 'disagg') return AGG_PLANNER_NOTE;
  const profile = buildPlannerProfile(ctx, est.config, { planRunning: est.decodeRunning, grid: opts.grid });
  if (typeof profile === 'string') return `no planner profile for ${candidate.parallel}: ${profile}`;
  return {
    profile,
    ttftMs: inputs.sla.ttftMs,
    itlMs: inputs.sla.tpotMs,
    maxGpuBudget: opts.maxGpuBudget ?? inputs.totalGpus,
    overrides: opts.overrides,
  };
}

/** The documents of k8s_deploy.yaml with the planner added. */
export function manifestWithPlanner(p: PlanInput & { planner: PlannerSettings }): Record<string, unknown>[] {
  const plan = derivePlan(p);
  return withPlanner(deployDocuments(plan, clusterOf(p)), plan, p.planner);
}

/** The hand-off files of a candidate whose PlanInput carries planner settings, paths relative to its folder. */
export async function plannerFiles(
  p: PlanInput & { planner: PlannerSettings },
  docs: Record<string, unknown>[] = manifestWithPlanner(p),
  plots = true,
): Promise<Array<{ path: string; content: string | Buffer }>> {
  const plan = derivePlan(p);
  const configMap = docs.find((d) => d.kind === 'ConfigMap' && String((d.metadata as { name: string }).name).endsWith('-planner-profile'));
  const profile = p.planner.profile;
  const title = `${escapeControl(plan.modelId)} ${plan.parallel}`;
  const json = profileJsonFiles(profile);
  const out: Array<{ path: string; content: string | Buffer }> = [];
  if (configMap) out.push({ path: 'planner_profile_configmap.yaml', content: YAML.stringify(configMap, YAML_OPTIONS) });
  out.push({ path: 'planner/prefill_raw_data.json', content: json['prefill_raw_data.json'] });
  out.push({ path: 'planner/decode_raw_data.json', content: json['decode_raw_data.json'] });
  for (const f of profileNpzFiles(profile)) out.push({ path: `planner/${f.path}`, content: f.content });
  if (plots) {
    out.push({ path: 'planner/prefill_profile.png', content: await renderPng(prefillPlotSpec(profile, title)) });
    out.push({ path: 'planner/decode_profile.png', content: await renderPng(decodePlotSpec(profile, title)) });
  }
  return out;
}

/**
 * --planner in a results directory: attach() gives each disaggregated candidate its planner settings before its
 * manifest is built (agg candidates get a warning instead); files() then renders the hand-off files of them all.
 */
export class PlannerHandoff {
  private readonly pending: Array<{ dir: string; p: PlanInput & { planner: PlannerSettings } }> = [];

  constructor(private readonly enabled: boolean) {}

  attach(dir: string, p: PlanInput, warnings: Set<string>): void {
    if (!this.enabled) return;
    const settings = plannerSettingsFor(p.inputs, p.ctx, p.candidate);
    if (typeof settings === 'string') {
      warnings.add(`--planner: ${settings}`);
      return;
    }
    p.planner = settings;
    this.pending.push({ dir, p: p as PlanInput & { planner: PlannerSettings } });
  }

  async files(): Promise<Array<{ path: string; content: string | Buffer }>> {
    const out: Array<{ path: string; content: string | Buffer }> = [];
    for (const { dir, p } of this.pending) for (const f of await plannerFiles(p)) out.push({ path: `${dir}/${f.path}`, content: f.content });
    return out;
  }
}

/**
 * Write k8s_deploy.yaml (with the planner) and the hand-off files of one candidate into `dir`. A directory that
 * already holds files is refused (InputError, exit 2) unless `force`; everything is built before anything is written.
 */
export async function writeHandoff(
  flag: string,
  dir: string,
  p: PlanInput & { planner: PlannerSettings },
  force: boolean,
  docs: Record<string, unknown>[] = manifestWithPlanner(p),
  plots = true,
): Promise<{ dir: string; files: string[] }> {
  const target = resolve(dir);
  if (existsSync(target)) {
    if (!statSync(target).isDirectory()) throw new InputError(`${flag} ${dir}: is a file, not a directory`);
    if (readdirSync(target).length > 0 && !force) throw new InputError(`${flag} ${dir} already holds files; pass --force to write over them`);
  }
  const files = [{ path: 'k8s_deploy.yaml', content: renderDocuments(docs) as string | Buffer }, ...(await plannerFiles(p, docs, plots))];
  // Every file goes to a temporary folder first (a full disk or a permission fails there, before any file of the
  // target is touched), then moves into place by renames: a new folder at once (the temporary one is its
  // sibling), an existing one file by file (the temporary one is inside it, so only the target need be writable).
  const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const fresh = !existsSync(target);
  const tmp = fresh ? `${target}.tmp-${tag}` : insideDir(target, `.tmp-${tag}`);
  try {
    for (const f of files) {
      const full = insideDir(tmp, f.path);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, f.content);
    }
    if (fresh) renameSync(tmp, target);
    else {
      // A folder of ours that is a file of the user's there: refused before anything moves.
      for (const f of files) {
        for (let d = dirname(insideDir(target, f.path)); d !== target; d = dirname(d)) {
          if (existsSync(d) && !statSync(d).isDirectory()) throw new InputError(`${flag} ${dir}: ${d} is a file, where the hand-off needs a folder`);
        }
      }
      for (const f of files) {
        const full = insideDir(target, f.path);
        mkdirSync(dirname(full), { recursive: true });
        renameSync(insideDir(tmp, f.path), full);
      }
    }
  } catch (e) {
    rethrowWriteError(e, `${flag} ${dir}: cannot write there`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir: target, files: files.map((f) => f.path) };
}
