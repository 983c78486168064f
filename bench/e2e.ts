// End-to-end accuracy: predicted TTFT / TPOT / throughput against measured serving runs.
//   npm run bench:e2e [-- --write-bands] [-- --rows out.jsonl]
// Reads ../shared/reference/aic-silicon/e2e/dev.csv and the max-load rows of
// ../shared/reference/ground-truth/trtllm_perf_overview.csv; prints MAPE and median |%err| per group, the
// signed error of the agg rows by concurrency, the refusal share and reasons, and (with --write-bands) writes
// data/error-bands.json: aggregate error percentiles per group, never the rows.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { estimateAgg, isRefusal } from '../src/engine/index.js';
import { decodeFloorMs } from '../src/engine/memory.js';
import { BANDS_FILE, groupKeys, type ErrorBandsFile, type ErrorGroup, type ErrorStat } from '../src/engine/bands.js';
import { backendProfile } from '../src/engine/backends.js';
import { estimateRow, parseCsv, rowConcurrency, rowDtypes, type Row, type RowInputs } from '../src/engine/rows.js';
import { resolveRowInputs } from '../src/cli/context.js';
import type { EngineContext, Estimate, TtftParts } from '../src/engine/types.js';
import { dataPath, referencePath } from '../src/util/paths.js';
import { measuredMeans, withoutMeasurements } from '../test/support/e2e-reference.js';
import { rng } from '../src/util/rng.js';

const REF = referencePath();
const DEV = join(REF, 'aic-silicon', 'e2e', 'dev.csv');
const OVERVIEW = join(REF, 'ground-truth', 'trtllm_perf_overview.csv');

interface Result {
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
}

const pct = (pred: number, meas: number) => (100 * (pred - meas)) / meas;

async function runDev(rows: Row[], perfData?: string): Promise<Result[]> {
  const out: Result[] = [];
  for (const row of rows) {
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
    const e = estimateRow(row, inp);
    if (isRefusal(e)) r.refused = `${e.constraint}: ${e.reason}`;
    else {
      const { ttftMs: mt, tpotMs: mp } = measuredMeans(row);
      if (mt > 0) r.ttft = [e.metrics.ttftMs, mt];
      r.ttftParts = e.ttftParts;
      r.concurrency = e.metrics.concurrency;
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

function stats(errs: number[]): { n: number; mape: number; medae: number; p10: number; p90: number; bias: number } {
  const n = errs.length;
  if (!n) return { n: 0, mape: NaN, medae: NaN, p10: NaN, p90: NaN, bias: NaN };
  const abs = errs.map(Math.abs).sort((a, b) => a - b);
  const s = [...errs].sort((a, b) => a - b);
  const q = (arr: number[], p: number) => arr[Math.min(arr.length - 1, Math.max(0, Math.round(p * (arr.length - 1))))];
  return {
    n,
    mape: abs.reduce((a, b) => a + b, 0) / n,
    medae: q(abs, 0.5),
    p10: q(s, 0.1),
    p90: q(s, 0.9),
    bias: q(s, 0.5),
  };
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
function groupBy<T>(items: T[], key: (x: T) => string): [string, T[]][] {
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
 * The lowest MAPE any estimator can reach on a group's rows when its prediction is a function of what the rows
 * record: rows of one recorded configuration get one prediction, and the best one for their measurements m is the
 * median of m weighted by 1/m (it minimises the sum of |p - m| / m). Configurations measured once cost nothing.
 */
function recordedFloor(results: Result[], key: (r: Result) => string): void {
  console.log('\n## What the recorded columns allow: MAPE of the best single prediction per recorded configuration');
  console.log('| group | rows | configurations measured more than once (rows) | TTFT floor | TPOT floor |');
  console.log('|---|---:|---:|---:|---:|');
  const floor = (configs: Result[][], m: 'ttft' | 'tpot'): number => {
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
  };
  for (const [k, rs] of groupBy(results.filter((x) => !x.refused && x.inputs), key)) {
    const configs = groupBy(rs, (r) => r.inputs!).map(([, same]) => same);
    const repeated = configs.filter((same) => same.length > 1);
    console.log(`| ${k} | ${rs.length} | ${repeated.length} (${repeated.reduce((a, same) => a + same.length, 0)}) | ${f1(floor(configs, 'ttft'))} | ${f1(floor(configs, 'tpot'))} |`);
  }
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

function bandsFile(results: Result[]): ErrorBandsFile {
  const acc = new Map<string, { ttft: number[]; tpot: number[]; throughput: number[] }>();
  for (const r of results) {
    if (r.refused || r.source !== 'dev') continue;
    for (const k of groupKeys(r.system, r.backend, r.family, r.mode)) {
      if (!acc.has(k)) acc.set(k, { ttft: [], tpot: [], throughput: [] });
      const a = acc.get(k)!;
      if (r.ttft) a.ttft.push(pct(...r.ttft));
      if (r.tpot) a.tpot.push(pct(...r.tpot));
      if (r.thr) a.throughput.push(pct(...r.thr));
    }
  }
  const groups: Record<string, ErrorGroup> = {};
  const st = (e: number[]): ErrorStat | undefined => {
    if (e.length < 3) return undefined;
    const s = stats(e);
    return { n: s.n, p10: Math.round(s.p10 * 10) / 10, p90: Math.round(s.p90 * 10) / 10 };
  };
  for (const [k, a] of [...acc.entries()].sort()) {
    const g: ErrorGroup = {};
    const t = st(a.ttft);
    const p = st(a.tpot);
    const h = st(a.throughput);
    if (t) g.ttft = t;
    if (p) g.tpot = p;
    if (h) g.throughput = h;
    if (Object.keys(g).length) groups[k] = g;
  }
  return {
    description: 'Signed % error (predicted - measured) / measured of end-to-end estimates: 10th/90th percentiles per group (system|backend|family|mode, * = any). Generated by npm run bench:e2e -- --write-bands.',
    groups,
  };
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
  const dev = parseCsv(readFileSync(DEV, 'utf8')).rows;
  const devRes = await runDev(dev, perfData);
  const t1 = performance.now();
  const ov = existsSync(OVERVIEW) ? await runOverview(parseCsv(readFileSync(OVERVIEW, 'utf8')).rows, perfData) : [];
  const all = [...devRes, ...ov];
  console.log(`# bench:e2e  (${dev.length} dev rows in ${((t1 - t0) / 1000).toFixed(1)} s; ${ov.length} perf-overview max-load rows${perfData ? `; perf data ${perfData}` : ''})`);
  const supported = devRes.filter((r) => !r.family.startsWith('other:') && !/^unknown system/.test(r.refused ?? ''));
  table('dev rows by kind and mode (bundled families)', supported, (r) => `${r.kind} ${r.mode}`);
  samplingSpread(supported, (r) => `${r.kind} ${r.mode}`);
  recordedFloor(supported, (r) => `${r.kind} ${r.mode}`);
  loadTable(supported);
  const consistent = supported.filter((r) => !r.belowFloor);
  console.log(`\n${supported.length - consistent.length} estimated rows report a TPOT below 0.8x the HBM floor of their recorded configuration ` +
    '(weights + KV read once per step: speculative decoding, or a batch/parallelism not as recorded). Without them:');
  table('dev rows by kind and mode, rows consistent with their recorded configuration', consistent, (r) => `${r.kind} ${r.mode}`);
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
    writeFileSync(p, JSON.stringify(bandsFile(devRes), null, 1) + '\n');
    console.log(`\nwrote ${p}`);
  }
}

await main();
