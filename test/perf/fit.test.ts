import { describe, expect, it } from 'vitest';
import { fitGroup } from '../../src/perf/fit.js';
import { evalCorrection, FEATURES, type OpModel } from '../../src/perf/model.js';
import { decodeSurface, encodeSurface, pickSource, versionKey, type SystemCalibration } from '../../src/perf/calibration.js';

describe('op-model fit', () => {
  it('recovers a smooth efficiency surface from samples', () => {
    const def = { ...FEATURES.gemm, names: ['a', 'b', 'c'], lo: [0, 5, 5], hi: [16, 18, 16] };
    const truth = (x: number[]): number => 0.8 - 0.05 * x[0]! + 0.02 * (x[1]! - 10) * (x[2]! - 10) * 0.1;
    const xs: number[][] = [];
    const ys: number[] = [];
    for (let m = 0; m <= 16; m++) for (let n = 5; n <= 18; n += 1) for (let k = 5; k <= 16; k += 1) { xs.push([m + 0.3, n, k]); ys.push(truth([m + 0.3, n, k])); }
    const g = fitGroup(def, xs, ys, { smooth: 1e-6, ridge: 1e-9, iterations: 400, scale: 0.001 });
    const model: OpModel = { features: def.names, lo: def.lo, hi: def.hi, scale: 0.001, groups: { x: g } };
    for (const x of [[3.3, 8, 9], [10.3, 14, 12], [15.3, 6, 15]]) expect(Math.abs(evalCorrection(model, g, x) - truth(x))).toBeLessThan(0.02);
  });

  it('stores surfaces compactly and losslessly', () => {
    const v = [0, 1, -1, 32767, -32768, 1234];
    expect(decodeSurface(encodeSurface(v))).toEqual(v);
  });

  it('borrows the nearest version of the same backend', () => {
    const cal: SystemCalibration = { system: 's', generator: 'x', sources: { 'vllm/0.14.0': {}, 'vllm/0.19.0': {}, 'trtllm/1.2.0rc5': {} } };
    expect(pickSource(cal, 'vllm', '0.19.0')).toBe('vllm/0.19.0');
    expect(pickSource(cal, 'vllm', '0.12.0')).toBe('vllm/0.14.0');
    expect(pickSource(cal, 'vllm', '0.18.0')).toBe('vllm/0.19.0');
    expect(pickSource(cal, 'trtllm', '1.3.0rc1')).toBe('trtllm/1.2.0rc5');
    expect(pickSource(cal, 'sglang', '0.5.9')).toBeDefined();
    expect(versionKey('1.2.0rc5')[3]).toBeLessThan(versionKey('1.2.0')[3]!);
  });
});
