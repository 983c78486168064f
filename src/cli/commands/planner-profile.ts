// `configure planner-profile`: the SLA planner's profiles of one disaggregated layout given by flags (the
// prefill and decode pools, as `estimate --mode disagg` takes them), and the DGD that deploys it with the planner.
import type { Command } from 'commander';
import { gpuCount, log, positiveInt, printJson, runAction } from '../common.js';
import {
  addGlobalOptions,
  addModelSystemOptions,
  addSlaOptions,
  addWorkloadOptions,
  dynamoVersionParser,
  DYNAMO_VERSION_HELP,
  readCommonInputs,
  slaOf,
} from '../options.js';
import { loadEngineContext } from '../context.js';
import { LAYOUT_FLAGS, layoutFlagParser, poolConfig } from './estimate.js';
import { estimateDisagg, isRefusal, type DisaggConfig, type EngineContext } from '../../engine/index.js';
import { layoutName } from '../../search/candidates.js';
import { calibrationText } from '../../search/search.js';
import type { RankedCandidate, SearchInputs } from '../../search/types.js';
import type { Sla } from '../../inputs/types.js';
import { InputError, UnsupportedError } from '../../util/errors.js';
import type { ProfileGrid } from '../../output/planner-profile.js';

/** Most points of a profile sweep: the decode sweep prices points x points steps (1000 take about 10 s). */
export const MAX_GRID_POINTS = 1000;

/** --prefill-points / --decode-points: the profiler's interpolation granularities. */
export function addGridOptions(cmd: Command): Command {
  return cmd
    .option('--prefill-points <n>', `input lengths of the prefill sweep (default 16, at most ${MAX_GRID_POINTS})`, positiveInt('--prefill-points', MAX_GRID_POINTS))
    .option('--decode-points <n>', `context lengths, and batch sizes per context, of the decode sweep (default 6, at most ${MAX_GRID_POINTS})`, positiveInt('--decode-points', MAX_GRID_POINTS));
}

export function gridOf(o: Record<string, unknown>): Partial<ProfileGrid> {
  const grid: Partial<ProfileGrid> = {};
  if (o.prefillPoints !== undefined) grid.prefillPoints = Math.max(3, o.prefillPoints as number);
  if (o.decodePoints !== undefined) grid.decodePoints = o.decodePoints as number;
  return grid;
}

/** The search inputs a plan of one given layout stands on (what a search would have recorded). */
export function searchInputsOf(ctx: EngineContext, totalGpus: number, sla: Sla): SearchInputs {
  return {
    model: ctx.model.id,
    system: ctx.system.name,
    decodeSystem: ctx.decodeSystem?.name,
    backend: ctx.backend,
    version: ctx.version,
    totalGpus,
    workload: ctx.workload,
    sla,
    calibratedOn: calibrationText(ctx),
    topN: 1,
  };
}

/** One xPyD unit of the given pools, priced by the engine, as the candidate the output builders take. */
export function unitCandidate(ctx: EngineContext, config: DisaggConfig, concurrency?: number): RankedCandidate {
  const est = estimateDisagg(ctx, config, { concurrency });
  if (isRefusal(est)) throw new UnsupportedError(`${est.constraint === 'memory' ? 'does not fit' : 'not runnable'}: ${est.reason}`, est);
  const moe = ctx.model.moe !== undefined;
  return {
    estimate: est,
    parallel: `p:${layoutName(config.prefill, moe)}x${config.prefill.workers} d:${layoutName(config.decode, moe)}x${config.decode.workers}`,
    gpusUsed: est.metrics.gpus,
    clusterTokPerSPerGpu: est.metrics.tokPerSPerGpu,
    replicas: 1,
  };
}

