import { describe, expect, it } from 'vitest';
import { fitCorrection, solve } from '../../src/validate/fit.js';
import { validateRuns } from '../../src/validate/compare.js';
import { fakePredictor, syntheticRun } from './fake.js';

const predictor = fakePredictor();
const defaults = { isl: 2000, osl: 400 };
const sweep = (truth: { prefillFactor: number; decodeFactor: number; stepOverheadMs: number }) =>
  [1, 8, 32, 64, 128].map((c) => syntheticRun(predictor, { concurrency: c, isl: 2000, osl: 400 }, { ...truth, source: 'truth' }));

describe('solve', () => {
  it('solves a small linear system and reports singular ones', () => {
    const x = solve([[2, 1], [1, 3]], [3, 5]) as number[];
    expect(x[0]).toBeCloseTo(0.8, 12);
    expect(x[1]).toBeCloseTo(1.4, 12);
    expect(solve([[1, 2], [2, 4]], [1, 2])).toBeNull();
  });
});

describe('fitCorrection with an injected predictor', () => {
  it('recovers decode 20% slower and prefill 10% faster', () => {
    const runs = sweep({ prefillFactor: 0.9, decodeFactor: 1.2, stepOverheadMs: 0 });
    const fit = fitCorrection(runs, predictor, defaults);
    expect(fit.profile.prefillFactor).toBeGreaterThan(0.9 * 0.98);
    expect(fit.profile.prefillFactor).toBeLessThan(0.9 * 1.02);
    expect(fit.profile.decodeFactor).toBeGreaterThan(1.2 * 0.98);
    expect(fit.profile.decodeFactor).toBeLessThan(1.2 * 1.02);
    expect(fit.profile.stepOverheadMs).toBe(0);
    expect(fit.before.tpotMape).toBeGreaterThan(10);
    expect(fit.after.rmsLogError).toBeLessThan(1e-3);
  });

  it('fits a per-step overhead when the factors alone cannot explain the sweep', () => {
    const runs = sweep({ prefillFactor: 1, decodeFactor: 1, stepOverheadMs: 3 });
    const fit = fitCorrection(runs, predictor, defaults);
    expect(fit.fitted).toContain('overhead');
    expect(fit.profile.stepOverheadMs).toBeGreaterThan(3 * 0.98);
    expect(fit.profile.stepOverheadMs).toBeLessThan(3 * 1.02);
    expect(fit.after.rmsLogError).toBeLessThan(1e-3);
  });

  it('does not fit the overhead from a single concurrency', () => {
    const runs = sweep({ prefillFactor: 1.1, decodeFactor: 0.9, stepOverheadMs: 0 }).slice(2, 3);
    const fit = fitCorrection(runs, predictor, defaults);
    expect(fit.fitted).toEqual(['prefill', 'decode']);
    expect(fit.notes.join(' ')).toMatch(/two or more concurrencies/);
    expect(fit.profile.decodeFactor).toBeCloseTo(0.9, 3);
  });

  it('validate reports the distortion before and about zero error after', () => {
    const runs = sweep({ prefillFactor: 0.9, decodeFactor: 1.2, stepOverheadMs: 0 });
    const before = validateRuns(runs, predictor, defaults);
    const fit = fitCorrection(runs, predictor, defaults);
    const after = validateRuns(runs, predictor, defaults, { correction: fit.profile });
    // At c=1 the fake's TPOT is almost pure decode: predicted 1/1.2 of measured -> about -16.7%.
    const tpot1 = before.runs[0].metrics.find((m) => m.metric === 'tpotMs')!;
    expect(tpot1.errorPct!).toBeLessThan(-15);
    expect(tpot1.errorPct!).toBeGreaterThan(-16.7);
    expect(before.summary.maxAbsErrorPct!).toBeGreaterThan(10);
    expect(after.summary.maxAbsErrorPct!).toBeLessThan(0.5);
    expect(after.calibrated).toBe('calibrate');
    expect(after.summary.inBand).toBe(after.summary.compared);
  });

  it('stays within a few % of the truth when measurements carry ±3% noise', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const runs = sweep({ prefillFactor: 0.9, decodeFactor: 1.2, stepOverheadMs: 0 }).map((r) => {
      r.metrics.ttftMs.avg = (r.metrics.ttftMs.avg as number) * (1 + 0.03 * (2 * rnd() - 1));
      r.metrics.tpotMs.avg = (r.metrics.tpotMs.avg as number) * (1 + 0.03 * (2 * rnd() - 1));
      return r;
    });
    const fit = fitCorrection(runs, predictor, defaults);
    expect(Math.abs(fit.profile.prefillFactor / 0.9 - 1)).toBeLessThan(0.04);
    expect(Math.abs(fit.profile.decodeFactor / 1.2 - 1)).toBeLessThan(0.04);
    expect(fit.after.rmsLogError).toBeLessThan(fit.before.rmsLogError / 3);
  });

  it('lists runs it cannot use and refuses when none is usable', () => {
    const runs = sweep({ prefillFactor: 1, decodeFactor: 1, stepOverheadMs: 0 });
    runs[0].metrics.ttftMs = { avg: null, p50: null, p90: null, p99: null };
    const fit = fitCorrection(runs, predictor, defaults);
    expect(fit.skipped).toEqual([{ label: 'c1', reason: 'no TTFT or TPOT measured (streaming off?)' }]);
    expect(() => fitCorrection(runs.slice(0, 1), predictor, defaults)).toThrow(/no run can be used/);
  });
});
