// What a user acts on is the choice: do the predictions pick the layout that measures best under an SLA?
//   npm run bench:ranking [-- --confidence 0.5,0.7,0.9]
// Reads ../shared/reference/aic-silicon/e2e/dev.csv, prices every row as bench:e2e does, and groups the rows by
// (model, system, engine, isl, osl): a group is one sweep of layouts x concurrencies. Per group it measures the
// Spearman rank correlation of predicted and measured tokens/s/gpu across the layouts run at one concurrency,
// and, for TPOT thresholds at the group's measured quartiles (interpolated, as numpy and pandas take them, so that a
// threshold is seldom a measured row's own TPOT, which would leave that row's choice to a coin flip), the row a
// planner would choose (the highest predicted tokens/s/gpu among rows whose TPOT at the confidence meets the
// threshold) against the best measured row meeting it. The error bands are fitted on the other half of the groups (a split by group, so that a
// sweep's own rows never shape its bands, as for the public sweeps the figures are also checked on). An error budget
// follows: the same choices made on the measured TPOT with lognormal noise of a few sizes, which tells how exact
// TPOT near the thresholds has to be for the targets, beside how much repeated measurements of one point differ.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { band, statFor, tableFor, valueAtConfidence, type ErrorBandsFile } from '../src/engine/bands.js';
import { parseCsv, type Row } from '../src/engine/rows.js';
import type { Band } from '../src/engine/types.js';
import { referencePath } from '../src/util/paths.js';
import { rng } from '../src/util/rng.js';
import { asRunsTheyRestate, releaseOfMeasurement } from './dev-sources.js';
import { bandsFile, groupBy, keysOf, planBands, runDev, type Result } from './e2e.js';

const DEV = referencePath('aic-silicon', 'e2e', 'dev.csv');
const CONFIDENCES = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95];
/** Quartiles of a group's measured TPOT used as thresholds. */
const THRESHOLD_QUANTILES = [0.25, 0.5, 0.75];
/** Layouts a concurrency needs before its rank correlation means anything. */
const MIN_LAYOUTS = 3;
/** A choice within this share of the best measured row counts as a good one. */
const NEAR_BEST = 0.05;
/** TPOT errors (lognormal sigma) of the error budget, and the draws each is averaged over. */
const NOISE_SIGMAS = [0.02, 0.05, 0.1];
const NOISE_DRAWS = 5;

/** One priced dev row with what the choice needs. */
interface Priced {
  group: string;
  /** The deployment without its load: mode, precision, parallel columns and speculative decoding. */
  layout: string;
  concurrency: number;
  mode: string;
  predTps: number;
  measTps: number;
  predTpot: number;
  measTpot: number;
  tpotBand: Band;
}

/** The sweep a row belongs to: model, system, engine, isl, osl. */
function sweepOf(row: Row): string {
  return [row.model_path, row.system, row.backend, row.isl, row.osl].join('|');
}

/** Columns that name a deployment apart from its load (batch sizes follow the concurrency in these sweeps). */
const LAYOUT_COLUMNS = ['mode', 'precision', 'gemm_quant_mode', 'moe_quant_mode', 'tp_size', 'pp_size', 'attention_dp_size', 'moe_tp_size', 'moe_ep_size',
  'prefill_num_workers', 'prefill_tp_size', 'prefill_pp_size', 'prefill_attention_dp_size', 'prefill_moe_tp_size', 'prefill_moe_ep_size',
  'decode_num_workers', 'decode_tp_size', 'decode_pp_size', 'decode_attention_dp_size', 'decode_moe_tp_size', 'decode_moe_ep_size'];

function layoutOf(row: Row): string {
  return LAYOUT_COLUMNS.map((c) => row[c] ?? '').join('|');
}

/** A stable half (0 or 1) of each sweep. */
function halfOfSweep(sweep: string): number {
  let h = 2166136261;
  for (const ch of sweep) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  return (h >>> 0) % 2;
}

/** Nearest-rank quantile of sorted values. */
function quantile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(p * (sorted.length - 1))))]!;
}

/** Quantile of sorted values interpolated between neighbours (numpy's and pandas' default). */
function interpolatedQuantile(sorted: number[], p: number): number {
  const x = p * (sorted.length - 1);
  const i = Math.floor(x);
  return i + 1 < sorted.length ? sorted[i]! + (x - i) * (sorted[i + 1]! - sorted[i]!) : sorted[i]!;
}

/** A seeded standard normal source (Box-Muller over the project's seeded generator), so that the error budget reads the same each run. */
function normalSource(seed: number): () => number {
  const next = rng(seed);
  // Centred in its 2^-32 bin, never 0 (the logarithm below).
  const uniform = () => next() + 0.5 / 4294967296;
  return () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}

/** Ranks with ties averaged. */
function ranks(xs: number[]): number[] {
  const order = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(xs.length);
  for (let i = 0; i < order.length; ) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]![0] === order[i]![0]) j++;
    for (let k = i; k <= j; k++) out[order[k]![1]] = (i + j) / 2;
    i = j + 1;
  }
  return out;
}

