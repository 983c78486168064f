// Measured-run rows (the column layout of aiconfigurator's e2e CSVs) turned into estimate requests, and
// the batch estimate that appends predictions to them. Used by `configure estimate --from-csv` and bench:e2e.
import type { Backend, Dtype, ModelSpec, SystemSpec } from '../inputs/types.js';
import type { PerfSource } from '../perf/types.js';
import { estimateAgg, estimateDisagg, isRefusal } from './index.js';
import type { AggConfig, DisaggConfig, EngineContext, Estimate, PoolConfig, Refusal, Speculation } from './types.js';
import { backendProfile, type GpuFacts } from './backends.js';
import { engineRelease } from '../inputs/dynamo-runtime.js';
import { compareVersions, onLineAtLeast } from '../util/versions.js';
import { sizeUnrecordedPools, wideEpLayout } from './disagg.js';
import { MAX_NEXTN, parseAcceptRates, resolveSpeculation } from './speculation.js';
import { parse } from 'csv-parse/sync';
import { z } from 'zod';
import { InputError } from '../util/errors.js';
import { quote } from '../util/text.js';

export type Row = Record<string, string>;

/**
 * CSV (quoted fields, CRLF or LF) into header-keyed rows; short rows are padded with empty cells. `lines` holds
 * the file line each row ends on (for messages).
 */
export function parseCsv(text: string): { header: string[]; rows: Row[]; lines: number[] } {
  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    // (The `as unknown`: csv-parse's typings do not model `info: true` records.)
    records = parse(text, {
      bom: true, relax_column_count: true, skip_empty_lines: true, record_delimiter: ['\r\n', '\n', '\r'], info: true,
    }) as unknown as Array<{ record: string[]; info: { lines: number } }>;
  } catch (e) {
    throw new InputError(`CSV: ${(e as Error).message.split('\n')[0]}`);
  }
  const header = records.shift()?.record ?? [];
  const rows = records.map(({ record: r }) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? ''])));
  return { header, rows, lines: records.map((r) => r.info.lines) };
}

// ---- the numbers of a row ----

const POOL_COUNT_COLUMNS = ['batch_size', 'num_workers', 'tp_size', 'pp_size', 'attention_dp_size', 'moe_tp_size', 'moe_ep_size'];

/** Columns read as counts; blank (or 0, as the reference rows write for "not used") means the default. */
export const ROW_COUNT_COLUMNS = [
  'batch_size', 'tp_size', 'pp_size', 'attention_dp_size', 'moe_tp_size', 'moe_ep_size',
  ...POOL_COUNT_COLUMNS.map((c) => `prefill_${c}`),
  ...POOL_COUNT_COLUMNS.map((c) => `decode_${c}`),
] as const;

/** Above this a count or a length is a typo, not a deployment. */
const MAX_CELL = 10_000_000;
/** Longest SGLang --scheduler-recv-interval a row may state (serving recipes use 10 to 30). */
const MAX_RECV_INTERVAL = 1000;

const decimal = /^[+]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const numberText = (v: string) => decimal.test(v.trim()) && Number(v) <= MAX_CELL;
const countCell = z.string().optional().refine((v) => v === undefined || v.trim() === '' || numberText(v), 'a number');
const lengthCell = z.string().refine((v) => numberText(v) && Number(v) >= 1, 'a positive number');

/**
 * The numeric cells of a measured-run row: isl and osl positive numbers, counts blank or non-negative numbers,
 * all at most MAX_CELL; and the optional columns stating speculation and server settings. Anything else ("abc",
 * "-4", "1e400", "NaN") is a malformed row, never a default.
 */
export const rowNumbersSchema = z.object({
  isl: lengthCell,
  osl: lengthCell,
  ...Object.fromEntries(ROW_COUNT_COLUMNS.map((c) => [c, countCell])),
  nextn: z.string().optional().refine((v) => v === undefined || v.trim() === '' || (/^\d+$/.test(v.trim()) && Number(v) <= MAX_NEXTN), 'a draft depth'),
  nextn_accept_rates: z.string().optional().refine((v) => v === undefined || parseAcceptRates(v) !== undefined, 'acceptance rates'),
  kv_cache_dtype: z.string().optional().refine((v) => v === undefined || v.trim() === '' || kvCell(v) !== undefined, 'a KV cache format'),
  scheduler_recv_interval: z.string().optional().refine((v) => v === undefined || v.trim() === '' || (/^\d+$/.test(v.trim()) && Number(v) >= 1 && Number(v) <= MAX_RECV_INTERVAL), 'steps'),
  gpu_memory_fraction: z.string().optional().refine((v) => v === undefined || v.trim() === '' || (decimal.test(v.trim()) && Number(v) > 0 && Number(v) < 1), 'a fraction'),
});

