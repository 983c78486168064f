import { describe, expect, it } from 'vitest';
import { errorPct, runPoint, summarize, validateRuns } from '../../src/validate/compare.js';
import type { Predictor } from '../../src/validate/predict.js';
import { fakePredictor, syntheticRun } from './fake.js';

const predictor = fakePredictor();
const pt = { concurrency: 16, isl: 2000, osl: 400 };

describe('runPoint', () => {
  it('uses what the run recorded and fills the rest from the plan, with notes', () => {
    const run = syntheticRun(predictor, pt, undefined);
    expect(runPoint(run, { isl: 1, osl: 2 })).toEqual({ point: pt, notes: [] });
    const bare = { ...run, concurrency: null, concurrencySource: null, isl: null, osl: null };
    expect(runPoint(bare, { isl: 1000, osl: 100 })).toBeNull();
    const filled = runPoint(bare, { isl: 1000, osl: 100, concurrency: 32 })!;
    expect(filled.point).toEqual({ concurrency: 32, isl: 1000, osl: 100 });
    expect(filled.notes).toHaveLength(3);
  });

  it('adds the cached prefix back when the run reports only the uncached prompt', () => {
    const run = { ...syntheticRun(predictor, pt, undefined), isl: 1502 };
    const r = runPoint(run, { isl: 2000, osl: 400, prefix: 500 })!;
    expect(r.point.isl).toBe(2002);
    expect(runPoint({ ...run, isl: 1990 }, { isl: 2000, osl: 400, prefix: 500 })!.point.isl).toBe(1990);
  });
});

describe('validateRuns', () => {
  it('computes signed % errors and band membership', () => {
    const measured = syntheticRun(predictor, pt, { prefillFactor: 1, decodeFactor: 1.25, stepOverheadMs: 0, source: 't' });
    const rep = validateRuns([measured], predictor, { isl: 2000, osl: 400 });
    const row = (m: string) => rep.runs[0].metrics.find((x) => x.metric === m)!;
    const plain = predictor(pt, undefined);
    if ('refused' in plain) throw new Error();
    expect(row('tpotMs').predicted).toBe(plain.values.tpotMs);
    expect(row('tpotMs').errorPct).toBeCloseTo(((plain.values.tpotMs - measured.metrics.tpotMs.avg!) / measured.metrics.tpotMs.avg!) * 100, 10);
    // The fake's bands are +-15%: a 25% slower decode puts TPOT (about -19%) outside, TTFT inside.
    expect(row('tpotMs').inBand).toBe(false);
    expect(row('ttftMs').inBand).toBe(true);
    expect(rep.summary.worst!.metric).toBe('tokPerSPerUser');
    expect(rep.summary.compared).toBe(6);
  });

  it('compares p50 where asked and falls back to avg for single-value throughputs', () => {
    const run = syntheticRun(predictor, pt, undefined);
    run.metrics.ttftMs.p50 = run.metrics.ttftMs.avg! * 2;
    const rep = validateRuns([run], predictor, { isl: 2000, osl: 400 }, { stat: 'p50' });
    expect(rep.runs[0].metrics.find((m) => m.metric === 'ttftMs')!.errorPct).toBeCloseTo(-50, 10);
    expect(rep.runs[0].metrics.find((m) => m.metric === 'outputTokPerS')!.errorPct).toBeCloseTo(0, 10);
  });

  it('reports refusals and unknown concurrency without failing', () => {
    const refusing: Predictor = () => ({ refused: true, reason: 'weights do not fit' });
    const run = syntheticRun(predictor, pt, undefined);
    const rep = validateRuns([run, { ...run, concurrency: null }], refusing, { isl: 2000, osl: 400 });
    expect(rep.runs.map((r) => r.refused)).toEqual(['weights do not fit', 'the run did not record its concurrency and the plan gives none']);
    expect(rep.summary).toMatchObject({ runs: 2, refused: 2, compared: 0, maxAbsErrorPct: null });
    expect(summarize([]).worst).toBeNull();
  });

  it('errorPct is null without a positive measurement', () => {
    expect(errorPct(10, 0)).toBeNull();
    expect(errorPct(null, 5)).toBeNull();
    expect(errorPct(12, 10)).toBeCloseTo(20, 12);
  });
});

describe('--fail-over gate', () => {
  it('passes within the threshold, fails above it and fails when nothing was compared', async () => {
    const { gate } = await import('../../src/cli/commands/validate.js');
    const measured = syntheticRun(predictor, pt, { prefillFactor: 1, decodeFactor: 1.1, stepOverheadMs: 0, source: 't' });
    const rep = validateRuns([measured], predictor, { isl: 2000, osl: 400 });
    const worst = rep.summary.maxAbsErrorPct!;
    expect(gate(rep, worst + 0.1).passed).toBe(true);
    expect(gate(rep, worst - 0.1)).toEqual({ passed: false, message: `FAIL: largest error ${worst.toFixed(1)}% exceeds --fail-over ${worst - 0.1}%` });
    const empty = validateRuns([{ ...measured, concurrency: null }], predictor, { isl: 2000, osl: 400 });
    expect(gate(empty, 50).passed).toBe(false);
  });
});
