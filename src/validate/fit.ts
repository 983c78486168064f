// Fit a correction profile (prefill factor, decode factor, per-step overhead) to measured runs: least squares
// on the log errors of TTFT and TPOT, re-running the (injected) predictor for each candidate profile.
// Levenberg-Marquardt with finite-difference Jacobians: a handful of iterations, a few engine calls each.
import type { AiperfRun } from '../inputs/aiperf.js';
import { InputError } from '../util/errors.js';
import type { CorrectionProfile } from '../engine/types.js';
import { pickStat, runPoint, type MeasuredStat, type PointDefaults } from './compare.js';
import type { OperatingPoint, PredictionOrRefusal, Predictor } from './predict.js';
import { PROFILE_LIMITS } from './profile.js';

export type FitParam = 'prefill' | 'decode' | 'overhead';
export const FIT_PARAMS: readonly FitParam[] = ['prefill', 'decode', 'overhead'];

export interface FitOptions {
  /** Parameters to fit (default all three); the others stay at 1, 1, 0. */
  params?: FitParam[];
  stat?: MeasuredStat;
  /** Recorded as the profile's source. */
  source?: string;
  maxIterations?: number;
}

export interface FitQuality {
  /** Root mean square of ln(predicted / measured) over TTFT and TPOT of every run used. */
  rmsLogError: number;
  ttftMape: number;
  tpotMape: number;
}

export interface FitResult {
  profile: CorrectionProfile;
  /** Parameters actually fitted (the overhead is dropped when the data cannot separate it from the decode factor). */
  fitted: FitParam[];
  before: FitQuality;
  after: FitQuality;
  iterations: number;
  evaluations: number;
  used: Array<{ label: string; point: OperatingPoint }>;
  skipped: Array<{ label: string; reason: string }>;
  notes: string[];
  /** Fitted parameters that ended at a bound of the search (factor 1/20 or 20, overhead at its cap). */
  atBounds: FitParam[];
  /** The runs the fit used (for cross-validation). */
  usedRuns: AiperfRun[];
}

interface Sample {
  run: AiperfRun;
  label: string;
  point: OperatingPoint;
  ttft: number;
  tpot: number;
  /** The uncorrected prediction (made once, when the run is checked). */
  base: PredictionOrRefusal;
}

const IDENTITY = { prefillFactor: 1, decodeFactor: 1, stepOverheadMs: 0 };
const LOG_BOUND = Math.log(PROFILE_LIMITS.maxFactor); // factors stay within 1/20 .. 20 (what a profile may hold)
const OVERHEAD_BOUND = 10; // times the median measured TPOT
/** How close to a bound a parameter may end before the fit counts as pinned there. */
const BOUND_SLACK = 1e-3;
const REFUSED_RESIDUAL = 5; // a candidate that makes the engine refuse is far off

function toProfile(params: FitParam[], x: number[], overheadScale: number, source: string): CorrectionProfile {
  const p = { ...IDENTITY, source };
  params.forEach((name, i) => {
    if (name === 'prefill') p.prefillFactor = Math.exp(x[i]);
    else if (name === 'decode') p.decodeFactor = Math.exp(x[i]);
    else p.stepOverheadMs = Math.max(0, x[i]) * overheadScale;
  });
  return p;
}

function clampParam(name: FitParam, v: number): number {
  if (name === 'overhead') return Math.min(Math.max(v, 0), OVERHEAD_BOUND);
  return Math.min(Math.max(v, -LOG_BOUND), LOG_BOUND);
}

/** Parameters whose fitted value sits at the edge of what the fit could choose (a zero overhead is not). */
function pinned(names: FitParam[], x: number[]): FitParam[] {
  return names.filter((name, i) =>
    name === 'overhead' ? x[i] >= OVERHEAD_BOUND - BOUND_SLACK : Math.abs(x[i]) >= LOG_BOUND - BOUND_SLACK,
  );
}