/** Throw an InputError naming `where` (e.g. "file.csv line 7") and the first malformed numeric column of a row. */
export function checkRowNumbers(row: Row, where: string): void {
  const parsed = rowNumbersSchema.safeParse(row);
  if (parsed.success) return;
  const issue = parsed.error.issues[0];
  const col = String(issue.path[0]);
  const v = row[col];
  const want = col === 'isl' || col === 'osl' ? `a positive number up to ${MAX_CELL}`
    : col === 'nextn' ? `blank or a whole number of draft tokens from 0 to ${MAX_NEXTN}`
    : col === 'nextn_accept_rates' ? 'blank or acceptance rates in (0, 1], one per draft position (e.g. "0.85,0.5,0.4")'
    : col === 'kv_cache_dtype' ? `blank (the rule for the row's precision) or one of ${KV_CELLS.join(', ')}`
    : col === 'scheduler_recv_interval' ? `blank or a whole number of steps from 1 to ${MAX_RECV_INTERVAL}`
    : col === 'gpu_memory_fraction' ? 'blank (the engine\'s default) or a fraction between 0 and 1 (exclusive)'
    : `blank or a non-negative number up to ${MAX_CELL}`;
  throw new InputError(`${where}, column "${col}": ${v === undefined ? 'missing' : quote(v)} is not ${want}`);
}

const QUANT: Record<string, Dtype> = {
  fp8: 'fp8', fp8_block: 'fp8_block', nvfp4: 'nvfp4', fp4: 'nvfp4', mxfp4: 'mxfp4', w4a16_mxfp4: 'mxfp4',
  int4_wo: 'int4_wo', int8_wo: 'int8_wo', bf16: 'bfloat16', bfloat16: 'bfloat16', fp16: 'float16', float16: 'float16',
};

/** Formats a KV cache is kept in. */
const KV_FORMATS = new Set<Dtype>(['fp8', 'bfloat16', 'float16']);
/** `kv_cache_dtype` cells: `auto` (the checkpoint's own), the weight-format names of KV formats, and the engines' `fp8_e4m3`. */
const KV_CELLS = ['auto', ...Object.keys(QUANT).filter((k) => KV_FORMATS.has(QUANT[k]!)), 'fp8_e4m3'];

/** The KV format a `kv_cache_dtype` cell names: null for auto, undefined for a cell that names none. */
function kvCell(v: string): Dtype | null | undefined {
  const c = v.trim().toLowerCase();
  if (!KV_CELLS.includes(c)) return undefined;
  return c === 'auto' ? null : QUANT[c === 'fp8_e4m3' ? 'fp8' : c]!;
}

const WEIGHT_ONLY = new Set<Dtype>(['int4_wo', 'int8_wo']);
const SIXTEEN_BIT = new Set<Dtype>(['bfloat16', 'float16']);

/**
 * Engine builds a row names by an image tag instead of a release, with the release they were cut ahead of:
 * TRT-LLM's day-0 gpt-oss image was built from its dev branch before the 1.1 releases (on Hopper its
 * all-reduce still goes through NCCL, see BackendProfile.allReduceViaNccl).
 */
const BUILT_BEFORE: Partial<Record<Backend, Record<string, string>>> = { trtllm: { 'gpt-oss-dev': '1.1' } };

/** Whether a recorded version names a build whose release is known (see BUILT_BEFORE). */
export const isKnownBuild = (backend: Backend, version: string): boolean => BUILT_BEFORE[backend]?.[version] !== undefined;

