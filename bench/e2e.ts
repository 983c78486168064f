// End-to-end accuracy: predicted TTFT / TPOT / throughput against measured serving runs.
//   npm run bench:e2e [-- --write-bands] [-- --rows out.jsonl]
// Reads ../shared/reference/aic-silicon/e2e/dev.csv and the max-load rows of
// ../shared/reference/ground-truth/trtllm_perf_overview.csv; prints MAPE and median |%err| per group, the
// signed error of the agg rows by concurrency, what the recorded columns allow (repeated configurations, the
// disagg rows with and without worker counts, low-load TTFT against the recorded load), the refusal share and
// reasons, and (with --write-bands) writes data/error-bands.json: aggregate error percentiles per group, never
// the rows. Each dev row is priced with the speculative decoding (and, for InferenceX's disagg rows, the
// deployment) its source ran, as bench/dev-sources.ts knows it.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { estimateAgg, isRefusal } from '../src/engine/index.js';
import { decodeFloorMs } from '../src/engine/memory.js';
import { BANDS_FILE, band, groupKeys, loadOf, statFor, tableFor, type BandFit, type BandTable, type ErrorBandsFile, type ErrorGroup } from '../src/engine/bands.js';
import { backendProfile } from '../src/engine/backends.js';
import { estimateRow, parseCsv, rowConcurrency, rowDtypes, workersRecorded, type Row, type RowInputs } from '../src/engine/rows.js';
import { asRunsTheyRestate, releaseOfMeasurement, withServedCheckpoint, withSourceKnowledge, type SourceBasis } from './dev-sources.js';
import { UnsupportedError } from '../src/util/errors.js';
import { resolveRowInputs } from '../src/cli/context.js';
import type { EngineContext, Estimate, TtftParts } from '../src/engine/types.js';
import { dataPath, referencePath } from '../src/util/paths.js';
import { measuredMeans, withoutMeasurements } from '../test/support/e2e-reference.js';
import { rng } from '../src/util/rng.js';

const REF = referencePath();
const DEV = join(REF, 'aic-silicon', 'e2e', 'dev.csv');
const OVERVIEW = join(REF, 'ground-truth', 'trtllm_perf_overview.csv');

export interface Result {
  source: 'dev' | 'overview';
  system: string;
  backend: string;
  family: string;
  kind: 'dense' | 'moe' | '?';
  mode: string;
  refused?: string;
  /** Measured TPOT below the HBM floor of the recorded configuration (speculative decoding or a recording error). */
  belowFloor?: boolean;
  ttft?: [number, number];
  tpot?: [number, number];
  thr?: [number, number];
  /** Row label for --rows output. */
  label?: string;
  /** What the estimate is a function of (inputKey); rows with the same key get the same prediction. */
  inputs?: string;
  /** Where the predicted mean TTFT goes (--rows output, for error analysis). */
  ttftParts?: TtftParts;
  /** Concurrent clients of the row's benchmark. */
  concurrency?: number;
  /** GPUs the estimate runs on (its load for the bands is concurrency / gpus). */
  gpus?: number;
  /** The speculative decoding the row was priced with ("MTP nextn 3", "no speculation"). */
  speculation?: string;
  /** Where that (and for InferenceX's disagg rows the deployment) comes from (bench/dev-sources.ts). */
  speculationBasis?: SourceBasis;
}

const pct = (pred: number, meas: number) => (100 * (pred - meas)) / meas;

export async function runDev(rows: Row[], perfData?: string): Promise<Result[]> {
  const out: Result[] = [];
  for (const named of rows) {
    const recorded = withServedCheckpoint(named);
    let row = recorded;
    const r: Result = { source: 'dev', system: row.system, backend: row.backend, family: '?', kind: '?', mode: row.mode, label: row.id, inputs: inputKey(row) };
    const inp = await resolveRowInputs(row, perfData);
    if ('refused' in inp) {
      r.refused = inp.reason;
      r.family = inp.family ?? `other:${row.model_path}`;
      out.push(r);
      continue;
    }
    r.family = inp.model.family;
    r.kind = inp.model.moe ? 'moe' : 'dense';
    const spec = withSourceKnowledge(recorded, inp.model);
    row = spec.row;
    r.speculation = Number(row.nextn || 0) > 0 ? `MTP nextn ${row.nextn}` : 'no speculation';
    r.speculationBasis = spec.basis;
    // The system as estimates name it (gb200 -> gb200_sxm): error bands are looked up by that name.
    r.system = inp.system.name;
    let e;
    try {
      e = estimateRow(row, inp);
    } catch (err) {
      // A model that resolves but whose layers are not priced yet (UnsupportedError) is a refusal of its rows.
      if (!(err instanceof UnsupportedError)) throw err;
      e = { refused: true as const, constraint: 'engine' as const, reason: err.message.split('\n')[0]! };
    }
    if (isRefusal(e)) r.refused = `${e.constraint}: ${e.reason}`;
    else {
      const { ttftMs: mt, tpotMs: mp } = measuredMeans(row);
      if (mt > 0) r.ttft = [e.metrics.ttftMs, mt];
      r.ttftParts = e.ttftParts;
      r.concurrency = e.metrics.concurrency;
      r.gpus = e.metrics.gpus;
      if (mp > 0) r.belowFloor = mp < 0.8 * floorOf(row, inp, e);
      if (mp > 0) r.tpot = [e.metrics.tpotMs, mp];
      // Throughput implied by the measured means at the same concurrency (closed loop).
      const osl = Number(row.osl);
      if (mt > 0 && mp > 0) {
        const measTps = (e.metrics.concurrency * osl) / ((mt + (osl - 1) * mp) / 1000) / e.metrics.gpus;
        r.thr = [e.metrics.tokPerSPerGpu, measTps];
      }
    }
    out.push(r);
  }
  return out;
}

