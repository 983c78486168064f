// `configure validate`: predicted vs measured for AIPerf runs of a planned deployment.
// The deployment comes from a plan file (generator_config.yaml) or from the same flags as `estimate` (agg).
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { Command, Option } from 'commander';
import { gpuCount, log, positiveInt, positiveNumber, printJson, runAction } from '../common.js';
import { alignColumns } from '../../util/format.js';
import { escapeControl } from '../../util/text.js';
import { addGlobalOptions, addModelSystemOptions, addWorkloadOptions, readCommonInputs, relaxModelSystem, type CommonInputs } from '../options.js';
import { loadEngineContext } from '../context.js';
import { estimateAgg, estimateDisagg, profileOf } from '../../engine/index.js';
import type { EngineContext } from '../../engine/types.js';
import { InputError } from '../../util/errors.js';
import { AIPERF_METRICS, importAiperfAll, type AiperfMetric, type AiperfRun } from '../../inputs/aiperf.js';
import { loadPlan, planBenchDir, type Plan, type PlanLayout } from '../../validate/plan.js';
import { enginePredictor, type Predictor } from '../../validate/predict.js';
import { profileMismatches } from '../../validate/profile.js';
import { validateRuns, type MeasuredStat, type PointDefaults, type RunComparison, type ValidationReport } from '../../validate/compare.js';

/** Exit code of `validate --fail-over` when an error exceeds the threshold (documented in --help and the README). */
export const FAIL_OVER_EXIT = 3;

export const METRIC_LABELS: Record<AiperfMetric, string> = {
  ttftMs: 'TTFT ms',
  tpotMs: 'TPOT ms',
  requestLatencyMs: 'request latency ms',
  outputTokPerS: 'output tok/s',
  requestsPerS: 'requests/s',
  tokPerSPerUser: 'tok/s/user',
};
const METRIC_FLAGS: Record<string, AiperfMetric> = {
  ttft: 'ttftMs',
  tpot: 'tpotMs',
  itl: 'tpotMs',
  latency: 'requestLatencyMs',
  throughput: 'outputTokPerS',
  rps: 'requestsPerS',
  'tok-per-user': 'tokPerSPerUser',
};

/** What is being validated: the deployment, the engine inputs, and where runs are looked for. */
export interface Target {
  plan?: Plan;
  inputs: CommonInputs;
  layout: PlanLayout;
  defaults: PointDefaults;
  /** The deployment's shape for reports, e.g. "agg tp2 x4 replicas, batch 64". */
  shape: string;
  /** No --batch-size given: each replica runs its share of a run's clients. */
  batchFromConcurrency: boolean;
  /** No --max-num-tokens given: the engine's default token budget. */
  engineTokenBudget: boolean;
}

/** Flags shared by validate and calibrate: runs, plan, or the estimate flags of an agg deployment. */
export function addTargetOptions(cmd: Command): Command {
  cmd
    .option('--aiperf <path...>', 'AIPerf results: artifact directories (searched recursively) or export files (.json, .csv, .jsonl); default: <plan dir>/bench')
    .option('--plan <file>', 'generator_config.yaml of a results directory (or the directory itself)');
  addModelSystemOptions(cmd);
  // With --plan, the model and system come from the plan file.
  relaxModelSystem(cmd);
  addWorkloadOptions(cmd);
  return cmd
    .option('--tp <n>', 'without --plan: tensor parallel size of one replica (agg)', gpuCount('--tp'))
    .option('--pp <n>', 'pipeline parallel size (default 1)', gpuCount('--pp'))
    .option('--dp <n>', 'attention data parallel size (default 1)', gpuCount('--dp'))
    .option('--moe-tp <n>', 'MoE tensor parallel size (default tp*dp/moe-ep)', gpuCount('--moe-tp'))
    .option('--moe-ep <n>', 'MoE expert parallel size (default 1)', gpuCount('--moe-ep'))
    .option('--batch-size <n>', 'max running sequences per replica (default: the concurrency per replica)', positiveInt('--batch-size'))
    .option('--max-num-tokens <n>', 'token budget per step (default: the engine default)', positiveInt('--max-num-tokens'))
    .option('--replicas <n>', 'replicas behind the frontend (default 1)', gpuCount('--replicas'))
    .option('--concurrency <n>', 'concurrency of runs that did not record one', positiveInt('--concurrency'))
    .addOption(new Option('--stat <stat>', 'measured statistic compared with the prediction').choices(['avg', 'p50']).default('avg'));
}