/** The supported release a pre-release build runs as (the newest before the release it preceded), if known. */
export function releaseOfBuild(backend: Backend, version: string, supported: string[]): string | undefined {
  const before = BUILT_BEFORE[backend]?.[version];
  if (!before) return undefined;
  const release = (v: string) => engineRelease(backend, v);
  return supported
    .filter((v) => !onLineAtLeast(release(v), before))
    .sort((a, b) => compareVersions(release(a), release(b)))
    .at(-1);
}

/** Weight formats a row asks for: gemm/moe quant modes, else precision, else the checkpoint's. */
export function rowDtypes(row: Row, model: ModelSpec): { gemmDtype: Dtype; moeDtype: Dtype; kvDtype: Dtype } {
  const p = QUANT[row.precision ?? ''];
  // "fp8" names the run's precision, not its kernel: an engine serves a block-scaled FP8 checkpoint with its
  // block scales (it cannot re-scale the weights per tensor), so such rows ran the block-FP8 kernels. Weight-only
  // integer formats come only from a checkpoint quantized offline: layers the checkpoint kept in 16 bits (Kimi-K2.5
  // quantized its routed experts to int4, not its attention or shared expert) run in 16 bits whatever the row names.
  const asServed = (d: Dtype | undefined, own: Dtype): Dtype | undefined =>
    (d === 'fp8' && own === 'fp8_block') || (d !== undefined && WEIGHT_ONLY.has(d) && SIXTEEN_BIT.has(own)) ? own : d;
  const gemm = asServed(QUANT[row.gemm_quant_mode ?? ''] ?? p, model.quant.gemmDtype) ?? model.quant.gemmDtype;
  let moe = asServed(QUANT[row.moe_quant_mode ?? ''] ?? p, model.quant.moeDtype) ?? model.quant.moeDtype;
  // Native mxfp4 experts (gpt-oss) stay mxfp4 whatever the dense layers use: "fp8" and "fp4" runs of such a
  // checkpoint quantize activations at most (TRT-LLM's W4A8 path on Hopper), the expert weights stay MXFP4.
  if (model.quant.moeDtype === 'mxfp4' && (moe === 'nvfp4' || moe === 'fp8' || !row.moe_quant_mode)) moe = 'mxfp4';
  if (!model.moe) moe = gemm;
  // The KV cache as the row states it, else as quantized serving recipes run it: fp8 alongside fp8 / fp4 weights.
  const stated = (row.kv_cache_dtype ?? '').trim() ? kvCell(row.kv_cache_dtype!) : undefined;
  const quantized = gemm === 'fp8' || gemm === 'fp8_block' || gemm === 'nvfp4' || p === 'fp8' || p === 'nvfp4';
  const kv: Dtype = stated !== undefined ? (stated ?? model.kvDtype) : quantized ? 'fp8' : model.kvDtype;
  return { gemmDtype: gemm, moeDtype: moe, kvDtype: kv };
}

/** A count cell of a row: blank or 0 gives the default `d`; a malformed number is an input error. */
const int = (row: Row, col: string, d = 1): number => {
  const v = row[col];
  if (v === undefined || v.trim() === '') return d;
  if (!numberText(v)) throw new InputError(`column ${quote(col)}: ${quote(v)} is not a number`);
  const n = Number(v);
  return n > 0 ? Math.round(n) : d;
};

/** Clients of a row: batch_size for agg; `silicon_concurrency=` of the source for disagg when given. */
export function rowConcurrency(row: Row): number | undefined {
  const m = /silicon_concurrency=(\d+)/.exec(row.silicon_data_source ?? '');
  if (m) return Number(m[1]);
  // batch_size counts sequences per attention-dp rank.
  if (row.mode === 'agg') return int(row, 'batch_size') * int(row, 'attention_dp_size');
  return undefined;
}

/**
 * Some rows record tp (or dp) as moe_tp x moe_ep with moe_tp = moe_ep = the GPU count (tp 64 with moe_tp 8 and
 * moe_ep 8 for 4 clients on an 8-GPU node): the run used moe_ep GPUs with expert parallelism, so read it so.
 */
function squaredMoeLayout(row: Row): { tp: number; dp: number; gpus: number } | undefined {
  const tp = int(row, 'tp_size');
  const dp = int(row, 'attention_dp_size');
  const mt = int(row, 'moe_tp_size', 0);
  const me = int(row, 'moe_ep_size', 0);
  if (mt > 1 && mt === me && tp * dp === mt * me) return dp > 1 ? { tp: 1, dp: me, gpus: me } : { tp: me, dp: 1, gpus: me };
  return undefined;
}