/** Solve A x = b for a small dense system (Gaussian elimination with partial pivoting); null if singular. */
export function solve(A: number[][], b: number[]): number[] | null {
  const n = b.length;
  const M = A.map((row, i) => [...row, b[i]]);
  for (let c = 0; c < n; c++) {
    let piv = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r][c]) > Math.abs(M[piv][c])) piv = r;
    if (Math.abs(M[piv][c]) < 1e-300) return null;
    [M[c], M[piv]] = [M[piv], M[c]];
    for (let r = c + 1; r < n; r++) {
      const f = M[r][c] / M[c][c];
      for (let k = c; k <= n; k++) M[r][k] -= f * M[c][k];
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    let s = M[r][n];
    for (let k = r + 1; k < n; k++) s -= M[r][k] * x[k];
    x[r] = s / M[r][r];
  }
  return x;
}

const sumSq = (r: number[]) => r.reduce((a, v) => a + v * v, 0);

interface LmResult {
  x: number[];
  cost: number;
  iterations: number;
}

/** Levenberg-Marquardt on residuals(x), with each x[i] clamped by `clamp(i, v)`. */
function levenbergMarquardt(
  residuals: (x: number[]) => number[],
  x0: number[],
  clamp: (i: number, v: number) => number,
  maxIterations: number,
): LmResult {
  let x = [...x0];
  let r = residuals(x);
  let cost = sumSq(r);
  let lambda = 1e-3;
  const h = 1e-4;
  let it = 0;
  for (; it < maxIterations && cost > 1e-20; it++) {
    // Forward-difference Jacobian; step backwards where the clamp blocks the forward step.
    const J: number[][] = r.map(() => new Array<number>(x.length).fill(0));
    for (let j = 0; j < x.length; j++) {
      const xp = [...x];
      xp[j] = clamp(j, x[j] + h);
      let step = xp[j] - x[j];
      if (step === 0) {
        xp[j] = clamp(j, x[j] - h);
        step = xp[j] - x[j];
      }
      if (step === 0) continue;
      const rp = residuals(xp);
      for (let i = 0; i < r.length; i++) J[i][j] = (rp[i] - r[i]) / step;
    }
    const JtJ = x.map((_, a) => x.map((__, b) => r.reduce((s, _r, i) => s + J[i][a] * J[i][b], 0)));
    const Jtr = x.map((_, a) => r.reduce((s, ri, i) => s + J[i][a] * ri, 0));
    let improved = false;
    for (let tries = 0; tries < 12 && !improved; tries++) {
      const A = JtJ.map((row, a) => row.map((v, b) => (a === b ? v + lambda * Math.max(v, 1e-9) : v)));
      const delta = solve(A, Jtr.map((v) => -v));
      if (!delta) {
        lambda *= 10;
        continue;
      }
      const xn = x.map((v, i) => clamp(i, v + delta[i]));
      const rn = residuals(xn);
      const cn = sumSq(rn);
      if (cn < cost) {
        const gain = cost - cn;
        x = xn;
        r = rn;
        cost = cn;
        lambda = Math.max(lambda / 3, 1e-9);
        improved = true;
        if (gain < 1e-14 * Math.max(1, cost) || Math.max(...delta.map(Math.abs)) < 1e-9) return { x, cost, iterations: it + 1 };
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  return { x, cost, iterations: it };
}

function quality(samples: Sample[], predict: (s: Sample) => PredictionOrRefusal): FitQuality {
  let sq = 0;
  let n = 0;
  let ttft = 0;
  let tpot = 0;
  for (const s of samples) {
    const p = predict(s);
    const lt = 'refused' in p ? REFUSED_RESIDUAL : Math.log(p.values.ttftMs / s.ttft);
    const ld = 'refused' in p ? REFUSED_RESIDUAL : Math.log(p.values.tpotMs / s.tpot);
    sq += lt * lt + ld * ld;
    n += 2;
    ttft += Math.abs(Math.exp(lt) - 1) * 100;
    tpot += Math.abs(Math.exp(ld) - 1) * 100;
  }
  return { rmsLogError: Math.sqrt(sq / Math.max(n, 1)), ttftMape: ttft / samples.length, tpotMape: tpot / samples.length };
}

/**
 * Fit a correction profile to measured runs. Runs without TTFT/TPOT, without a known concurrency, or that the
 * engine refuses even uncorrected are skipped (and listed).
 */
export function fitCorrection(runs: AiperfRun[], predictor: Predictor, defaults: PointDefaults, opts: FitOptions = {}): FitResult {
  const stat = opts.stat ?? 'avg';
  const source = opts.source ?? 'calibrate';
  const maxIterations = opts.maxIterations ?? 40;
  const notes: string[] = [];
  const samples: Sample[] = [];
  const skipped: FitResult['skipped'] = [];
  for (const run of runs) {
    const located = runPoint(run, defaults);
    const ttft = pickStat(run.metrics.ttftMs, stat);
    const tpot = pickStat(run.metrics.tpotMs, stat);
    if (!located) skipped.push({ label: run.label, reason: 'concurrency unknown' });
    else if (!(ttft && ttft > 0) || !(tpot && tpot > 0)) skipped.push({ label: run.label, reason: 'no TTFT or TPOT measured (streaming off?)' });
    else {
      const base = predictor(located.point, undefined);
      if ('refused' in base) skipped.push({ label: run.label, reason: `the engine refuses this point: ${base.reason}` });
      else samples.push({ run, label: run.label, point: located.point, ttft, tpot, base });
    }
  }
  if (samples.length === 0) {
    throw new InputError('no run can be used for calibration: ' + (skipped.map((s) => `${s.label}: ${s.reason}`).join('; ') || 'no runs'));
  }

  let evaluations = 0;
  const requested = (opts.params ?? [...FIT_PARAMS]).filter((p, i, a) => a.indexOf(p) === i);
  let params = FIT_PARAMS.filter((p) => requested.includes(p));
  const distinctConcurrency = new Set(samples.map((s) => s.point.concurrency)).size;
  if (params.includes('overhead') && distinctConcurrency < 2 && params.includes('decode')) {
    params = params.filter((p) => p !== 'overhead');
    notes.push('step overhead not fitted: it needs runs at two or more concurrencies to be told apart from the decode factor');
  }
  const tpots = samples.map((s) => s.tpot).sort((a, b) => a - b);
  const overheadScale = tpots[Math.floor(tpots.length / 2)];

  const residualsFor = (names: FitParam[]) => (x: number[]) => {
    const prof = toProfile(names, x, overheadScale, source);
    const out: number[] = [];
    for (const s of samples) {
      evaluations++;
      const p = predictor(s.point, prof);
      if ('refused' in p) out.push(REFUSED_RESIDUAL, REFUSED_RESIDUAL);
      else out.push(Math.log(p.values.ttftMs / s.ttft), Math.log(p.values.tpotMs / s.tpot));
    }
    return out;
  };
  const run = (names: FitParam[], x0: number[]) =>
    levenbergMarquardt(residualsFor(names), x0, (i, v) => clampParam(names[i], v), maxIterations);

  // Factors first; the overhead only when it explains clearly more than the factors alone (it is nearly
  // collinear with the decode factor, so a free overhead would trade against it on noise).
  const factors: FitParam[] = params.filter((p) => p !== 'overhead');
  const factorFit: LmResult = factors.length
    ? run(factors, factors.map(() => 0))
    : { x: [], cost: sumSq(residualsFor([])([])), iterations: 0 };
  let best: { names: FitParam[]; fit: LmResult } = { names: factors, fit: factorFit };
  if (params.includes('overhead')) {
    const x0 = [...best.fit.x, 0];
    const withOverhead = run(params, params.map((p) => (p === 'overhead' ? 0 : x0[factors.indexOf(p)])));
    const n = samples.length * 2;
    const rms = (c: number) => Math.sqrt(c / n);
    if (factors.length === 0 || (rms(best.fit.cost) > 0.002 && rms(withOverhead.cost) < 0.5 * rms(best.fit.cost))) {
      best = { names: params, fit: { ...withOverhead, iterations: withOverhead.iterations + best.fit.iterations } };
    } else {
      notes.push('step overhead left at 0: it did not halve the error left by the factors alone');
    }
  }
  const profile = toProfile(best.names, best.fit.x, overheadScale, source);
  return {
    profile,
    fitted: best.names,
    before: quality(samples, (s) => s.base),
    after: quality(samples, (s) => predictor(s.point, profile)),
    iterations: best.fit.iterations,
    evaluations,
    used: samples.map((s) => ({ label: s.label, point: s.point })),
    skipped,
    notes,
    atBounds: pinned(best.names, best.fit.x),
    usedRuns: samples.map((s) => s.run),
  };
}

// ---------- is the fit worth writing? ----------

export interface HeldOutCheck {
  /** How the runs were split: each concurrency left out in turn, the profile fitted on the others. */
  method: 'leave-one-concurrency-out';
  folds: number;
  /** RMS of ln(predicted / measured) of TTFT and TPOT over the held-out runs, without and with the fold's profile. */
  before: number;
  after: number;
}

export interface FitAssessment {
  /** Why the profile must not be written; empty when it may. */
  refusals: string[];
  heldOut: HeldOutCheck | null;
}

function rmsLog(samples: Array<{ run: AiperfRun; point: OperatingPoint }>, predictor: Predictor, profile: CorrectionProfile | undefined, stat: MeasuredStat): { sq: number; n: number } {
  let sq = 0;
  let n = 0;
  for (const s of samples) {
    const p = predictor(s.point, profile);
    const ttft = pickStat(s.run.metrics.ttftMs, stat) as number;
    const tpot = pickStat(s.run.metrics.tpotMs, stat) as number;
    const lt = 'refused' in p ? REFUSED_RESIDUAL : Math.log(p.values.ttftMs / ttft);
    const ld = 'refused' in p ? REFUSED_RESIDUAL : Math.log(p.values.tpotMs / tpot);
    sq += lt * lt + ld * ld;
    n += 2;
  }
  return { sq, n };
}

/**
 * Whether a fit may be written as a profile. Refused when the runs cover fewer than two concurrencies (one
 * load cannot tell prefill from decode cost, and nothing is left to test on), when a fitted parameter sits at
 * its bound (the model cannot explain the runs; the factor is an artefact), or when the profile does not
 * lower the error on runs it was not fitted to: each concurrency is left out in turn, a profile is fitted to
 * the other runs with the same parameters, and the held-out runs' RMS log error with the fold's profile must
 * be lower than without any.
 */
export function assessFit(fit: FitResult, predictor: Predictor, defaults: PointDefaults, opts: FitOptions = {}): FitAssessment {
  const stat = opts.stat ?? 'avg';
  const refusals: string[] = [];
  const loads = [...new Set(fit.used.map((u) => u.point.concurrency))].sort((a, b) => a - b);
  if (loads.length < 2) {
    refusals.push(
      `the ${fit.used.length} usable run${fit.used.length === 1 ? '' : 's'} cover${fit.used.length === 1 ? 's' : ''} one load (concurrency ${loads.join(', ')}); a fit needs runs at two or more concurrencies`,
    );
  }
  if (fit.atBounds.length > 0) {
    const value = (p: FitParam) =>
      p === 'prefill' ? `prefill_factor ${fit.profile.prefillFactor.toFixed(4)}` : p === 'decode' ? `decode_factor ${fit.profile.decodeFactor.toFixed(4)}` : `step_overhead_ms ${fit.profile.stepOverheadMs.toFixed(3)}`;
    refusals.push(`${fit.atBounds.map(value).join(', ')} at the bound of the fit (factors 1/20 .. 20): the model cannot explain these runs`);
  }
  if (loads.length < 2) return { refusals, heldOut: null };

  const points = fit.usedRuns.map((run, i) => ({ run, point: fit.used[i].point }));
  let before = { sq: 0, n: 0 };
  let after = { sq: 0, n: 0 };
  for (const load of loads) {
    const test = points.filter((p) => p.point.concurrency === load);
    const train = points.filter((p) => p.point.concurrency !== load).map((p) => p.run);
    const foldFit = fitCorrection(train, predictor, defaults, { ...opts, params: fit.fitted.length ? fit.fitted : opts.params });
    const b = rmsLog(test, predictor, undefined, stat);
    const a = rmsLog(test, predictor, foldFit.profile, stat);
    before = { sq: before.sq + b.sq, n: before.n + b.n };
    after = { sq: after.sq + a.sq, n: after.n + a.n };
  }
  const heldOut: HeldOutCheck = {
    method: 'leave-one-concurrency-out',
    folds: loads.length,
    before: Math.sqrt(before.sq / Math.max(before.n, 1)),
    after: Math.sqrt(after.sq / Math.max(after.n, 1)),
  };
  if (!(heldOut.after < heldOut.before)) {
    refusals.push(
      `the profile does not improve runs it was not fitted to (leave-one-concurrency-out over ${loads.length} loads: rms log error ${heldOut.before.toFixed(4)} uncorrected, ${heldOut.after.toFixed(4)} corrected)`,
    );
  }
  return { refusals, heldOut };
}