// Flags that describe the deployment; a plan already fixes them.
const LAYOUT_FLAGS: Record<string, string> = {
  hfId: '--hf-id',
  system: '--system',
  backend: '--backend',
  weightDtype: '--weight-dtype',
  kvCacheDtype: '--kv-cache-dtype',
  isl: '--isl',
  osl: '--osl',
  prefix: '--prefix',
  tp: '--tp',
  pp: '--pp',
  dp: '--dp',
  moeTp: '--moe-tp',
  moeEp: '--moe-ep',
  batchSize: '--batch-size',
  maxNumTokens: '--max-num-tokens',
  replicas: '--replicas',
};

function targetFromPlan(plan: Plan, o: Record<string, unknown>): Target {
  const clash = Object.keys(LAYOUT_FLAGS).filter((k) => o[k] !== undefined);
  if (clash.length) {
    throw new InputError(`${clash.map((k) => LAYOUT_FLAGS[k]).join(', ')} cannot be combined with --plan (the plan fixes the deployment and workload)`);
  }
  const common = readCommonInputs({ ...o, hfId: plan.model, system: plan.system, backend: plan.backend, isl: plan.workload.isl, osl: plan.workload.osl, prefix: plan.workload.prefix });
  const inputs: CommonInputs = {
    ...common,
    backendVersion: (o.backendVersion as string | undefined) ?? plan.backendVersion,
    ttft: plan.sla.ttftMs ?? common.ttft,
    tpot: plan.sla.tpotMs ?? common.tpot,
  };
  const l = plan.layout;
  const shape =
    l.mode === 'agg'
      ? `agg tp${l.config.tp}${l.config.pp > 1 ? ` pp${l.config.pp}` : ''}${l.config.dp > 1 ? ` dp${l.config.dp}` : ''} x${l.replicas} replicas, batch ${l.config.batchSize}`
      : `disagg ${l.config.prefill.workers}x prefill tp${l.config.prefill.tp} + ${l.config.decode.workers}x decode tp${l.config.decode.tp}`;
  return {
    plan,
    inputs,
    layout: l,
    defaults: { isl: plan.workload.isl, osl: plan.workload.osl, prefix: plan.workload.prefix, concurrency: (o.concurrency as number | undefined) ?? plan.predictedConcurrency },
    batchFromConcurrency: false,
    engineTokenBudget: false,
    shape,
  };
}

function targetFromFlags(o: Record<string, unknown>): Target {
  if (!o.hfId || !o.system) throw new InputError('give --plan FILE, or --hf-id, --system and --tp for an aggregated deployment');
  if (!o.tp) throw new InputError('without --plan, --tp is required (the deployment to validate, as for `estimate`)');
  const inputs = readCommonInputs(o);
  const tp = o.tp as number;
  const dp = (o.dp as number | undefined) ?? 1;
  const moeEp = (o.moeEp as number | undefined) ?? 1;
  const moeTp = (o.moeTp as number | undefined) ?? (tp * dp) / moeEp;
  if (!Number.isInteger(moeTp) || moeTp * moeEp !== tp * dp) {
    throw new InputError(`--moe-tp x --moe-ep must equal tp x dp (${tp * dp}); got ${moeTp} x ${moeEp}`);
  }
  const replicas = (o.replicas as number | undefined) ?? 1;
  const concurrency = o.concurrency as number | undefined;
  const layout: PlanLayout = {
    mode: 'agg',
    config: {
      tp,
      pp: (o.pp as number | undefined) ?? 1,
      dp,
      moeTp,
      moeEp,
      // Replaced per run by the concurrency per replica unless --batch-size is given.
      batchSize: (o.batchSize as number | undefined) ?? 1,
      // Replaced by the engine's default budget unless --max-num-tokens is given.
      maxNumTokens: (o.maxNumTokens as number | undefined) ?? 8192,
    },
    replicas,
  };
  return {
    inputs,
    layout,
    defaults: { isl: inputs.isl, osl: inputs.osl, prefix: inputs.prefix, concurrency },
    batchFromConcurrency: o.batchSize === undefined,
    engineTokenBudget: o.maxNumTokens === undefined,
    shape: `agg tp${tp} x${replicas} replicas${o.batchSize ? `, batch ${o.batchSize as number}` : ''}`,
  };
}

export function resolveTarget(o: Record<string, unknown>): Target {
  return o.plan ? targetFromPlan(loadPlan(o.plan as string), o) : targetFromFlags(o);
}

/** One line naming the deployment, with the engine version the context resolved. */
export function targetTitle(target: Target, ctx: EngineContext): string {
  return `${escapeControl(target.inputs.hfId)} on ${ctx.system.name}, ${ctx.backend} ${ctx.version}, ${target.shape}`;
}