/**
 * Replicas of an agg row: batch_size is the concurrency per replica (per attention-dp rank), so a benchmark
 * concurrency that is a multiple of it spread its clients over that many identical replicas.
 */
export function rowAggReplicas(row: Row): number {
  if (squaredMoeLayout(row)) return 1;
  const perReplica = int(row, 'batch_size') * int(row, 'attention_dp_size');
  const conc = rowConcurrency(row) ?? perReplica;
  return Math.max(1, Math.round(conc / perReplica));
}

/** `gpu`: the row's GPU (engines size their default token budget by it). */
export function rowAggConfig(row: Row, backend: Backend, version: string, gpu: GpuFacts): AggConfig {
  const maxNumTokens = backendProfile(backend, version, gpu).maxNumTokens;
  const sq = squaredMoeLayout(row);
  if (sq) {
    const batch = rowConcurrency(row) ?? int(row, 'batch_size') * int(row, 'attention_dp_size');
    return { tp: sq.tp, pp: int(row, 'pp_size'), dp: sq.dp, moeTp: 1, moeEp: sq.gpus, batchSize: batch, maxNumTokens };
  }
  const tp = int(row, 'tp_size');
  const dp = int(row, 'attention_dp_size');
  // Each replica runs its share of the clients at once (a recorded batch below that share is the clients').
  const batch = Math.max(int(row, 'batch_size') * dp, Math.ceil((rowConcurrency(row) ?? 1) / rowAggReplicas(row)));
  return {
    tp, pp: int(row, 'pp_size'), dp, moeTp: int(row, 'moe_tp_size', tp * dp), moeEp: int(row, 'moe_ep_size'),
    batchSize: batch, maxNumTokens,
  };
}

function pool(row: Row, side: 'prefill' | 'decode', backend: Backend, version: string, gpu: GpuFacts): PoolConfig {
  const tp = int(row, `${side}_tp_size`);
  const dp = int(row, `${side}_attention_dp_size`);
  const workers = int(row, `${side}_num_workers`);
  // Rows that leave the decode batch blank ran it at the clients' concurrency spread over the workers.
  const conc = rowConcurrency(row) ?? 1;
  const batch = row[`${side}_batch_size`]
    ? int(row, `${side}_batch_size`) * dp
    : side === 'decode' ? Math.max(1, Math.ceil(conc / workers)) : dp;
  const prof = backendProfile(backend, version, gpu);
  return {
    tp, pp: int(row, `${side}_pp_size`), dp, moeTp: int(row, `${side}_moe_tp_size`, tp * dp), moeEp: int(row, `${side}_moe_ep_size`),
    batchSize: batch, workers,
    maxNumTokens: side === 'prefill' ? Math.max(prof.maxNumTokens, Math.ceil(batch / dp) * int(row, 'isl')) : prof.maxNumTokens,
  };
}

export function rowDisaggConfig(row: Row, backend: Backend, version: string, gpu: GpuFacts): DisaggConfig {
  return { prefill: pool(row, 'prefill', backend, version, gpu), decode: pool(row, 'decode', backend, version, gpu) };
}

export interface RowInputs {
  model: ModelSpec;
  system: SystemSpec;
  backend: Backend;
  version: string;
  perf: PerfSource;
}

/** Whether a disagg row records its worker counts (rows that leave them blank are sized to their concurrency). */
export function workersRecorded(row: Row): boolean {
  return !!(row.decode_num_workers || row.prefill_num_workers);
}

/**
 * The speculative decoding a row ran, from its own `nextn` and `nextn_accept_rates` columns only (blank or 0:
 * none; rates blank: the model family's published defaults). Never from its provenance text. A depth the model
 * cannot run (no MTP layers, no known draft) is a refusal of that row, with the reason.
 */