/** Spearman's rank correlation (NaN when either side is constant). */
export function spearman(a: number[], b: number[]): number {
  const ra = ranks(a);
  const rb = ranks(b);
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const ma = mean(ra);
  const mb = mean(rb);
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < ra.length; i++) {
    num += (ra[i]! - ma) * (rb[i]! - mb);
    da += (ra[i]! - ma) ** 2;
    db += (rb[i]! - mb) ** 2;
  }
  return da > 0 && db > 0 ? num / Math.sqrt(da * db) : NaN;
}

/**
 * The outcome of one choice. A choice that misses the threshold as measured is a false-feasible one; the
 * operator then lowers its load, so its regret is that of the best measured row of the same layout that meets
 * the threshold (1 when none does). Nothing chosen is a regret of 1.
 */
interface Choice {
  chosen: boolean;
  falseFeasible: boolean;
  regret: number;
}

/**
 * The planner's choice among `rows` for a TPOT threshold, judging feasibility on `tpotOf` (the TPOT at a confidence,
 * or the measured one), judged against the measurements.
 */
export function choose(rows: Priced[], threshold: number, tpotOf: (r: Priced) => number): Choice {
  let pick: Priced | undefined;
  for (const r of rows) {
    if (tpotOf(r) > threshold) continue;
    if (!pick || r.predTps > pick.predTps || (r.predTps === pick.predTps && r.predTpot < pick.predTpot)) pick = r;
  }
  const meeting = rows.filter((r) => r.measTpot <= threshold);
  const best = Math.max(...meeting.map((r) => r.measTps));
  if (!pick) return { chosen: false, falseFeasible: false, regret: 1 };
  if (pick.measTpot <= threshold) return { chosen: true, falseFeasible: false, regret: Math.max(0, 1 - pick.measTps / best) };
  const backedOff = Math.max(0, ...meeting.filter((r) => r.layout === pick.layout).map((r) => r.measTps));
  return { chosen: true, falseFeasible: true, regret: 1 - backedOff / best };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** log(max / min) of measured TPOT over each point (sweep, layout, concurrency) measured more than once, sorted. */
function repeatSpread(rows: Priced[]): number[] {
  const spread: number[] = [];
  for (const [, same] of groupBy(rows, (r) => `${r.group}|${r.layout}|${r.concurrency}`)) {
    const tpots = [...new Set(same.map((r) => r.measTpot))];
    if (tpots.length > 1) spread.push(Math.log(Math.max(...tpots) / Math.min(...tpots)));
  }
  return spread.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  if (!existsSync(DEV)) {
    console.log(`reference data not found at ${DEV}; nothing to measure`);
    return;
  }
  const args = process.argv.slice(2);
  const ci = args.indexOf('--confidence');
  const confidences = ci >= 0 ? args[ci + 1]!.split(',').map(Number) : CONFIDENCES;
  const t0 = performance.now();
  const { rows } = asRunsTheyRestate(parseCsv(readFileSync(DEV, 'utf8')).rows.map(releaseOfMeasurement));
  const byId = new Map(rows.map((r) => [r.id, r]));
  const results = (await runDev(rows)).filter((r) => !r.refused && r.tpot && r.thr && r.concurrency !== undefined);
  // Bands for each half of the sweeps fitted on the other half only, with the fit the shipped bands use.
  const plan = planBands(results);
  const sweepOfResult = (r: Result) => sweepOf(byId.get(r.label!)!);
  const files: ErrorBandsFile[] = [0, 1].map((h) => bandsFile(results.filter((r) => halfOfSweep(sweepOfResult(r)) !== h), plan));
  const priced: Priced[] = results.map((r) => {
    const file = files[halfOfSweep(sweepOfResult(r))]!;
    const stat = statFor(tableFor(file, r.kind, r.mode), keysOf(r), 'tpot');
    return {
      group: sweepOfResult(r),
      layout: `${layoutOf(byId.get(r.label!)!)}|${r.speculation ?? ''}`,
      mode: r.mode,
      concurrency: r.concurrency!,
      predTps: r.thr![0],
      measTps: r.thr![1],
      predTpot: r.tpot![0],
      measTpot: r.tpot![1],
      tpotBand: band(r.tpot![0], stat),
    };
  });
  const sweeps = groupBy(priced, (r) => r.group);

  const rhos: number[] = [];
  for (const [, rs] of sweeps) {
    for (const [, same] of groupBy(rs, (r) => String(r.concurrency))) {
      if (same.length < MIN_LAYOUTS) continue;
      const rho = spearman(same.map((r) => r.predTps), same.map((r) => r.measTps));
      if (Number.isFinite(rho)) rhos.push(rho);
    }
  }
  rhos.sort((a, b) => a - b);
  // How far the predicted ratio of two layouts' throughput strays from the measured one (same sweep and load).
  const pairErr: Record<'same' | 'cross', number[]> = { same: [], cross: [] };
  for (const [, rs] of sweeps) {
    for (const [, same] of groupBy(rs, (r) => String(r.concurrency))) {
      for (let i = 0; i < same.length; i++) {
        for (let j = i + 1; j < same.length; j++) {
          const a = same[i]!;
          const b = same[j]!;
          if (a.layout === b.layout) continue;
          pairErr[a.mode === b.mode ? 'same' : 'cross'].push(Math.abs(Math.log(a.predTps / b.predTps) - Math.log(a.measTps / b.measTps)));
        }
      }
    }
  }
  const multi = sweeps.filter(([, rs]) => rs.length >= 2);
  console.log(`# bench:ranking  (${results.length} priced dev rows in ${multi.length} sweeps of 2+ rows; bands fitted on the other half of the sweeps)`);
  console.log(`Spearman of predicted vs measured tokens/s/gpu across layouts at one concurrency (${rhos.length} sets of ${MIN_LAYOUTS}+ layouts): ` +
    `median ${quantile(rhos, 0.5).toFixed(2)}, p25 ${quantile(rhos, 0.25).toFixed(2)}, p75 ${quantile(rhos, 0.75).toFixed(2)}`);
  for (const k of ['same', 'cross'] as const) {
    const e = pairErr[k].sort((a, b) => a - b);
    if (!e.length) continue;
    const q = (p: number) => `${(100 * (Math.exp(quantile(e, p)) - 1)).toFixed(1)}%`;
    console.log(`Predicted throughput ratio of two layouts (${k === 'same' ? 'same mode' : 'agg vs disagg'}) vs measured, same sweep and concurrency, ${e.length} pairs: ` +
      `|error| median ${q(0.5)}, p80 ${q(0.8)}, p90 ${q(0.9)}`);
  }
  console.log('\nTPOT thresholds at each sweep\'s measured quartiles (interpolated); the choice is the highest predicted tokens/s/gpu among rows whose TPOT at the confidence meets the threshold.');
  console.log('Regret: 1 - measured tokens/s/gpu of the choice / best measured among rows meeting the threshold; a choice that misses the threshold as measured');
  console.log('(false-feasible) is run at the highest load of its layout that meets it as measured (regret 1 when none does); nothing chosen is a regret of 1.\n');
  console.log('| confidence | choices | false-feasible | within 5% of best | median regret | mean regret | nothing chosen |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  const choices = (tpotOf: (r: Priced) => number): Choice[] => multi.flatMap(([, rs]) => {
    const tpots = rs.map((r) => r.measTpot).sort((a, b) => a - b);
    return THRESHOLD_QUANTILES.map((q) => choose(rs, interpolatedQuantile(tpots, q), tpotOf));
  });
  const line = (label: string, out: Choice[]) => {
    const chosen = out.filter((c) => c.chosen);
    const regrets = out.map((c) => c.regret).sort((a, b) => a - b);
    const ff = chosen.filter((c) => c.falseFeasible).length / Math.max(1, chosen.length);
    const near = out.filter((c) => c.chosen && c.regret <= NEAR_BEST).length / out.length;
    console.log(`| ${label} | ${out.length} | ${pct(ff)} | ${pct(near)} | ${pct(quantile(regrets, 0.5))} | ${pct(regrets.reduce((a, b) => a + b, 0) / regrets.length)} | ${pct((out.length - chosen.length) / out.length)} |`);
  };
  for (const p of confidences) line(String(p), choices((r) => valueAtConfidence(r.predTpot, r.tpotBand, p)));
  line('measured TPOT', choices((r) => r.measTpot));
  // The error budget: each draw gives every row one error, shared by all thresholds of its sweep.
  for (const sigma of NOISE_SIGMAS) {
    const out: Choice[] = [];
    for (let draw = 1; draw <= NOISE_DRAWS; draw++) {
      const normal = normalSource(draw);
      const noisy = new Map(priced.map((r) => [r, r.measTpot * Math.exp(sigma * normal())]));
      out.push(...choices((r) => noisy.get(r)!));
    }
    line(`measured TPOT, error sigma ${100 * sigma}%`, out);
  }
  console.log('\nmeasured TPOT: feasibility judged on the measured TPOT, ranking on the predicted throughput (what exact TPOT predictions would reach);');
  console.log(`with error sigma s: on the measured TPOT times a lognormal error of that size (${NOISE_DRAWS} draws), what a TPOT prediction that good would reach.`);
  const repeats = repeatSpread(priced);
  if (repeats.length) {
    console.log(`Repeated measurements (same sweep, layout, speculation and concurrency, ${repeats.length} points measured more than once with different TPOT): ` +
      `max/min - 1 median ${pct(Math.exp(quantile(repeats, 0.5)) - 1)}, p25 ${pct(Math.exp(quantile(repeats, 0.25)) - 1)}, p75 ${pct(Math.exp(quantile(repeats, 0.75)) - 1)}.`);
  }
  console.log(`false-feasible: share of choices that miss the threshold as measured; within 5%: share of all thresholds whose choice (backed off when false-feasible) is within ${100 * NEAR_BEST}% of the best. ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
}

await main();
