import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerEstimate } from '../../src/cli/commands/estimate.js';
import { dataPath } from '../../src/util/paths.js';
import { runInProcess } from '../modes/cli.js';
import { chanceAtMost, groupKeys, loadOf, normalCdf, normalQuantile, statFor, valueAtConfidence } from '../../src/engine/bands.js';
import { runSearchWith } from '../../src/search/search.js';
import { slaChance } from '../../src/search/confidence.js';
import { fakeContext, fakeEngine } from './fake.js';
import type { AggEstimate, ServingMetrics } from '../../src/engine/types.js';

describe('reading a band at a confidence', () => {
  const band = { low: 8, high: 15 };
  it('is the prediction at 0.5 and the band ends at 0.1 and 0.9', () => {
    expect(valueAtConfidence(10, band, 0.5)).toBe(10);
    expect(valueAtConfidence(10, band, 0.9)).toBeCloseTo(15, 6);
    expect(valueAtConfidence(10, band, 0.1)).toBeCloseTo(8, 6);
    const at = [0.55, 0.7, 0.8, 0.95, 0.99].map((p) => valueAtConfidence(10, band, p));
    for (let i = 1; i < at.length; i++) expect(at[i]).toBeGreaterThan(at[i - 1]);
    expect(at[0]).toBeGreaterThan(10);
  });
  it('gives chances that invert the quantiles', () => {
    for (const p of [0.2, 0.5, 0.75, 0.9, 0.97]) expect(chanceAtMost(10, band, valueAtConfidence(10, band, p))).toBeCloseTo(p, 5);
    expect(chanceAtMost(10, band, 15)).toBeCloseTo(0.9, 5);
    expect(chanceAtMost(10, band, 1000)).toBeGreaterThan(0.999);
    // A band that ends at the prediction leaves no doubt on that side.
    expect(chanceAtMost(10, { low: 10, high: 12 }, 9.9)).toBe(0);
  });
  it('uses a normal quantile and CDF accurate to 1e-6', () => {
    expect(normalQuantile(0.9)).toBeCloseTo(1.2815516, 6);
    expect(normalQuantile(0.01)).toBeCloseTo(-2.3263479, 6);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-1)).toBeCloseTo(0.1586553, 6);
  });
  it('reports the chance of every target, the smallest as all', () => {
    const m = { ttftMs: 100, tpotMs: 10, requestLatencyMs: 5000 } as ServingMetrics;
    const b = { low: 0.8, high: 1.5 };
    const scale = (v: number) => ({ low: v * b.low, high: v * b.high });
    const bands = { ttftMs: scale(100), tpotMs: scale(10), requestLatencyMs: scale(5000), tokPerSPerGpu: scale(1), tokPerSPerUser: scale(1) };
    const c = slaChance(m, bands, { ttftMs: 150, tpotMs: 10 });
    expect(c.ttft).toBeCloseTo(0.9, 5);
    expect(c.tpot).toBeCloseTo(0.5, 5);
    expect(c.all).toBe(c.tpot);
    expect(c.requestLatency).toBeUndefined();
    expect(slaChance(m, undefined, { ttftMs: 150, tpotMs: 9 })).toEqual({ ttft: 1, tpot: 0, all: 0 });
  });
});

describe('search at a confidence', () => {
  // On the fake, agg TPOT binds here (the best batch is below the memory limit); its bands are +-10%.
  const sla = { ttftMs: 5000, tpotMs: 8.5 };
  const run = (confidence?: number) =>
    runSearchWith(fakeEngine(), fakeContext(), { totalGpus: 8, sla: { ...sla, ...(confidence !== undefined && { confidence }) }, topN: 5, modes: ['agg'] });

  it('at 0.5 judges the prediction, higher confidences keep a margin below the target', () => {
    const base = run();
    const strict = run(0.9);
    const top = base.agg!.top[0]!;
    const safe = strict.agg!.top[0]!;
    expect(top.estimate.metrics.tpotMs).toBeGreaterThan(sla.tpotMs / 1.1);
    for (const c of strict.agg!.top) expect(c.estimate.metrics.tpotMs * 1.1).toBeLessThanOrEqual(sla.tpotMs + 1e-9);
    expect(safe.clusterTokPerSPerGpu).toBeLessThan(top.clusterTokPerSPerGpu);
    expect(safe.chance!.tpot).toBeGreaterThanOrEqual(0.9 - 1e-9);
    expect(top.chance!.tpot).toBeGreaterThanOrEqual(0.5 - 1e-9);
    expect(top.chance!.tpot).toBeLessThan(0.9);
    expect(run(0.5).agg!.top[0]!.clusterTokPerSPerGpu).toBe(top.clusterTokPerSPerGpu);
  });

  it('finds the exact edge at the confidence: one more sequence breaks the margin', () => {
    for (const p of [0.5, 0.7, 0.8, 0.9]) {
      const c = run(p).agg!.top[0]!;
      const est = c.estimate as AggEstimate;
      expect(valueAtConfidence(est.metrics.tpotMs, est.bands.tpotMs, p)).toBeLessThanOrEqual(sla.tpotMs);
      const next = fakeEngine().estimateAgg(fakeContext(), { ...est.config, batchSize: est.config.batchSize + 1 }, { replicas: c.replicas });
      expect('metrics' in next).toBe(true);
      const n = next as AggEstimate;
      expect(valueAtConfidence(n.metrics.tpotMs, n.bands.tpotMs, p)).toBeGreaterThan(sla.tpotMs);
    }
  });
});