/** Everything an estimate reads from a row: its columns but the id and the measurements, and of its source the concurrency and whether the planner generated it. */
function inputKey(row: Row): string {
  const { id: _id, silicon_data_source: src, ...recorded } = withoutMeasurements(row);
  return JSON.stringify([recorded, rowConcurrency(row) ?? null, /config_id=/.test(src ?? '')]);
}

/** HBM floor of the row's decode step at the running batch its clients allow (per decode instance). */
function floorOf(row: Row, inp: RowInputs, e: Estimate): number {
  const dt = rowDtypes(row, inp.model);
  const ctx: EngineContext = {
    model: inp.model, system: inp.system, backend: inp.backend, version: inp.version, perf: inp.perf,
    gemmDtype: dt.gemmDtype, moeDtype: dt.moeDtype, kvDtype: dt.kvDtype,
    workload: { isl: Number(row.isl), osl: Number(row.osl), prefix: 0 },
  };
  const kvMid = Number(row.isl) + Number(row.osl) / 2;
  if (e.mode === 'agg') {
    const seqs = Math.min(e.metrics.concurrency / e.replicas, e.config.batchSize);
    return decodeFloorMs(ctx, e.config, Math.max(1, Math.min(seqs, e.memory.maxSequences * 2)), kvMid);
  }
  const d = e.config.decode;
  const seqs = Math.min(e.metrics.concurrency / d.workers, d.batchSize);
  return decodeFloorMs(ctx, d, Math.max(1, seqs), kvMid);
}

const PREC: Record<string, string> = { fp16: 'bf16', bf16: 'bf16', fp8: 'fp8', fp4: 'fp4' };

async function runOverview(rows: Row[], perfData?: string): Promise<Result[]> {
  const out: Result[] = [];
  for (const row of rows) {
    if (!/concurrency=unbounded/.test(row.notes) || !(Number(row.throughput_tok_s_per_gpu) > 0)) continue;
    if (!row.osl || !row.isl) continue;
    const r: Result = {
      source: 'overview', system: row.hardware, backend: 'trtllm', family: '?', kind: '?', mode: 'agg-maxload',
      label: `${row.model} ${row.precision} gpus=${row.gpus} tp=${row.tp} pp=${row.pp} ep=${row.ep} ${row.isl}x${row.osl} ${row.notes}`,
    };
    const prec = PREC[row.precision] ?? row.precision;
    const q = prec === 'fp4' ? 'nvfp4' : prec === 'fp8' ? 'fp8' : '';
    const devLike: Row = {
      model_path: row.model, system: row.hardware, backend: 'trtllm', backend_version: '', mode: 'agg', precision: prec,
      gemm_quant_mode: q, moe_quant_mode: q, isl: row.isl, osl: row.osl,
    };
    const inp = await resolveRowInputs(devLike, perfData);
    if ('refused' in inp) {
      r.refused = inp.reason;
      r.family = inp.family ?? `other:${row.model}`;
      out.push(r);
      continue;
    }
    r.family = inp.model.family;
    r.kind = inp.model.moe ? 'moe' : 'dense';
    r.system = inp.system.name;
    const gpus = Number(row.gpus) || 1;
    const par = /parallel=([A-Z]+)(\d+)/.exec(row.notes);
    const adp = /attention_dp=True/.test(row.notes);
    let tp = Number(row.tp) || 1;
    const pp = Number(row.pp) || 1;
    let dp = 1;
    if (adp && par) {
      dp = Number(par[2]);
      tp = Math.max(1, gpus / pp / dp);
    }
    const ep = inp.model.moe ? Number(row.ep) || (adp ? tp * dp : 1) : 1;
    const moeEp = Math.min(ep, tp * dp);
    const dt = rowDtypes(devLike, inp.model);
    const ctx: EngineContext = {
      model: inp.model, system: inp.system, backend: 'trtllm', version: inp.version, perf: inp.perf,
      gemmDtype: dt.gemmDtype, moeDtype: dt.moeDtype, kvDtype: dt.kvDtype,
      workload: { isl: Number(row.isl), osl: Number(row.osl), prefix: 0 },
      // trtllm-bench runs the engine's default MoE backend (CUTLASS).
      engineDefaultMoe: true,
    };
    const prof = backendProfile('trtllm', inp.version, inp.system.gpu);
    // Max load: as many sequences as the KV cache holds, up to the engine's batch cap.
    const base = { tp, pp, dp, moeTp: (tp * dp) / moeEp, moeEp, maxNumTokens: prof.maxNumTokens };
    const probe = estimateAgg(ctx, { ...base, batchSize: 1 });
    if (isRefusal(probe)) {
      r.refused = `${probe.constraint}: ${probe.reason}`;
      out.push(r);
      continue;
    }
    const batch = Math.max(1, Math.min(prof.maxBatchSize, probe.memory.maxSequences));
    const e = estimateAgg(ctx, { ...base, batchSize: batch }, { concurrency: batch });
    if (isRefusal(e)) r.refused = `${e.constraint}: ${e.reason}`;
    else r.thr = [e.metrics.tokPerSPerGpu, Number(row.throughput_tok_s_per_gpu)];
    out.push(r);
  }
  return out;
}