/** The runs named by --aiperf, or the plan's bench/ folder. */
export function loadRuns(o: Record<string, unknown>, target: Target): AiperfRun[] {
  const paths = o.aiperf as string[] | undefined;
  if (paths && paths.length > 0) return importAiperfAll(paths);
  if (!target.plan) throw new InputError('--aiperf PATH is required without --plan (a plan looks in <plan dir>/bench)');
  const bench = planBenchDir(target.plan);
  if (!existsSync(bench)) {
    throw new InputError(`no AIPerf runs: ${bench} does not exist; run bench.sh beside the plan first, or pass --aiperf PATH`);
  }
  return importAiperfAll([bench]);
}

/** Engine context for the target, with the plan's dtypes applied exactly as planned. */
export async function targetContext(target: Target, strictCalibration = false): Promise<EngineContext> {
  const ctx = await loadEngineContext(target.inputs, { decodeSystem: target.plan?.decodeSystem, strictCalibration });
  const d = target.plan?.dtypes;
  if (!d) return ctx;
  return { ...ctx, gemmDtype: d.gemm ?? ctx.gemmDtype, moeDtype: d.moe ?? d.gemm ?? ctx.moeDtype, kvDtype: d.kv ?? ctx.kvDtype };
}

export function targetPredictor(ctx: EngineContext, target: Target): Predictor {
  let layout = target.layout;
  if (layout.mode === 'agg' && target.engineTokenBudget) {
    layout = { ...layout, config: { ...layout.config, maxNumTokens: profileOf(ctx).maxNumTokens } };
  }
  return enginePredictor({ ...ctx, correction: undefined }, layout, { estimateAgg, estimateDisagg }, {
    batchFromConcurrency: target.batchFromConcurrency,
  });
}

/** Notes about runs that may not match the target: another model, failed requests. */
export function runWarnings(runs: AiperfRun[], target: Target): string[] {
  const out: string[] = [];
  const model = target.inputs.hfId.toLowerCase();
  for (const r of runs) {
    if (r.model && r.model.toLowerCase() !== model && !model.endsWith('/' + r.model.toLowerCase()) && !r.model.toLowerCase().endsWith('/' + model)) {
      out.push(`${r.label}: measured model ${r.model} differs from ${target.inputs.hfId}`);
    }
    if (r.errorCount) out.push(`${r.label}: ${r.errorCount} failed requests in the run`);
  }
  return out;
}

function parseMetrics(v: string | undefined): AiperfMetric[] | undefined {
  if (!v) return undefined;
  return v.split(',').map((s) => {
    const m = METRIC_FLAGS[s.trim().toLowerCase()];
    if (!m) throw new InputError(`--metrics "${s}" is not known; accepted: ${Object.keys(METRIC_FLAGS).join(', ')}`);
    return m;
  });
}

// ---------- console output ----------

export function fmtNum(v: number | null): string {
  if (v === null) return '-';
  const a = Math.abs(v);
  return a >= 1000 ? v.toFixed(0) : a >= 100 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toFixed(3);
}

export function fmtPct(v: number | null): string {
  return v === null ? '-' : `${v >= 0 ? '+' : ''}${v.toFixed(1)}%`;
}

/** Rows as aligned text columns: the first left-aligned, the others right-aligned. */
export function table(rows: string[][]): string[] {
  return alignColumns(rows, { right: (i) => i > 0, indent: '  ' });
}

/** A path relative to the working directory when that is shorter. */
export function shortPath(p: string): string {
  const rel = relative(process.cwd(), p);
  return rel && rel.length < p.length ? rel : p;
}

export function formatRun(r: RunComparison): string[] {
  const head = escapeControl(`${r.label}  concurrency ${r.point.concurrency}, isl ${r.point.isl}, osl ${r.point.osl}  (${shortPath(r.source)})`);
  const lines = [head, ...r.notes.map((n) => `  note: ${n}`)];
  if (r.refused) return [...lines, `  not predicted: ${r.refused}`];
  const rows = [['metric', 'predicted', 'measured', 'error', 'band', 'in band']];
  for (const m of r.metrics) {
    rows.push([
      METRIC_LABELS[m.metric],
      fmtNum(m.predicted),
      fmtNum(m.measured),
      fmtPct(m.errorPct),
      m.band ? `${fmtNum(m.band.low)}..${fmtNum(m.band.high)}` : '-',
      m.inBand === null ? '-' : m.inBand ? 'yes' : 'NO',
    ]);
  }
  return [...lines, ...table(rows)];
}

export function summaryLine(rep: ValidationReport, label = 'Summary'): string {
  const s = rep.summary;
  const mapes = s.perMetric
    .filter((m) => m.mape !== null)
    .map((m) => `${METRIC_LABELS[m.metric].replace(/ ms$/, '')} ${m.mape!.toFixed(1)}%`)
    .join(', ');
  const worst = s.worst ? `; worst ${s.worst.label} ${METRIC_LABELS[s.worst.metric].replace(/ ms$/, '')} ${fmtPct(s.worst.errorPct)}` : '';
  const refused = s.refused ? `, ${s.refused} not predicted` : '';
  return `${label}: ${s.runs} runs${refused}, ${s.inBand}/${s.compared} measurements inside the predicted band; mean abs error ${mapes || '-'}${worst}`;
}