describe('estimate at a confidence', () => {
  const TABLES = existsSync(dataPath('perf', 'h200_sxm', 'vllm'));
  it.skipIf(!TABLES)('prints and writes TTFT and TPOT at the confidence, as default judges them', async () => {
    const layout = ['--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--tp', '2', '--batch-size', '32', '--isl', '4000', '--osl', '500'];
    const json = await runInProcess([registerEstimate], ['estimate', ...layout, '--sla-confidence', '0.9', '--json']);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout);
    const e = doc.estimate;
    expect(doc.atConfidence.tpotMs).toBeCloseTo(valueAtConfidence(e.metrics.tpotMs, e.bands.tpotMs, 0.9), 9);
    expect(doc.atConfidence.tpotMs).toBeCloseTo(e.bands.tpotMs.high, 6);
    const text = await runInProcess([registerEstimate], ['estimate', ...layout, '--sla-confidence', '0.8']);
    expect(text.stdout).toMatch(/^at confidence 0\.8: TTFT [\d.]+ ms, TPOT [\d.]+ ms/m);
    const plain = await runInProcess([registerEstimate], ['estimate', ...layout]);
    expect(plain.stdout).not.toMatch(/at confidence/);
  }, 60_000);
  it.skipIf(!TABLES)('--from-csv writes ttft_ms_at_confidence and tpot_ms_at_confidence next to the means', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'confidence-'));
    const csv = join(dir, 'rows.csv');
    writeFileSync(csv, 'model_path,system,backend,backend_version,mode,isl,osl,batch_size,tp_size\nQwen/Qwen3-32B,h200_sxm,vllm,,agg,4000,500,32,2\n');
    const r = await runInProcess([registerEstimate], ['estimate', '--from-csv', csv, '--sla-confidence', '0.9']);
    expect(r.code).toBe(0);
    const [header, row] = r.stdout.trim().split('\n').map((l) => l.split(','));
    const cell = (name: string) => Number(row![header!.indexOf(name)]);
    expect(header).toContain('ttft_ms_at_confidence');
    expect(cell('tpot_ms_at_confidence')).toBeGreaterThan(cell('predicted_tpot_ms'));
    expect(cell('ttft_ms_at_confidence')).toBeGreaterThan(cell('predicted_ttft_ms'));
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);
});

describe('what relaxing a target buys', () => {
  it('reports, per target and factor, the best evaluated candidate meeting the relaxed SLA', () => {
    const sla = { ttftMs: 5000, tpotMs: 8.5 };
    const r = runSearchWith(fakeEngine(), fakeContext(), { totalGpus: 8, sla, topN: 5, modes: ['agg'] });
    const relaxed = r.agg!.relaxed!;
    expect(relaxed.map((x) => `${x.target} ${x.factor}`)).toEqual(['ttft 1.1', 'ttft 1.25', 'tpot 1.1', 'tpot 1.25']);
    const now = r.agg!.top[0]!.clusterTokPerSPerGpu;
    const tpot = relaxed.filter((x) => x.target === 'tpot');
    // TPOT binds on the fake: relaxing it buys throughput, more for more; TTFT does not bind.
    expect(tpot[0]!.best).toBeGreaterThan(now);
    expect(tpot[1]!.best).toBeGreaterThanOrEqual(tpot[0]!.best);
    expect(tpot[1]!.valueMs).toBeCloseTo(8.5 * 1.25, 9);
    for (const x of relaxed.filter((y) => y.target === 'ttft')) expect(x.best).toBe(now);
    // Every figure is an evaluated candidate that meets the relaxed targets.
    const points = runSearchWith(fakeEngine(), fakeContext(), { totalGpus: 8, sla: { ...sla, tpotMs: 8.5 * 1.25 }, topN: 5, modes: ['agg'] });
    expect(tpot[1]!.best).toBeLessThanOrEqual(points.agg!.top[0]!.clusterTokPerSPerGpu + 1e-9);
    expect(r.verdict.notes?.some((n) => /^TPOT 10\.6 ms instead of 8\.5 \(\+25%\): [\d.]+x tokens\/s\/gpu/.test(n))).toBe(true);
  });
});

describe('bands by load', () => {
  it('names the load bucket by clients per GPU', () => {
    expect(loadOf(8, 8)).toBe('light');
    expect(loadOf(9, 8)).toBe('mid');
    expect(loadOf(64, 8)).toBe('mid');
    expect(loadOf(65, 8)).toBe('heavy');
    expect(loadOf(undefined, 8)).toBeUndefined();
  });
  it('looks a group up at the load first, then at every load, finest to coarsest', () => {
    const keys = groupKeys('h200_sxm', 'vllm', 'llama', 'agg', 'heavy');
    expect(keys.slice(0, 3)).toEqual(['h200_sxm|vllm|llama|agg|heavy', 'h200_sxm|vllm|llama|agg', '*|vllm|llama|agg|heavy']);
    expect(keys.filter((k) => !k.endsWith('|heavy'))).toEqual(groupKeys('h200_sxm', 'vllm', 'llama', 'agg'));
    // A table without load groups gives the same band as before; one with them uses the group at the load.
    const stat = (low: number) => ({ ttft: { n: 100, low, high: 10 } });
    const table = { fit: { ttft: { quantile: 0.1, minRows: 32 }, tpot: { quantile: 0.1, minRows: 32 }, throughput: { quantile: 0.1, minRows: 32 } }, groups: { '*|*|*|*': stat(-20) } };
    expect(statFor(table, keys, 'ttft').low).toBe(-20);
    const byLoad = { ...table, groups: { ...table.groups, '*|*|*|agg|heavy': stat(-40) } };
    expect(statFor(byLoad, keys, 'ttft').low).toBe(-40);
    expect(statFor(byLoad, groupKeys('h200_sxm', 'vllm', 'llama', 'agg', 'light'), 'ttft').low).toBe(-20);
  });
});