/** MAPE, median absolute and median signed (bias) % error. */
function stats(errs: number[]): { n: number; mape: number; medae: number; bias: number } {
  const n = errs.length;
  if (!n) return { n: 0, mape: NaN, medae: NaN, bias: NaN };
  const abs = errs.map(Math.abs).sort((a, b) => a - b);
  const s = [...errs].sort((a, b) => a - b);
  return { n, mape: abs.reduce((a, b) => a + b, 0) / n, medae: quantile(abs, 0.5), bias: quantile(s, 0.5) };
}

/** The value at quantile p of sorted values (nearest rank). */
function quantile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(p * (sorted.length - 1))))]!;
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const signed = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(1)}` : '-');

/** Upper bounds of the concurrency bands of `loadTable`. */
const LOAD_BANDS = [4, 16, 64, 256, Infinity];

/**
 * Error by load: median signed % error (positive = predicted above measured) and MAPE of the agg dev rows per
 * concurrency band, so a bias that grows with load shows instead of averaging out.
 */
function loadTable(results: Result[]): void {
  console.log('\n## agg dev rows by concurrency: median signed % error (+ = predicted above measured) and MAPE');
  console.log('| group | rows | TTFT signed med | TTFT MAPE | TPOT signed med | TPOT MAPE |');
  console.log('|---|---:|---:|---:|---:|---:|');
  const label = (i: number) => (i === LOAD_BANDS.length - 1 ? `>${LOAD_BANDS[i - 1]}` : `${i === 0 ? 1 : LOAD_BANDS[i - 1]! + 1}-${LOAD_BANDS[i]}`);
  const rows = results.filter((r) => r.mode === 'agg' && r.concurrency !== undefined && r.ttft && r.tpot);
  // Keyed by band index so the bands print in order of load.
  for (const [k, rs] of groupBy(rows, (r) => `${r.kind}|${LOAD_BANDS.findIndex((hi) => r.concurrency! <= hi)}`)) {
    const [kind, band] = k.split('|');
    const t = stats(rs.map((r) => pct(...r.ttft!)));
    const p = stats(rs.map((r) => pct(...r.tpot!)));
    console.log(`| ${kind} agg, ${label(Number(band))} clients | ${rs.length} | ${signed(t.bias)} | ${f1(t.mape)} | ${signed(p.bias)} | ${f1(p.mape)} |`);
  }
}

/** Items by key, keys sorted. */
export function groupBy<T>(items: T[], key: (x: T) => string): [string, T[]][] {
  const groups = new Map<string, T[]>();
  for (const x of items) {
    const k = key(x);
    const g = groups.get(k);
    if (g) g.push(x);
    else groups.set(k, [x]);
  }
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function table(title: string, results: Result[], key: (r: Result) => string): void {
  console.log(`\n## ${title}`);
  console.log('| group | rows | refused | TTFT MAPE | TTFT med | TPOT MAPE | TPOT med | thr MAPE | thr med |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [k, rs] of groupBy(results, key)) {
    const ok = rs.filter((r) => !r.refused);
    const t = stats(ok.filter((r) => r.ttft).map((r) => pct(...r.ttft!)));
    const p = stats(ok.filter((r) => r.tpot).map((r) => pct(...r.tpot!)));
    const h = stats(ok.filter((r) => r.thr).map((r) => pct(...r.thr!)));
    console.log(`| ${k} | ${rs.length} | ${rs.length - ok.length} | ${f1(t.mape)} | ${f1(t.medae)} | ${f1(p.mape)} | ${f1(p.medae)} | ${f1(h.mape)} | ${f1(h.medae)} |`);
  }
}

/**
 * MAPE of the best single prediction per configuration (rows measured alike): for measurements m it is the median
 * of m weighted by 1/m, which minimises the sum of |p - m| / m. Configurations measured once cost nothing.
 */
function bestSingleMape(configs: Result[][], m: 'ttft' | 'tpot'): number {
  let cost = 0;
  let n = 0;
  for (const same of configs) {
    const s = same.filter((r) => r[m]).map((r) => r[m]![1]).sort((a, b) => a - b);
    if (!s.length) continue;
    n += s.length;
    const half = s.reduce((a, x) => a + 1 / x, 0) / 2;
    let acc = 0;
    const p = s.find((x) => (acc += 1 / x) >= half)!;
    cost += s.reduce((a, x) => a + Math.abs(p - x) / x, 0);
  }
  return n ? (100 * cost) / n : NaN;
}

