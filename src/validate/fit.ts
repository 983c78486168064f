// Fit a correction profile (prefill factor, decode factor, per-step overhead) to measured runs: least squares
// on the log errors of TTFT and TPOT, re-running the (injected) predictor for each candidate profile.
// Levenberg-Marquardt with finite-difference Jacobians: a handful of iterations, a few engine calls each.
import type { AiperfRun } from '../inputs/aiperf.js';
import { InputError } from '../util/errors.js';
import type { CorrectionProfile } from '../engine/types.js';
import { pickStat, runPoint, type MeasuredStat, type PointDefaults } from './compare.js';
import type { OperatingPoint, PredictionOrRefusal, Predictor } from './predict.js';

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
}

interface Sample {
  label: string;
  point: OperatingPoint;
  ttft: number;
  tpot: number;
  /** The uncorrected prediction (made once, when the run is checked). */
  base: PredictionOrRefusal;
}

const IDENTITY = { prefillFactor: 1, decodeFactor: 1, stepOverheadMs: 0 };
const LOG_BOUND = Math.log(20); // factors stay within 1/20 .. 20
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
  if (name === 'overhead') return Math.min(Math.max(v, 0), 10);
  return Math.min(Math.max(v, -LOG_BOUND), LOG_BOUND);
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
      else samples.push({ label: run.label, point: located.point, ttft, tpot, base });
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
  };
}