export function reportJson(rep: ValidationReport) {
  return {
    stat: rep.stat,
    calibrated: rep.calibrated,
    runs: rep.runs,
    summary: rep.summary,
  };
}

/** The --fail-over verdict: every compared |error| within `pct`, and at least one comparison. */
export function gate(rep: ValidationReport, pct: number): { passed: boolean; message: string } {
  const worst = rep.summary.maxAbsErrorPct;
  if (rep.summary.compared === 0 || worst === null) return { passed: false, message: 'FAIL: no measurement could be compared with a prediction' };
  if (worst > pct) return { passed: false, message: `FAIL: largest error ${worst.toFixed(1)}% exceeds --fail-over ${pct}%` };
  return { passed: true, message: `PASS: every error within ${pct}% (largest ${worst.toFixed(1)}%)` };
}

export function registerValidate(program: Command): void {
  const cmd = program
    .command('validate')
    .description(
      'compare predictions with measured AIPerf runs of a deployment: per run and metric the predicted and measured value, the % error and whether it fell inside the predicted band',
    );
  addTargetOptions(cmd);
  cmd
    .option('--metrics <list>', `compare only these: ${Object.keys(METRIC_FLAGS).join(', ')} (default: all)`)
    .option('--fail-over <pct>', `CI gate: exit ${FAIL_OVER_EXIT} when any compared error exceeds PCT percent (default: report only, exit 0)`, positiveNumber('--fail-over'));
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
Error = (predicted - measured) / measured. Exit codes: 0 report written; 2 bad input (a run with a missing,
zero, negative or non-finite latency, throughput or concurrency is rejected, naming the file and field);
4 unsupported; ${FAIL_OVER_EXIT} with --fail-over PCT when any |error| exceeds PCT.

Examples:
  configure validate --plan results/qwen3-32b_h200/generator_config.yaml        # runs from <plan dir>/bench
  configure validate --plan results/x --aiperf artifacts/sweep --fail-over 25
  configure validate --hf-id Qwen/Qwen3-32B --system h200_sxm --tp 2 --replicas 4 --isl 4000 --osl 500 --aiperf artifacts/c64`,
  );
  cmd.action(async (o: Record<string, unknown>) =>
    runAction(o, async () => {
      const target = resolveTarget(o);
      const metrics = parseMetrics(o.metrics as string | undefined);
      const runs = loadRuns(o, target);
      const ctx = await targetContext(target, Boolean(o.strict));
      const title = targetTitle(target, ctx);
      const predictor = targetPredictor(ctx, target);
      const report = validateRuns(runs, predictor, target.defaults, { correction: ctx.correction, stat: o.stat as MeasuredStat, metrics });
      const warnings = runWarnings(runs, target);
      if (ctx.correction) {
        warnings.push(...profileMismatches(ctx.correction, { model: target.inputs.hfId, system: ctx.system.name, backend: ctx.backend }));
      }
      const failOver = o.failOver as number | undefined;
      // A gate with nothing to compare fails: a silent pass would hide a broken benchmark.
      const gateVerdict = failOver === undefined ? null : gate(report, failOver);
      const failed = gateVerdict !== null && !gateVerdict.passed;
      if (o.json) {
        printJson({
          command: 'validate',
          deployment: title,
          plan: target.plan?.path ?? null,
          warnings,
          failOver: failOver ?? null,
          passed: gateVerdict ? gateVerdict.passed : null,
          ...reportJson(report),
        });
      } else {
        const out: string[] = [];
        out.push(`Validation: ${title}${target.plan ? `  (plan ${shortPath(target.plan.path)})` : ''}`);
        out.push(
          `Measured ${report.stat} vs predicted${report.calibrated ? `, calibrated with ${report.calibrated}` : ', uncalibrated'}; error = (predicted - measured) / measured.`,
        );
        for (const w of warnings) out.push(`warning: ${escapeControl(w)}`);
        for (const r of report.runs) out.push('', ...formatRun(r));
        out.push('', summaryLine(report));
        if (failOver !== undefined) {
          out.push(gateVerdict!.message);
        }
        process.stdout.write(out.join('\n') + '\n');
      }
      if (failed) log(`configure: validate: ${gateVerdict!.message} (exit ${FAIL_OVER_EXIT})`);
      return failed ? FAIL_OVER_EXIT : 0;
    }),
  );
}