/** Clients up to which a prompt rarely waits for another: TTFT is the request path and the prefill. */
const FEW_CLIENTS = 8;

/** The columns a result's estimate read (its row without id, source and measurements). */
function recordedRow(r: Result): Row {
  return (JSON.parse(r.inputs ?? '[{}]') as [Row])[0];
}

/** A row's recorded configuration with its output length set aside (key), and that length. */
function promptConfig(inputs: string): { key: string; osl: unknown } {
  const [recorded, ...rest] = JSON.parse(inputs) as [Record<string, unknown>, ...unknown[]];
  const { osl, ...prompt } = recorded;
  return { key: JSON.stringify([prompt, ...rest]), osl };
}

/**
 * The lowest MAPE any estimator can reach on a group's rows when its prediction is a function of what the rows
 * record (rows of one recorded configuration get one prediction), and how well the runs agree with themselves
 * where the output length cannot matter: agg TTFT at a few clients of configurations run at several output lengths;
 * then low-load disagg TTFT against the most the recorded load could take (lowLoadDisaggCeiling).
 */
function recordedFloor(results: Result[], key: (r: Result) => string): void {
  console.log('\n## What the recorded columns allow: MAPE of the best single prediction per recorded configuration');
  console.log('| group | rows | configurations measured more than once (rows) | TTFT floor | TPOT floor |');
  console.log('|---|---:|---:|---:|---:|');
  const estimated = results.filter((x) => !x.refused && x.inputs);
  for (const [k, rs] of groupBy(estimated, key)) {
    const configs = groupBy(rs, (r) => r.inputs!).map(([, same]) => same);
    const repeated = configs.filter((same) => same.length > 1);
    console.log(`| ${k} | ${rs.length} | ${repeated.length} (${repeated.reduce((a, same) => a + same.length, 0)}) | ${f1(bestSingleMape(configs, 'ttft'))} | ${f1(bestSingleMape(configs, 'tpot'))} |`);
  }
  const few = estimated
    .filter((r) => r.mode === 'agg' && r.ttft && (r.concurrency ?? Infinity) <= FEW_CLIENTS)
    .map((r) => ({ r, ...promptConfig(r.inputs!) }));
  const prompts = groupBy(few, (x) => x.key)
    .filter(([, same]) => new Set(same.map((x) => x.osl)).size > 1)
    .map(([, same]) => same.map((x) => x.r));
  const rows = prompts.flat();
  const ours = stats(rows.map((r) => pct(...r.ttft!))).mape;
  console.log(`\nagg TTFT at ${FEW_CLIENTS} clients or fewer, configurations run at several output lengths (which a prompt's TTFT ` +
    `hardly depends on at that load): ${prompts.length} configurations, ${rows.length} rows; the runs' own spread ` +
    `(best single prediction per configuration) ${f1(bestSingleMape(prompts, 'ttft'))}%, our TTFT MAPE on them ${f1(ours)}%`);
  lowLoadDisaggCeiling(estimated);
}

/** Clients up to which a disagg run's TTFT has a ceiling from its own load: every other client's prompt ahead of it. */
const FEW_DISAGG_CLIENTS = 16;

/**
 * Disagg TTFT at low load against the most serving the recorded load could take: the request path, the waits
 * before the prefill and after it as priced, and every client's prompt prefilled one at a time ahead of this one.
 * Runs above that ceiling measure something other than serving their recorded load (a deployment the row leaves
 * out, or a wait outside the benchmark's steady state), which no estimate of the recorded load can follow.
 */
function lowLoadDisaggCeiling(estimated: Result[]): void {
  const disagg = estimated.filter((r) => r.mode === 'disagg' && r.ttft);
  const low = disagg.filter((r) => r.ttftParts && (r.concurrency ?? Infinity) <= FEW_DISAGG_CLIENTS);
  if (!low.length) return;
  // The parts sum to the prediction: take its queueing behind other prompts out and every client's prefill in.
  const ceiling = (r: Result): number => {
    const p = r.ttftParts!;
    return r.ttft![0] - p.burst - p.engineQueue + (r.concurrency! - 1) * p.prefill;
  };
  const ratio = low.map((r) => r.ttft![1] / r.ttft![0]).sort((a, b) => a - b);
  const over = low.filter((r) => r.ttft![1] > ceiling(r));
  const worst = Math.max(...over.map((r) => r.ttft![1] / ceiling(r)));
  const points = (rs: Result[]) => rs.reduce((a, r) => a + Math.abs(pct(...r.ttft!)), 0) / disagg.length;
  const q = (p: number) => quantile(ratio, p).toFixed(2);
  console.log(`\ndisagg TTFT at ${FEW_DISAGG_CLIENTS} clients or fewer: ${low.length} rows, measured / predicted p10 / p25 / p50 / p75 / p90 ` +
    `${q(0.1)} / ${q(0.25)} / ${q(0.5)} / ${q(0.75)} / ${q(0.9)}; ${over.length} rows measure more than serving the recorded load could take ` +
    `with every client's prompt prefilled ahead of theirs one at a time${over.length ? ` (up to ${worst.toFixed(0)}x that)` : ''}, ` +
    `${f1(points(over))} of the ${f1(points(disagg))} points of TTFT MAPE of all disagg rows`);
}

