import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { band, bandBasisFor, bandsFileSchema, BANDS_FILE, groupKeys, loadBands, statFor, tableFor, type BandTable } from '../../src/engine/bands.js';
import { dataPath } from '../../src/util/paths.js';
import { testCtx } from './helpers.js';

const fit = { quantile: 0.1, minRows: 20 };
const table: BandTable = {
  fit: { ttft: fit, tpot: fit, throughput: fit },
  groups: {
    'h200_sxm|vllm|llama|agg': { ttft: { n: 12, low: -10, high: 10 } },
    '*|vllm|llama|agg': { ttft: { n: 40, low: -30, high: 20 } },
  },
};

describe('error bands', () => {
  it('the shipped file is in the format the estimates read, with a fit per table and metric', () => {
    const checked = bandsFileSchema.safeParse(JSON.parse(readFileSync(dataPath(BANDS_FILE), 'utf8')));
    expect(checked.success ? '' : checked.error.issues[0]?.message).toBe('');
    const shipped = loadBands();
    expect(shipped).not.toBeNull();
    for (const t of Object.values(shipped!.tables)) {
      for (const m of ['ttft', 'tpot', 'throughput'] as const) {
        expect(t.fit[m].quantile).toBeGreaterThan(0);
        expect(t.fit[m].quantile).toBeLessThan(0.5);
      }
    }
    // The shared table answers every mode from a group as large as its fit asks.
    for (const m of ['ttft', 'tpot', 'throughput'] as const) {
      expect(shipped!.tables['*']!.groups['*|*|*|*']![m]!.n).toBeGreaterThanOrEqual(shipped!.tables['*']!.fit[m].minRows);
    }
  });

  it('a kind and mode without a table of its own reads the shared one', () => {
    const own = { ...table, groups: {} };
    const file = { description: 'test', tables: { '*': table, 'moe agg': own } };
    expect(tableFor(file, 'moe', 'agg')).toBe(own);
    expect(tableFor(file, 'dense', 'agg')).toBe(table);
    expect(tableFor(file, 'moe', 'disagg')).toBe(table);
  });

  it('a group with fewer rows than the fit asks for gives way to a coarser one', () => {
    const keys = groupKeys('h200_sxm', 'vllm', 'llama', 'agg');
    expect(statFor(table, keys, 'ttft')).toMatchObject({ low: -30, high: 20 });
    const lenient = { ...table, fit: { ...table.fit, ttft: { quantile: 0.1, minRows: 8 } } };
    expect(statFor(lenient, keys, 'ttft')).toMatchObject({ low: -10, high: 10 });
    // No group at all: a deliberately wide band.
    expect(statFor(table, keys, 'tpot')).toMatchObject({ low: -35, high: 35 });
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

  it('an estimate says which measured runs its bands come from', () => {
    // A family, system and engine with runs of their own: the finest group.
    const ds = bandBasisFor(testCtx('deepseek-ai/DeepSeek-R1', { system: 'b200_sxm', backend: 'trtllm', version: '1.2.0rc5' }), 'agg');
    expect(ds.ttft).toMatch(/^deepseek_v3 agg runs on b200_sxm with trtllm \(\d+\)$/);
    // A family without runs: a coarser group, named for what it holds.
    const mixtral = bandBasisFor(testCtx('mistralai/Mixtral-8x7B-v0.1', { system: 'l40s', backend: 'vllm' }), 'agg');
    expect(mixtral.ttft).not.toContain('mixtral');
    expect(mixtral.ttft).toMatch(/^(MoE|all) agg runs on any system with (vllm|any engine) \(\d+\)$/);
  });
});
