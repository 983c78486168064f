import { describe, expect, it } from 'vitest';
import { band, groupKeys, loadBands, statFor, type ErrorBandsFile } from '../../src/engine/bands.js';

const fit = { quantile: 0.1, minRows: 20 };
const file: ErrorBandsFile = {
  description: 'test',
  fit: { ttft: fit, tpot: fit, throughput: fit },
  groups: {
    'h200_sxm|vllm|llama|agg': { ttft: { n: 12, low: -10, high: 10 } },
    '*|vllm|llama|agg': { ttft: { n: 40, low: -30, high: 20 } },
  },
};

describe('error bands', () => {
  it('the shipped file is in the format the estimates read, with a fit per metric', () => {
    const shipped = loadBands();
    expect(shipped).not.toBeNull();
    for (const m of ['ttft', 'tpot', 'throughput'] as const) {
      expect(shipped!.fit[m].quantile).toBeGreaterThan(0);
      expect(shipped!.fit[m].quantile).toBeLessThan(0.5);
      expect(shipped!.groups['*|*|*|*']![m]!.n).toBeGreaterThanOrEqual(shipped!.fit[m].minRows);
    }
  });

  it('a group with fewer rows than the fit asks for gives way to a coarser one', () => {
    const keys = groupKeys('h200_sxm', 'vllm', 'llama', 'agg');
    expect(statFor(file, keys, 'ttft')).toMatchObject({ low: -30, high: 20 });
    const lenient = { ...file, fit: { ...file.fit, ttft: { quantile: 0.1, minRows: 8 } } };
    expect(statFor(lenient, keys, 'ttft')).toMatchObject({ low: -10, high: 10 });
    // No group at all: a deliberately wide band.
    expect(statFor(file, keys, 'tpot')).toMatchObject({ low: -35, high: 35 });
  });

  it('the band turns the error quantiles into a range for the measured value around the prediction', () => {
    // Predicted 20% above measured at the high quantile, 30% below at the low one.
    const b = band(100, { n: 40, low: -30, high: 20 });
    expect(b.low).toBeCloseTo(100 / 1.2);
    expect(b.high).toBeCloseTo(100 / 0.7);
    // Errors all of one sign still give a band holding the prediction.
    const oneSided = band(100, { n: 40, low: 5, high: 40 });
    expect(oneSided.low).toBeLessThan(100);
    expect(oneSided.high).toBe(100);
  });
});