/**
 * How much a group's MAPE moves with the rows it is measured on: the MAPE of 200 fixed half-samples (p5 / p50 /
 * p95), i.e. what a held-out set about half the size of the dev rows would likely measure.
 */
function samplingSpread(results: Result[], key: (r: Result) => string): void {
  const SAMPLES = 200;
  console.log(`\n## MAPE over ${SAMPLES} half-samples of the dev rows (p5 / p50 / p95): what a held-out set half their size would likely measure`);
  console.log('| group | TTFT | TPOT |');
  console.log('|---|---:|---:|');
  const mape = (rs: Result[], m: 'ttft' | 'tpot'): number => {
    const errs = rs.filter((r) => r[m]).map((r) => Math.abs(pct(...r[m]!)));
    return errs.length ? errs.reduce((a, b) => a + b, 0) / errs.length : NaN;
  };
  const spread = (xs: number[]): string => {
    if (xs.some((x) => !Number.isFinite(x))) return '-';
    const s = [...xs].sort((a, b) => a - b);
    return `${f1(s[SAMPLES / 20]!)} / ${f1(s[SAMPLES / 2]!)} / ${f1(s[SAMPLES - SAMPLES / 20]!)}`;
  };
  for (const [k, rs] of groupBy(results.filter((x) => !x.refused), key)) {
    const ttft: number[] = [];
    const tpot: number[] = [];
    for (let s = 0; s < SAMPLES; s++) {
      const draw = rng(s + 1);
      const half = rs.filter(() => draw() < 0.5);
      ttft.push(mape(half, 'ttft'));
      tpot.push(mape(half, 'tpot'));
    }
    console.log(`| ${k} | ${spread(ttft)} | ${spread(tpot)} |`);
  }
}

type Metric = 'ttft' | 'tpot' | 'thr';
const METRICS: Metric[] = ['ttft', 'tpot', 'thr'];
const BAND_METRIC: Record<Metric, keyof ErrorGroup> = { ttft: 'ttft', tpot: 'tpot', thr: 'throughput' };
/** What a band claims: this share of measured runs left out of its fit falls inside. */
const BAND_COVERAGE = 0.8;
/** Lower quantiles tried: the band spans [q, 1 - q] of its group's errors. */
const QUANTILE_GRID = [0.1, 0.09, 0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.02, 0.01];
/** Rows a group needs before its own spread is used (else a coarser group's). */
const MIN_ROWS_GRID = [8, 16, 32, 64, 128];
const CALIBRATION_SEED = 1;
const CHECK_SEED = 2;

type Fit = Record<Metric, BandFit>;
/** The fit of each band table: '*' (shared) and the kinds and modes with a table of their own. */
type Plan = Record<string, Fit>;
const classOf = (r: Result) => `${r.kind} ${r.mode}`;

/** The band groups of a row, from the finest (its group at its load) to the coarsest, as bandsFor looks them up. */
export function keysOf(r: Result): string[] {
  return groupKeys(r.system, r.backend, r.family, r.mode, loadOf(r.concurrency, r.gpus));
}

/** An error band table from `results`: the q and 1 - q quantiles of the signed % error per group and metric. */
function bandsTable(results: Result[], fit: Fit): BandTable {
  const acc = new Map<string, Record<Metric, number[]>>();
  for (const r of results) {
    if (r.refused || r.source !== 'dev') continue;
    for (const k of keysOf(r)) {
      if (!acc.has(k)) acc.set(k, { ttft: [], tpot: [], thr: [] });
      const a = acc.get(k)!;
      for (const m of METRICS) if (r[m]) a[m].push(pct(...r[m]!));
    }
  }
  const groups: Record<string, ErrorGroup> = {};
  const round = (x: number) => Math.round(x * 10) / 10;
  for (const [k, a] of [...acc.entries()].sort()) {
    const g: ErrorGroup = {};
    for (const m of METRICS) {
      if (a[m].length < 3) continue;
      const s = [...a[m]].sort((x, y) => x - y);
      g[BAND_METRIC[m]] = { n: s.length, low: round(quantile(s, fit[m].quantile)), high: round(quantile(s, 1 - fit[m].quantile)) };
    }
    if (Object.keys(g).length) groups[k] = g;
  }
  return { fit: { ttft: fit.ttft, tpot: fit.tpot, throughput: fit.thr }, groups };
}

