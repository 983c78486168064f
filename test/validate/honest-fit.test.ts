// Honest fits: `calibrate` refuses profiles from one load, pinned at a bound, or that do not improve the runs
// they were not fitted to; and a profile outside the sane range is refused when read.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assessFit, fitCorrection } from '../../src/validate/fit.js';
import { loadCorrectionProfile, profileMismatches } from '../../src/validate/profile.js';
import { InputError } from '../../src/util/errors.js';
import { fakePredictor, syntheticRun } from './fake.js';

const predictor = fakePredictor();
const defaults = { isl: 2000, osl: 400 };
const at = (c: number, truth: { prefillFactor: number; decodeFactor: number; stepOverheadMs: number }) =>
  syntheticRun(predictor, { concurrency: c, isl: 2000, osl: 400 }, { ...truth, source: 'truth' });

describe('assessFit', () => {
  it('accepts a consistent sweep and reports the leave-one-concurrency-out error', () => {
    const runs = [1, 8, 32, 64, 128].map((c) => at(c, { prefillFactor: 0.9, decodeFactor: 1.2, stepOverheadMs: 0 }));
    const fit = fitCorrection(runs, predictor, defaults);
    const check = assessFit(fit, predictor, defaults);
    expect(check.refusals).toEqual([]);
    expect(check.heldOut).toMatchObject({ method: 'leave-one-concurrency-out', folds: 5 });
    expect(check.heldOut!.after).toBeLessThan(check.heldOut!.before / 10);
  });

  it('refuses a fit from runs at a single concurrency (the one-run newcomer case)', () => {
    const fit = fitCorrection([at(64, { prefillFactor: 1.1, decodeFactor: 0.9, stepOverheadMs: 0 })], predictor, defaults);
    const check = assessFit(fit, predictor, defaults);
    expect(check.refusals).toHaveLength(1);
    expect(check.refusals[0]).toMatch(/1 usable run covers one load \(concurrency 64\); a fit needs runs at two or more concurrencies/);
    expect(check.heldOut).toBeNull();
    // Two runs at the same load are still one load.
    const twice = fitCorrection([at(64, { prefillFactor: 1, decodeFactor: 1, stepOverheadMs: 0 }), at(64, { prefillFactor: 1, decodeFactor: 1, stepOverheadMs: 0 })], predictor, defaults);
    expect(assessFit(twice, predictor, defaults).refusals[0]).toMatch(/2 usable runs cover one load/);
  });

  it('refuses factors pinned at the bound of the fit', () => {
    const runs = [4, 16, 64].map((c) => at(c, { prefillFactor: 1, decodeFactor: 60, stepOverheadMs: 0 }));
    const fit = fitCorrection(runs, predictor, defaults, { params: ['prefill', 'decode'] });
    expect(fit.atBounds).toContain('decode');
    const check = assessFit(fit, predictor, defaults, { params: ['prefill', 'decode'] });
    expect(check.refusals.join(' ')).toMatch(/decode_factor 20\.0000 at the bound of the fit/);
  });

  it('refuses a fit that makes held-out runs worse (loads that disagree)', () => {
    // Decode 1.5x slower at the low load, 1.5x faster at the high one: any single factor fitted to one load
    // is wrong for the other.
    const runs = [at(8, { prefillFactor: 1.5, decodeFactor: 1.5, stepOverheadMs: 0 }), at(64, { prefillFactor: 1 / 1.5, decodeFactor: 1 / 1.5, stepOverheadMs: 0 })];
    const fit = fitCorrection(runs, predictor, defaults);
    const check = assessFit(fit, predictor, defaults);
    expect(check.heldOut!.after).toBeGreaterThan(check.heldOut!.before);
    expect(check.refusals.join(' ')).toMatch(/does not improve runs it was not fitted to \(leave-one-concurrency-out over 2 loads/);
  });
});

describe('correction profile range', () => {
  const write = (body: string) => {
    const file = join(mkdtempSync(join(tmpdir(), 'prof-range-')), 'cal.yaml');
    writeFileSync(file, `kind: inferplan-correction-profile\n${body}`);
    return file;
  };

  it.each([
    ['prefill_factor: 1e-300\ndecode_factor: 1\nstep_overhead_ms: 0', /prefill_factor: .*\(got 1e-300\); factors must lie within 0.05 \.\. 20/],
    ['prefill_factor: 1\ndecode_factor: 51\nstep_overhead_ms: 0', /decode_factor: .*\(got 51\)/],
    ['prefill_factor: 1\ndecode_factor: .inf\nstep_overhead_ms: 0', /decode_factor: /],
    ['prefill_factor: 1\ndecode_factor: .nan\nstep_overhead_ms: 0', /decode_factor: /],
    ['prefill_factor: 1\ndecode_factor: 1\nstep_overhead_ms: -2', /step_overhead_ms: .*must lie within 0 \.\. 1000/],
    ['prefill_factor: 1\ndecode_factor: 1\nstep_overhead_ms: 5000', /step_overhead_ms: /],
  ])('refuses %j with an input error naming the key', (body, msg) => {
    const file = write(body);
    expect(() => loadCorrectionProfile(file)).toThrow(InputError);
    expect(() => loadCorrectionProfile(file)).toThrow(msg);
    expect(() => loadCorrectionProfile(file)).toThrow(new RegExp(`^--calibration ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
  });

  it('reads a profile inside the range, and matches a system by any of its names', () => {
    const p = loadCorrectionProfile(write('prefill_factor: 0.05\ndecode_factor: 20\nstep_overhead_ms: 0\nmodel: Qwen/Qwen3-32B\nsystem: gb200_sxm\nbackend: trtllm'));
    expect(p.prefillFactor).toBe(0.05);
    expect(profileMismatches(p, { model: ['qwen3-32b-local', 'Qwen/Qwen3-32B'], system: ['gb200_sxm', 'gb200'], backend: 'trtllm' })).toEqual([]);
    expect(profileMismatches(p, { model: 'Qwen/Qwen3-8B', system: 'h200_sxm', backend: 'vllm' })).toHaveLength(3);
  });
});
