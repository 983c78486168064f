// Predicted vs measured, per run and metric: % error, whether the measurement fell inside the predicted band,
// and a summary. Pure: the predictor is passed in.
import { AIPERF_METRICS, type AiperfMetric, type AiperfRun, type Stat } from '../inputs/aiperf.js';
import type { Band, CorrectionProfile } from '../engine/types.js';
import type { OperatingPoint, Predictor } from './predict.js';

export type MeasuredStat = 'avg' | 'p50';

export interface MetricComparison {
  metric: AiperfMetric;
  predicted: number | null;
  measured: number | null;
  /** (predicted - measured) / measured * 100; positive means we predicted high. */
  errorPct: number | null;
  band: Band | null;
  inBand: boolean | null;
}

export interface RunComparison {
  label: string;
  source: string;
  point: OperatingPoint;
  /** Notes on how the point was chosen (e.g. concurrency taken from the plan). */
  notes: string[];
  refused: string | null;
  metrics: MetricComparison[];
}

export interface MetricSummary {
  metric: AiperfMetric;
  compared: number;
  /** Mean absolute % error over the runs. */
  mape: number | null;
  /** Mean signed % error (bias). */
  meanErrorPct: number | null;
  inBand: number;
}

export interface ValidationSummary {
  runs: number;
  refused: number;
  compared: number;
  inBand: number;
  /** Largest absolute % error of any metric of any run. */
  maxAbsErrorPct: number | null;
  worst: { label: string; metric: AiperfMetric; errorPct: number } | null;
  perMetric: MetricSummary[];
}

export interface ValidationReport {
  stat: MeasuredStat;
  calibrated: string | null;
  runs: RunComparison[];
  summary: ValidationSummary;
}

/** Defaults for a run that did not record its operating point (from the plan). */
export interface PointDefaults {
  isl: number;
  osl: number;
  concurrency?: number;
  /** Cached prefix tokens of the plan; bench.sh sends them as a separate prefix prompt. */
  prefix?: number;
}

export function pickStat(s: Stat, stat: MeasuredStat): number | null {
  // Throughputs are single values (avg only) whatever the statistic asked for.
  return stat === 'p50' ? (s.p50 ?? s.avg) : (s.avg ?? s.p50);
}

/** The operating point to re-predict a run at, or null when its concurrency is unknown. */
export function runPoint(run: AiperfRun, d: PointDefaults): { point: OperatingPoint; notes: string[] } | null {
  const notes: string[] = [];
  let concurrency = run.concurrency;
  if (concurrency === null) {
    if (d.concurrency === undefined) return null;
    concurrency = d.concurrency;
    notes.push(`concurrency not recorded; used the plan's ${d.concurrency}`);
  } else if (run.concurrencySource === 'inferred') {
    notes.push(`concurrency ${concurrency} inferred from overlapping requests`);
  }
  let isl = run.isl !== null && run.isl >= 1 ? Math.round(run.isl) : d.isl;
  // A run that reports only the non-cached part of the prompt: add the plan's prefix back.
  const prefix = d.prefix ?? 0;
  if (run.isl !== null && prefix > 0 && Math.abs(run.isl - (d.isl - prefix)) < Math.abs(run.isl - d.isl)) {
    isl = Math.round(run.isl) + prefix;
    notes.push(`measured isl ${Math.round(run.isl)} taken as the uncached part; predicted at ${isl} with prefix ${prefix}`);
  }
  const osl = run.osl !== null && run.osl >= 2 ? Math.round(run.osl) : d.osl;
  if (run.isl === null) notes.push(`isl not recorded; used ${d.isl}`);
  if (run.osl === null) notes.push(`osl not recorded; used ${d.osl}`);
  return { point: { concurrency: Math.max(1, Math.round(concurrency)), isl, osl }, notes };
}

export function errorPct(predicted: number | null, measured: number | null): number | null {
  if (predicted === null || measured === null || !(measured > 0)) return null;
  return ((predicted - measured) / measured) * 100;
}

export function compareRun(
  run: AiperfRun,
  predictor: Predictor,
  defaults: PointDefaults,
  correction: CorrectionProfile | undefined,
  stat: MeasuredStat = 'avg',
): RunComparison {
  const located = runPoint(run, defaults);
  const base = { label: run.label, source: run.source };
  if (!located) {
    return {
      ...base,
      point: { concurrency: 0, isl: defaults.isl, osl: defaults.osl },
      notes: [],
      refused: 'the run did not record its concurrency and the plan gives none',
      metrics: [],
    };
  }
  const pred = predictor(located.point, correction);
  if ('refused' in pred) return { ...base, point: located.point, notes: located.notes, refused: pred.reason, metrics: [] };
  const metrics = AIPERF_METRICS.map((metric): MetricComparison => {
    const measured = pickStat(run.metrics[metric], stat);
    const predicted = pred.values[metric];
    const band = pred.bands[metric];
    const inBand = measured === null || band === null ? null : measured >= band.low && measured <= band.high;
    return { metric, predicted, measured, errorPct: errorPct(predicted, measured), band, inBand };
  });
  return { ...base, point: located.point, notes: located.notes, refused: null, metrics };
}

export function summarize(runs: RunComparison[]): ValidationSummary {
  const perMetric = AIPERF_METRICS.map((metric): MetricSummary => {
    const rows = runs.flatMap((r) => r.metrics.filter((m) => m.metric === metric && m.errorPct !== null));
    const errs = rows.map((r) => r.errorPct as number);
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
    return {
      metric,
      compared: errs.length,
      mape: mean(errs.map(Math.abs)),
      meanErrorPct: mean(errs),
      inBand: rows.filter((r) => r.inBand === true).length,
    };
  });
  let worst: ValidationSummary['worst'] = null;
  for (const r of runs) {
    for (const m of r.metrics) {
      if (m.errorPct !== null && (worst === null || Math.abs(m.errorPct) > Math.abs(worst.errorPct))) {
        worst = { label: r.label, metric: m.metric, errorPct: m.errorPct };
      }
    }
  }
  return {
    runs: runs.length,
    refused: runs.filter((r) => r.refused !== null).length,
    compared: perMetric.reduce((a, m) => a + m.compared, 0),
    inBand: perMetric.reduce((a, m) => a + m.inBand, 0),
    maxAbsErrorPct: worst ? Math.abs(worst.errorPct) : null,
    worst,
    perMetric,
  };
}

export interface ValidateOptions {
  correction?: CorrectionProfile;
  stat?: MeasuredStat;
  /** Compare only these metrics (all by default). */
  metrics?: AiperfMetric[];
}

export function validateRuns(runs: AiperfRun[], predictor: Predictor, defaults: PointDefaults, opts: ValidateOptions = {}): ValidationReport {
  const stat = opts.stat ?? 'avg';
  const keep = opts.metrics ? new Set(opts.metrics) : null;
  const rows = runs.map((run) => {
    const c = compareRun(run, predictor, defaults, opts.correction, stat);
    return keep ? { ...c, metrics: c.metrics.filter((m) => keep.has(m.metric)) } : c;
  });
  return { stat, calibrated: opts.correction?.source ?? null, runs: rows, summary: summarize(rows) };
}