/** The bands file of `plan`: the shared table from all rows, a class's own table from its rows only. */
export function bandsFile(results: Result[], plan: Plan): ErrorBandsFile {
  const tables = Object.fromEntries(
    Object.entries(plan).map(([c, fit]) => [c, bandsTable(c === '*' ? results : results.filter((r) => classOf(r) === c), fit)]),
  );
  return {
    description:
      'Signed % error (predicted - measured) / measured of end-to-end estimates per group (system|backend|family|mode, * = any): ' +
      'low and high are its quantiles q and 1 - q; per metric, fit gives q and the rows a group needs before its own spread is ' +
      `used, chosen as the narrowest bands that hold ${100 * BAND_COVERAGE}% of the dev rows left out of their fit. Table "*" ` +
      'serves every kind and mode and holds that in each; a kind and mode (e.g. "moe agg") whose own table is narrower ' +
      'at that coverage has one, fitted on its rows. Generated by npm run bench:e2e -- --write-bands.',
    tables,
  };
}

/** Rows inside the band an estimate would show from the table `tableOf` gives it (the lookup of bandsFor), and their mean log width. */
function inside(tableOf: (r: Result) => BandTable, rs: Result[], m: Metric): { inside: number; n: number; logWidth: number } {
  const c = { inside: 0, n: 0, logWidth: 0 };
  for (const r of rs) {
    if (!r[m]) continue;
    const [pred, meas] = r[m]!;
    const b = band(pred, statFor(tableOf(r), keysOf(r), BAND_METRIC[m]));
    c.n++;
    if (meas >= b.low && meas <= b.high) c.inside++;
    c.logWidth += Math.log(b.high / b.low);
  }
  return c;
}

const halves = new Map<number, WeakMap<Result, number>>();

/**
 * A stable half of the rows per seed: identical recorded configurations fall in the same half. Hashed once per
 * row and seed (the calibration asks for every candidate band).
 */
function halfOf(r: Result, seed: number): number {
  let bySeed = halves.get(seed);
  if (!bySeed) halves.set(seed, (bySeed = new WeakMap()));
  let half = bySeed.get(r);
  if (half === undefined) {
    let h = 2166136261 ^ seed;
    for (const ch of r.inputs ?? r.label ?? '') h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
    bySeed.set(r, (half = (h >>> 0) % 2));
  }
  return half;
}

/** Two-fold: `fit(rows)` on each half's complement, so that fold h serves the rows of half h. */
function folds<T>(rows: Result[], seed: number, fit: (rows: Result[]) => T): T[] {
  return [0, 1].map((h) => fit(rows.filter((r) => halfOf(r, seed) !== h)));
}

/** Kinds and modes (dense agg, MoE disagg, ...) with fewer dev rows than this are too few to hold the bands to. */
const CLASS_MIN_ROWS = 100;

/**
 * Per metric, the narrowest bands of one table fitted on `rows` (mean log width over the rows held out of their
 * fit) that hold BAND_COVERAGE of the held-out rows in each of `classes`; the widest tried when none does.
 */
function calibrateTable(rows: Result[], classes: Result[][]): { fit: Fit; width: Record<Metric, number> } {
  const best = {} as Record<Metric, { fit: BandFit; width: number } | undefined>;
  for (const quantile of QUANTILE_GRID) {
    const byQuantile = { quantile, minRows: 0 };
    const byHalf = folds(rows, CALIBRATION_SEED, (rs) => bandsTable(rs, { ttft: byQuantile, tpot: byQuantile, thr: byQuantile }));
    for (const minRows of MIN_ROWS_GRID) {
      const fit = { quantile, minRows };
      // The groups depend on the quantile only; the row threshold acts at lookup.
      const tables = byHalf.map((t) => ({ ...t, fit: { ttft: fit, tpot: fit, throughput: fit } }));
      const tableOf = (r: Result) => tables[halfOf(r, CALIBRATION_SEED)]!;
      for (const m of METRICS) {
        const c = inside(tableOf, rows, m);
        const holds = classes.every((rs) => {
          const k = inside(tableOf, rs, m);
          return k.inside >= BAND_COVERAGE * k.n;
        });
        if (holds && (!best[m] || c.logWidth < best[m]!.width)) best[m] = { fit, width: c.logWidth };
      }
    }
  }
  const widest = { fit: { quantile: QUANTILE_GRID[QUANTILE_GRID.length - 1]!, minRows: MIN_ROWS_GRID[MIN_ROWS_GRID.length - 1]! }, width: Infinity };
  const pick = (m: Metric) => best[m] ?? widest;
  return {
    fit: { ttft: pick('ttft').fit, tpot: pick('tpot').fit, thr: pick('thr').fit },
    width: { ttft: pick('ttft').width, tpot: pick('tpot').width, thr: pick('thr').width },
  };
}

/**
 * The band tables: one shared table that holds BAND_COVERAGE of held-out rows in every kind and mode with
 * CLASS_MIN_ROWS rows, and a table of its own for a kind and mode whose own bands, holding the same, are
 * narrower (summed over the metrics) on its rows than the shared ones.
 */
