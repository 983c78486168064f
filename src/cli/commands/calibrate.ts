// `configure calibrate`: fit a correction profile (prefill factor, decode factor, per-step overhead) to measured
// AIPerf runs of one deployment, report the error before and after, and write the profile as YAML.
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { addGlobalOptions, log, printJson, runAction } from '../common.js';
import { InputError, NoFeasibleError } from '../../util/errors.js';
import { checkOutputPath, writeFileAtomic } from '../../util/files.js';
import { escapeControl } from '../../util/text.js';
import { assessFit, fitCorrection, FIT_PARAMS, type FitAssessment, type FitParam, type FitResult } from '../../validate/fit.js';
import { validateRuns, type MeasuredStat, type ValidationReport } from '../../validate/compare.js';
import { correctionProfileYaml } from '../../validate/profile.js';
import { addTargetOptions, fmtPct, loadRuns, shortPath, reportJson, resolveTarget, runWarnings, targetTitle, summaryLine, table, targetContext, targetPredictor } from './validate.js';

const pkg = createRequire(import.meta.url)('../../../package.json') as { version: string };

function parseParams(v: string | undefined): FitParam[] | undefined {
  if (!v) return undefined;
  const out = v.split(',').map((s) => s.trim().toLowerCase());
  for (const p of out) {
    if (!FIT_PARAMS.includes(p as FitParam)) throw new InputError(`--fit "${p}" is not a profile parameter; accepted: ${FIT_PARAMS.join(', ')}`);
  }
  return out as FitParam[];
}

export function fitLines(fit: FitResult, check?: FitAssessment): string[] {
  const p = fit.profile;
  const q = (x: FitResult['before']) => `TTFT ${x.ttftMape.toFixed(1)}%, TPOT ${x.tpotMape.toFixed(1)}% (rms log error ${x.rmsLogError.toFixed(4)})`;
  const h = check?.heldOut;
  return [
    `Fitted (${fit.fitted.join(', ')}) on ${fit.used.length} runs: prefill_factor ${p.prefillFactor.toFixed(4)}, decode_factor ${p.decodeFactor.toFixed(4)}, step_overhead_ms ${p.stepOverheadMs.toFixed(3)}`,
    `Mean abs error before: ${q(fit.before)}`,
    `Mean abs error after:  ${q(fit.after)}`,
    ...(h ? [`Held out (${h.method}, ${h.folds} folds): rms log error ${h.before.toFixed(4)} uncorrected, ${h.after.toFixed(4)} corrected`] : []),
    ...fit.skipped.map((s) => `skipped ${s.label}: ${s.reason}`),
    ...fit.notes.map((n) => `note: ${n}`),
  ];
}

/** Per run: TTFT and TPOT error before and after the fitted profile. */
export function beforeAfterTable(before: ValidationReport, after: ValidationReport): string[] {
  const err = (rep: ValidationReport, i: number, metric: 'ttftMs' | 'tpotMs') =>
    fmtPct(rep.runs[i].metrics.find((m) => m.metric === metric)?.errorPct ?? null);
  const rows = [['run', 'concurrency', 'TTFT before', 'after', 'TPOT before', 'after']];
  before.runs.forEach((r, i) => {
    rows.push([r.label, String(r.point.concurrency), err(before, i, 'ttftMs'), err(after, i, 'ttftMs'), err(before, i, 'tpotMs'), err(after, i, 'tpotMs')]);
  });
  return table(rows);
}