export function rowSpeculation(row: Row, model: ModelSpec): Speculation | undefined | Refusal {
  const nextn = Number((row.nextn ?? '').trim() || '0');
  if (!(nextn > 0)) return undefined;
  const rates = parseAcceptRates(row.nextn_accept_rates ?? '');
  try {
    return resolveSpeculation(model, { nextn, acceptRates: rates && rates.length > 0 ? rates : undefined });
  } catch (e) {
    return { refused: true, constraint: 'engine', reason: `nextn ${nextn}: ${(e as Error).message.replace(/^--nextn \d+: /, '')}` };
  }
}

/**
 * How often the server takes in new requests, from the row's `scheduler_recv_interval` column (blank or 1: every
 * step). It is SGLang's --scheduler-recv-interval, priced for aggregated servers: any other engine, or a
 * disaggregated row, stating more than 1 is refused with the reason.
 */
export function rowRecvInterval(row: Row): { steps: number } | Refusal | undefined {
  const steps = Number((row.scheduler_recv_interval ?? '').trim() || '1');
  if (steps <= 1) return undefined;
  const reason = row.backend !== 'sglang' ? `is SGLang's --scheduler-recv-interval; ${row.backend} has no such setting`
    : row.mode === 'disagg' ? 'is priced for aggregated SGLang servers only, not for disaggregated pools' : undefined;
  return reason ? { refused: true, constraint: 'engine', reason: `scheduler_recv_interval ${steps} ${reason}` } : { steps };
}

/** Estimate one row (context built by the caller from its model, system and engine). */
export function estimateRow(row: Row, inp: RowInputs): Estimate | Refusal {
  const dt = rowDtypes(row, inp.model);
  const ctx: EngineContext = {
    model: inp.model, system: inp.system, backend: inp.backend, version: inp.version, perf: inp.perf,
    gemmDtype: dt.gemmDtype, moeDtype: dt.moeDtype, kvDtype: dt.kvDtype,
    workload: { isl: int(row, 'isl'), osl: int(row, 'osl'), prefix: 0 },
  };
  const conc = rowConcurrency(row);
  const spec = rowSpeculation(row, inp.model);
  if (spec && 'refused' in spec) return spec;
  if (spec) ctx.speculation = spec;
  const recv = rowRecvInterval(row);
  if (recv && 'refused' in recv) return recv;
  if (recv) ctx.schedulerRecvInterval = recv.steps;
  const fraction = Number((row.gpu_memory_fraction ?? '').trim());
  if (fraction > 0) ctx.memoryFraction = fraction;
  if (row.mode === 'disagg') {
    let cfg = rowDisaggConfig(row, inp.backend, inp.version, inp.system.gpu);
    cfg = { prefill: cfg.prefill, decode: wideEpLayout(ctx, cfg.decode) };
    if (conc && !workersRecorded(row)) cfg = sizeUnrecordedPools(ctx, cfg, conc);
    return estimateDisagg(ctx, cfg, { concurrency: conc });
  }
  // A recorded tp that cannot split the heads (or spans boards) ran attention data parallel (wide EP).
  const { workers: _w, ...aggCfg } = wideEpLayout(ctx, { ...rowAggConfig(row, inp.backend, inp.version, inp.system.gpu), workers: 1 });
  return estimateAgg(ctx, aggCfg, { concurrency: conc, replicas: rowAggReplicas(row) });
}

export const PREDICTED_COLUMNS = [
  'predicted_ttft_ms', 'predicted_tpot_ms', 'predicted_tokens_per_s_per_gpu', 'predicted_request_latency_ms', 'refused_reason',
] as const;

export function predictedCells(e: Estimate | Refusal | { refused: true; reason: string }): Record<(typeof PREDICTED_COLUMNS)[number], string> {
  if (isRefusal(e) || e.refused) {
    return {
      predicted_ttft_ms: '', predicted_tpot_ms: '', predicted_tokens_per_s_per_gpu: '', predicted_request_latency_ms: '',
      refused_reason: (e as Refusal).reason,
    };
  }
  const m = e.metrics;
  return {
    predicted_ttft_ms: m.ttftMs.toFixed(3),
    predicted_tpot_ms: m.tpotMs.toFixed(4),
    predicted_tokens_per_s_per_gpu: m.tokPerSPerGpu.toFixed(3),
    predicted_request_latency_ms: m.requestLatencyMs.toFixed(3),
    refused_reason: '',
  };
}