export function planBands(rows: Result[]): Plan {
  const classes = groupBy(rows, classOf).filter(([, rs]) => rs.length >= CLASS_MIN_ROWS);
  const shared = calibrateTable(rows, classes.map(([, rs]) => rs)).fit;
  const sharedByHalf = folds(rows, CALIBRATION_SEED, (rs) => bandsTable(rs, shared));
  const plan: Plan = { '*': shared };
  for (const [c, rs] of classes) {
    const own = calibrateTable(rs, [rs]);
    const n = (m: Metric) => rs.filter((r) => r[m]).length;
    const sharedWidth = METRICS.reduce((a, m) => a + inside((r) => sharedByHalf[halfOf(r, CALIBRATION_SEED)]!, rs, m).logWidth / n(m), 0);
    const ownWidth = METRICS.reduce((a, m) => a + own.width[m] / n(m), 0);
    if (ownWidth < sharedWidth) plan[c] = own.fit;
  }
  return plan;
}

/**
 * Whether the bands say what they claim: the share of dev rows inside their band, with bands from all rows
 * (in sample) and from the other half of the rows only, on a split other than the calibration's (held out).
 */
function bandCoverage(rows: Result[], plan: Plan, key: (r: Result) => string): void {
  const fits = Object.entries(plan).map(([c, fit]) => `${c === '*' ? 'shared' : c}: ${METRICS.map((m) => `${m} q ${fit[m].quantile}, ${fit[m].minRows}+ rows`).join('; ')}`);
  console.log(`\n## error bands (${fits.join(' | ')}): share of dev rows inside their band, in sample / held out`);
  console.log('| group | rows | TTFT | TPOT | thr |');
  console.log('|---|---:|---:|---:|---:|');
  const all = bandsFile(rows, plan);
  const byHalf = folds(rows, CHECK_SEED, (rs) => bandsFile(rs, plan));
  const inSample = (r: Result) => tableFor(all, r.kind, r.mode);
  const held = (r: Result) => tableFor(byHalf[halfOf(r, CHECK_SEED)]!, r.kind, r.mode);
  const share = (c: { inside: number; n: number }) => (c.n ? `${Math.round((100 * c.inside) / c.n)}%` : '-');
  for (const [k, rs] of groupBy(rows, key)) {
    const cells = METRICS.map((m) => `${share(inside(inSample, rs, m))} / ${share(inside(held, rs, m))}`);
    console.log(`| ${k} | ${rs.length} | ${cells.join(' | ')} |`);
  }
  const widths = METRICS.map((m) => {
    const c = inside(inSample, rows, m);
    return `${m} x${Math.exp(c.logWidth / c.n).toFixed(2)}`;
  });
  console.log(`\nBand width (high / low, geometric mean over the rows): ${widths.join(', ')}`);
  // Coverage where the error may differ: per band group and per load, held out; median width relative to the prediction.
  const medianWidth = (rs: Result[], m: Metric): string => {
    const w = rs.filter((r) => r[m]).map((r) => {
      const [pred] = r[m]!;
      const b = band(pred, statFor(held(r), keysOf(r), BAND_METRIC[m]));
      return (b.high - b.low) / pred;
    }).sort((a, b) => a - b);
    return w.length ? `${Math.round(100 * quantile(w, 0.5))}%` : '-';
  };
  const perGroup = (title: string, groupKey: (r: Result) => string, minRows: number) => {
    console.log(`\n## 80% band coverage held out, ${title} (groups of ${minRows}+ rows; target 75-85%), and median band width / prediction`);
    console.log('| group | rows | TTFT | TPOT | thr | TTFT width | TPOT width | thr width |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const [k, rs] of groupBy(rows, groupKey)) {
      if (rs.length < minRows) continue;
      console.log(`| ${k} | ${rs.length} | ${METRICS.map((m) => share(inside(held, rs, m))).join(' | ')} | ${METRICS.map((m) => medianWidth(rs, m)).join(' | ')} |`);
    }
  };
  perGroup('per band group (system, engine, family, mode)', (r) => `${r.system} ${r.backend} ${r.family} ${r.mode}`, 30);
  perGroup('per engine and mode', (r) => `${r.backend} ${r.mode}`, 30);
  perGroup('per load', (r) => `${r.mode}, ${r.concurrency === undefined ? '?' : r.concurrency <= 8 ? '1-8' : r.concurrency <= 64 ? '9-64' : '65+'} clients`, 30);
}