export function registerCalibrate(program: Command): void {
  const cmd = program
    .command('calibrate')
    .description(
      'fit a correction profile (prefill factor, decode factor, per-step overhead) to measured AIPerf runs and write it as YAML for --calibration',
    );
  addTargetOptions(cmd);
  cmd
    .requiredOption('--out <file>', 'where to write the profile (YAML; its directory must exist)')
    .option('--force', 'replace an existing --out file')
    .option('--fit <params>', `parameters to fit, comma-separated: ${FIT_PARAMS.join(', ')} (default: all; the overhead is kept only when it helps)`);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
The fit minimises the squared log errors of mean TTFT and TPOT over the runs, re-running the inference model
for each candidate profile. Apply the result with --calibration FILE on any planning command.

The fit is refused (exit 3, nothing written) when the usable runs cover fewer than two concurrencies, when a
fitted factor ends at a bound of the fit (1/20 or 20; the overhead at 10x the median TPOT), or when it does
not improve runs it was not fitted to: each concurrency is left out in turn, a profile is fitted to the
other runs, and the held-out runs' error must be lower with it than without (leave-one-concurrency-out).
Runs with a missing, zero, negative or non-finite latency or concurrency are bad input (exit 2).

Example:
  configure calibrate --plan results/qwen3-32b_h200/generator_config.yaml --out calibration.yaml`,
  );
  cmd.action(async (o: Record<string, unknown>) =>
    runAction(o, async () => {
      const target = resolveTarget(o);
      const params = parseParams(o.fit as string | undefined);
      // A place the profile cannot go is reported before the fit runs.
      checkOutputPath('--out', o.out as string, { force: o.force === true });
      const runs = loadRuns(o, target);
      const ctx = await targetContext(target);
      if (ctx.correction) log(`configure: calibrate: --calibration ${ctx.correction.source} ignored; the fit starts from the uncorrected model`);
      const predictor = targetPredictor(ctx, target);
      const out = resolve(o.out as string);
      const stat = o.stat as MeasuredStat;
      const fit = fitCorrection(runs, predictor, target.defaults, { params, stat, source: out });
      const check = assessFit(fit, predictor, target.defaults, { params, stat, source: out });
      if (check.refusals.length > 0) {
        const p = fit.profile;
        throw new NoFeasibleError(`calibrate: fit refused, no profile written: ${check.refusals.join('; ')}`, {
          refusals: check.refusals,
          heldOut: check.heldOut,
          profile: { prefillFactor: p.prefillFactor, decodeFactor: p.decodeFactor, stepOverheadMs: p.stepOverheadMs },
          fitted: fit.fitted,
          atBounds: fit.atBounds,
          used: fit.used,
          skipped: fit.skipped,
        });
      }
      const before = validateRuns(runs, predictor, target.defaults, { stat });
      const after = validateRuns(runs, predictor, target.defaults, { stat, correction: fit.profile });
      const l = target.layout;
      const yaml = correctionProfileYaml(fit.profile, {
        inferplanVersion: pkg.version,
        created: new Date().toISOString().slice(0, 10),
        model: target.inputs.hfId,
        // The resolved names (an alias such as gb200 is recorded as gb200_sxm), as profiles are checked against them.
        system: ctx.system.name,
        backend: ctx.backend,
        backendVersion: target.inputs.backendVersion ?? ctx.version,
        mode: l.mode,
        plan: target.plan?.path,
        fitted: fit.fitted,
        runs: fit.used.map((u) => {
          const run = runs.find((r) => r.label === u.label);
          return { label: u.label, source: run?.source ?? '', ...u.point };
        }),
        errorBefore: { ttftMapePct: fit.before.ttftMape, tpotMapePct: fit.before.tpotMape, rmsLogError: fit.before.rmsLogError },
        errorAfter: { ttftMapePct: fit.after.ttftMape, tpotMapePct: fit.after.tpotMape, rmsLogError: fit.after.rmsLogError },
      });
      writeFileAtomic('--out', out, yaml, { force: o.force === true });
      const warnings = runWarnings(runs, target);
      if (o.json) {
        printJson({
          command: 'calibrate',
          deployment: targetTitle(target, ctx),
          plan: target.plan?.path ?? null,
          out,
          warnings,
          profile: {
            prefillFactor: fit.profile.prefillFactor,
            decodeFactor: fit.profile.decodeFactor,
            stepOverheadMs: fit.profile.stepOverheadMs,
          },
          fit: {
            fitted: fit.fitted, before: fit.before, after: fit.after, heldOut: check.heldOut, iterations: fit.iterations,
            evaluations: fit.evaluations, used: fit.used, skipped: fit.skipped, notes: fit.notes,
          },
          before: reportJson(before),
          after: reportJson(after),
        });
      } else {
        const lines = [`Calibration: ${targetTitle(target, ctx)}`, ...warnings.map((w) => `warning: ${escapeControl(w)}`), ...fitLines(fit, check), ''];
        lines.push(...beforeAfterTable(before, after), '');
        lines.push(summaryLine(before, 'Before'), summaryLine(after, 'After '), '', `Wrote ${shortPath(out)}; apply it with --calibration ${o.out as string}`);
        process.stdout.write(lines.join('\n') + '\n');
      }
      return 0;
    }),
  );
}