export function registerPlannerProfile(program: Command): void {
  const cmd = program
    .command('planner-profile')
    .description("write Dynamo SLA planner profiles (prefill and decode curves) of one disaggregated layout, and its DGD with the Planner");
  addModelSystemOptions(cmd);
  addWorkloadOptions(cmd);
  addSlaOptions(cmd);
  for (const f of LAYOUT_FLAGS) {
    cmd.option(`--prefill-${f} <n>`, `prefill pool: ${f.replace(/-/g, ' ')}`, layoutFlagParser(`--prefill-${f}`));
    cmd.option(`--decode-${f} <n>`, `decode pool: ${f.replace(/-/g, ' ')}`, layoutFlagParser(`--decode-${f}`));
  }
  cmd
    .option('--prefill-workers <n>', 'prefill workers (default 1)', gpuCount('--prefill-workers'))
    .option('--decode-workers <n>', 'decode workers (default 1)', gpuCount('--decode-workers'))
    .option('--concurrency <n>', 'clients the deployment starts at (default: decode batch size x decode workers)', positiveInt('--concurrency'))
    .option('--total-gpus <n>', "GPUs the planner may scale up to (default: the larger of the layout's GPUs and one node)", gpuCount('--total-gpus'))
    .requiredOption('--out <dir>', 'write the files into this directory')
    .option('--force', 'write into a directory that already holds files')
    .option('--dynamo-version <v>', DYNAMO_VERSION_HELP, dynamoVersionParser);
  addGridOptions(cmd);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
Files: k8s_deploy.yaml (ConfigMap + DGD with the Planner), planner_profile_configmap.yaml, planner/ (prefill_raw_data.json,
decode_raw_data.json, the profiler's NPZ files, mocker_perf_data.npz, prefill_profile.png, decode_profile.png).
Exit codes: 0 written; 2 bad input; 4 the layout does not fit or the engine cannot run it.

Example:
  configure planner-profile --hf-id Qwen/Qwen3-32B --system h200_sxm --backend vllm --isl 4000 --osl 500 \\
      --ttft 600 --tpot 16.67 --prefill-tp 4 --decode-tp 4 --out planner-qwen3`,
  );
  cmd.action(async (o: Record<string, unknown>) =>
    runAction(o, async () => {
      const inputs = readCommonInputs(o);
      const ctx = await loadEngineContext(inputs);
      const config: DisaggConfig = { prefill: poolConfig(o, 'prefill', ctx, inputs.isl), decode: poolConfig(o, 'decode', ctx, inputs.isl) };
      const candidate = unitCandidate(ctx, config, o.concurrency as number | undefined);
      const totalGpus = (o.totalGpus as number | undefined) ?? Math.max(candidate.gpusUsed, ctx.system.gpusPerNode);
      if (totalGpus < candidate.gpusUsed) throw new InputError(`--total-gpus ${totalGpus} is smaller than the layout's ${candidate.gpusUsed} GPUs`);
      const { plannerSettingsFor, writeHandoff } = await import('../../output/planner-bundle.js');
      const searchInputs = searchInputsOf(ctx, totalGpus, slaOf(inputs));
      const settings = plannerSettingsFor(searchInputs, ctx, candidate, { grid: gridOf(o) });
      if (typeof settings === 'string') throw new UnsupportedError(settings);
      const p = { inputs: searchInputs, ctx, candidate, dynamoVersion: o.dynamoVersion as string | undefined, planner: settings };
      const written = await writeHandoff('--out', o.out as string, p, Boolean(o.force));
      for (const n of settings.profile.notes) log(`note: ${n}`);
      const doc = { out: written.dir, files: written.files, parallel: candidate.parallel, prefillGpus: settings.profile.prefillGpus, decodeGpus: settings.profile.decodeGpus, maxKvTokens: settings.profile.decode.max_kv_tokens, notes: settings.profile.notes };
      if (o.json) printJson(doc);
      else process.stdout.write(`planner profiles of ${candidate.parallel} written to ${written.dir} (${written.files.length} files)\n`);
    }),
  );
}