async function main(): Promise<void> {
  if (!existsSync(DEV)) {
    console.log(`reference data not found at ${REF}; nothing to measure`);
    return;
  }
  const args = process.argv.slice(2);
  // --perf-data DIR: price ops from another source (e.g. the measured kernel tables) to separate the
  // serving model's error from the tables' error.
  const pi = args.indexOf('--perf-data');
  const perfData = pi >= 0 ? args[pi + 1] : undefined;
  const t0 = performance.now();
  const { rows: dev, restated } = asRunsTheyRestate(parseCsv(readFileSync(DEV, 'utf8')).rows.map(releaseOfMeasurement));
  const devRes = await runDev(dev, perfData);
  const t1 = performance.now();
  const ov = existsSync(OVERVIEW) ? await runOverview(parseCsv(readFileSync(OVERVIEW, 'utf8')).rows, perfData) : [];
  const all = [...devRes, ...ov];
  console.log(`# bench:e2e  (${dev.length} dev rows, ${restated} of them priced as the InferenceX run they restate; ${((t1 - t0) / 1000).toFixed(1)} s; ${ov.length} perf-overview max-load rows${perfData ? `; perf data ${perfData}` : ''})`);
  const supported = devRes.filter((r) => !r.family.startsWith('other:') && !/^unknown system/.test(r.refused ?? ''));
  table('dev rows by kind and mode (bundled families)', supported, (r) => `${r.kind} ${r.mode}`);
  samplingSpread(supported, (r) => `${r.kind} ${r.mode}`);
  recordedFloor(supported, (r) => `${r.kind} ${r.mode}`);
  loadTable(supported);
  const fitted = supported.filter((r) => !r.refused);
  const bandPlan = planBands(fitted);
  bandCoverage(fitted, bandPlan, classOf);
  const consistent = supported.filter((r) => !r.belowFloor);
  console.log(`\n${supported.length - consistent.length} estimated rows report a TPOT below 0.8x the HBM floor of their recorded configuration ` +
    '(weights + KV read once per step: speculative decoding, or a batch/parallelism not as recorded). Without them:');
  table('dev rows by kind and mode, rows consistent with their recorded configuration', consistent, (r) => `${r.kind} ${r.mode}`);
  table('disagg dev rows by whether they record their deployment (worker counts)', supported.filter((r) => r.mode === 'disagg'),
    (r) => `${r.kind} disagg, ${workersRecorded(recordedRow(r)) ? 'worker counts recorded' : 'worker counts left out'}`);
  table('dev rows by speculative decoding (rows with and without MTP, as set by withSourceKnowledge)', supported, (r) => `${r.kind} ${r.mode}, ${r.speculation ?? 'no speculation'}`);
  table('MoE dev rows by where their speculative decoding is known from (bench/dev-sources.ts)', supported.filter((r) => r.kind === 'moe'),
    (r) => `${r.mode}, ${r.speculationBasis ?? 'assumed'}, ${(r.speculation ?? 'no speculation') === 'no speculation' ? 'no speculation' : 'MTP'}`);
  // MTP rows are those whose source says how they drafted; rows priced with MTP by a source rule alone (their
  // source records neither speculation nor deployment) are a group of their own.
  table('dev rows with and without speculative decoding', supported, (r) =>
    (r.speculation ?? 'no speculation') === 'no speculation' ? 'without speculation'
      : r.speculationBasis === 'assumed' ? 'MTP assumed by source rule (not recorded)' : 'with MTP (as recorded or configured by the source)');
  table('dev rows by system', supported, (r) => r.system);
  table('dev rows by backend and mode', supported, (r) => `${r.backend} ${r.mode}`);
  table('dev rows by model family and mode', devRes, (r) => `${r.family} ${r.mode}`);
  table('TRT-LLM perf overview, max-load throughput, by family', ov, (r) => `${r.family}`);
  table('TRT-LLM perf overview, max-load throughput, by system', ov.filter((r) => !r.family.startsWith('other:')), (r) => r.system);
  const ovOk = ov.filter((r) => r.thr);
  const ovErr = ovOk.map((r) => Math.abs(pct(...r.thr!)));
  console.log(`\nTRT-LLM perf overview max-load throughput, all estimated rows: n ${ovOk.length}, MAPE ${f1(ovErr.reduce((a, b) => a + b, 0) / Math.max(1, ovErr.length))}%`);
  const bundled = all.filter((r) => !r.family.startsWith('other:'));
  const onSystems = bundled.filter((r) => !/^unknown system/.test(r.refused ?? ''));
  const refused = onSystems.filter((r) => r.refused);
  console.log(`\nRefused: ${refused.length} of ${onSystems.length} rows of bundled families on supported systems (${f1((100 * refused.length) / Math.max(1, onSystems.length))}%); ` +
    `${bundled.length - onSystems.length} rows on systems without a spec (${[...new Set(bundled.filter((r) => /^unknown system/.test(r.refused ?? '')).map((r) => r.system))].join(', ')}); ` +
    `${all.length - bundled.length} rows of other architectures refused.`);
  const reasons = new Map<string, number>();
  for (const r of all.filter((x) => x.refused)) {
    const k = r.refused!.replace(/\d+(\.\d+)?/g, 'N').slice(0, 110);
    reasons.set(k, (reasons.get(k) ?? 0) + 1);
  }
  for (const [k, v] of [...reasons.entries()].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${v}\t${k}`);
  // --rows FILE: one JSON line per row (label, group keys, predicted and measured pairs) for slicing.
  const ri = args.indexOf('--rows');
  if (ri >= 0 && args[ri + 1]) {
    writeFileSync(args[ri + 1], all.map((r) => JSON.stringify(r)).join('\n') + '\n');
    console.log(`\nwrote ${args[ri + 1]}`);
  }
  if (args.includes('--write-bands') && !perfData) {
    const p = dataPath(BANDS_FILE);
    writeFileSync(p, JSON.stringify(bandsFile(fitted, bandPlan), null, 1) + '\n');
    console.log(`\nwrote ${p}`);
  }
}

// Run only as a script: bench/ranking.ts imports the row pricing and band fitting.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
