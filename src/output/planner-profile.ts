// Performance profiles of a disaggregated layout for Dynamo's SLA planner, in the shapes its loader and the
// mocker read (docs/planner.md): prefill TTFT and tokens/s/GPU over input lengths, one request at a time, and
// decode ITL and tokens/s/GPU over KV-cache usage x context length. Every number is the engine's own estimate
// (estimateDisagg, decodeItlMs), so the profile at the plan's workload repeats the plan's prediction.
import { decodeItlMs, estimateDisagg, isRefusal, type DisaggConfig, type EngineContext, type MemoryPicture, memoryFor } from '../engine/index.js';
import { npzBytes } from './planner-npz.js';

/** `prefill_raw_data.json`: one entry per input length. */
export interface PrefillProfile {
  /** Input length, tokens. */
  prefill_isl: number[];
  /** TTFT of one request, ms. */
  prefill_ttft: number[];
  /** isl / ttft x 1000 / GPUs of a prefill worker x its attention-DP ranks, tokens/s/GPU (the profiler's formula). */
  prefill_thpt_per_gpu: number[];
}

/** `decode_raw_data.json`: scattered (KV usage, context length) points of one decode worker. */
export interface DecodeProfile {
  /** Share of the worker's KV cache in use: context x running / max_kv_tokens. */
  x_kv_usage: number[];
  /** Average context length of the running sequences, tokens. */
  y_context_length: number[];
  /** Inter-token latency, ms. */
  z_itl: number[];
  /** Output tokens/s of the worker / its GPUs. */
  z_thpt_per_gpu: number[];
  /** KV-cache capacity of the worker, tokens (a plain integer, as the loaders read it). */
  max_kv_tokens: number;
}

/** The mocker's own form (`--planner-profile-data FILE.npz`): decode ITL on a regular grid, [kv][context]. */
export interface MockerProfile {
  prefill_isl: number[];
  prefill_ttft_ms: number[];
  decode_active_kv_tokens: number[];
  decode_context_length: number[];
  decode_itl: number[][];
}

export interface ProfileGrid {
  /** Input lengths of the prefill sweep (the profiler's prefillInterpolationGranularity, 16). */
  prefillPoints: number;
  /** Context lengths, and running-batch sizes per context, of the decode sweep (decodeInterpolationGranularity, 6). */
  decodePoints: number;
  /** Points per axis of the mocker's decode grid. */
  mockerPoints: number;
}

export const DEFAULT_GRID: ProfileGrid = { prefillPoints: 16, decodePoints: 6, mockerPoints: 50 };

/** The profiler sweeps input lengths from 100 tokens up to the context limit less 512 (room for the output). */
const MIN_ISL = 100;
const OUTPUT_ROOM = 512;

export interface PlannerProfile {
  prefill: PrefillProfile;
  decode: DecodeProfile;
  mocker: MockerProfile;
  /** What the sweep covered and why it stopped short, for the report and the plots. */
  notes: string[];
  /** GPUs of one prefill and one decode worker (the planner's *_engine_num_gpu). */
  prefillGpus: number;
  decodeGpus: number;
  /** The context limit the sweep ran up to, tokens. */
  contextLimit: number;
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const r6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** `n` integers spread evenly over [lo, hi], both ends included, plus `extra`; sorted, unique. */
function spread(lo: number, hi: number, n: number, extra: number[] = []): number[] {
  const out = new Set<number>(extra.filter((x) => x >= lo && x <= hi));
  if (hi <= lo) out.add(lo);
  else for (let i = 0; i < n; i++) out.add(Math.round(lo + ((hi - lo) * i) / Math.max(1, n - 1)));
  return [...out].sort((a, b) => a - b);
}

function gpus(p: { tp: number; pp: number; dp: number }): number {
  return p.tp * p.pp * p.dp;
}

/** The context at another input length (and an output that still fits the context limit); no cached prefix. */
function contextAt(ctx: EngineContext, isl: number, limit: number): EngineContext {
  const osl = Math.max(1, Math.min(ctx.workload.osl, limit - isl));
  return { ...ctx, workload: { isl, osl, prefix: 0 } };
}

/** The longest sequence the model takes: its max_position_embeddings, else room for the plan's workload. */
export function contextLimitOf(ctx: EngineContext): number {
  const max = ctx.model.maxPositionEmbeddings;
  return max > 0 ? max : Math.ceil((ctx.workload.isl + ctx.workload.osl + OUTPUT_ROOM) / 256) * 256;
}

/**
 * One prefill point: the TTFT a single request of `isl` tokens sees on this layout (concurrency 1, no cached
 * prefix), as `estimate` predicts it; undefined when the layout cannot hold such a request.
 */
export function prefillPoint(ctx: EngineContext, config: DisaggConfig, isl: number, limit = contextLimitOf(ctx)): { ttftMs: number; thptPerGpu: number } | string {
  const est = estimateDisagg(contextAt(ctx, isl, limit), config, { concurrency: 1 });
  if (isRefusal(est)) return est.reason;
  const ttftMs = est.metrics.ttftMs;
  return { ttftMs, thptPerGpu: ((isl / ttftMs) * 1000 * config.prefill.dp) / gpus(config.prefill) };
}

/** KV capacity (tokens) of one decode worker of the layout, from the engine's memory picture. */
export function decodeKvTokens(ctx: EngineContext, config: DisaggConfig): MemoryPicture | string {
  const mem = memoryFor(ctx, config.decode, Math.max(config.decode.batchSize, 256), 'decode');
  return isRefusal(mem) ? mem.reason : mem;
}

function prefillSweep(ctx: EngineContext, config: DisaggConfig, grid: ProfileGrid, limit: number, notes: string[]): PrefillProfile {
  const top = Math.max(MIN_ISL, limit - OUTPUT_ROOM);
  const out: PrefillProfile = { prefill_isl: [], prefill_ttft: [], prefill_thpt_per_gpu: [] };
  for (const isl of spread(MIN_ISL, top, grid.prefillPoints, [ctx.workload.isl])) {
    const p = prefillPoint(ctx, config, isl, limit);
    if (typeof p === 'string') {
      notes.push(`prefill sweep stops at ${out.prefill_isl.at(-1) ?? 0} tokens: at ${isl} tokens ${p}`);
      break;
    }
    out.prefill_isl.push(isl);
    out.prefill_ttft.push(r3(p.ttftMs));
    out.prefill_thpt_per_gpu.push(r3(p.thptPerGpu));
  }
  return out;
}

/**
 * Decode points: for each context length (the plan's average context isl + osl/2 among them), running batches
 * from 1 to what the KV cache holds, plus the plan's own running batch at its context.
 */
function decodeSweep(ctx: EngineContext, config: DisaggConfig, grid: ProfileGrid, limit: number, kvTokens: number, planRunning: number | undefined): DecodeProfile {
  const planContext = ctx.workload.isl + Math.floor(ctx.workload.osl / 2);
  const top = Math.min(limit, kvTokens);
  const out: DecodeProfile = { x_kv_usage: [], y_context_length: [], z_itl: [], z_thpt_per_gpu: [], max_kv_tokens: kvTokens };
  const dGpus = gpus(config.decode);
  for (const context of spread(Math.min(MIN_ISL + 250, top), top, grid.decodePoints, [planContext])) {
    const most = Math.max(1, Math.floor(kvTokens / context));
    const extra = context === planContext && planRunning !== undefined ? [planRunning] : [];
    for (const running of spread(1, most, grid.decodePoints, extra)) {
      const itl = decodeItlMs(ctx, config.decode, running, context);
      out.x_kv_usage.push(r6((context * running) / kvTokens));
      out.y_context_length.push(context);
      out.z_itl.push(r3(itl));
      out.z_thpt_per_gpu.push(r3((running * 1000) / itl / dGpus));
    }
  }
  return out;
}

/** The mocker's grid: ITL at every (active KV tokens, context) pair, running = KV tokens / context (at least 1). */
function mockerGrid(ctx: EngineContext, config: DisaggConfig, prefill: PrefillProfile, decode: DecodeProfile, points: number): MockerProfile {
  // Contexts start where the decode sweep does: shorter ones would ask for more sequences than it priced.
  const contexts = spread(Math.min(...decode.y_context_length), Math.max(...decode.y_context_length), points);
  const kv = spread(0, decode.max_kv_tokens, points);
  const itl = kv.map((k) => contexts.map((c) => r3(decodeItlMs(ctx, config.decode, Math.max(1, Math.round(k / c)), c))));
  return {
    prefill_isl: prefill.prefill_isl,
    prefill_ttft_ms: prefill.prefill_ttft,
    decode_active_kv_tokens: kv,
    decode_context_length: contexts,
    decode_itl: itl,
  };
}

/**
 * Prefill and decode profiles of a disaggregated layout. `planRunning` is the decode batch the plan's estimate
 * runs at (DisaggEstimate.decodeRunning); the sweep includes that point so the profile repeats the estimate.
 * Returns the engine's refusal when the decode worker cannot hold the plan's sequences.
 */
export function buildPlannerProfile(
  ctx: EngineContext,
  config: DisaggConfig,
  opts: { planRunning?: number; grid?: Partial<ProfileGrid> } = {},
): PlannerProfile | string {
  const grid = { ...DEFAULT_GRID, ...opts.grid };
  const limit = contextLimitOf(ctx);
  const mem = decodeKvTokens(ctx, config);
  if (typeof mem === 'string') return `decode: ${mem}`;
  const notes: string[] = [];
  const prefill = prefillSweep(ctx, config, grid, limit, notes);
  if (prefill.prefill_isl.length < 3) return `prefill: fewer than 3 input lengths priced (the planner needs 3): ${notes.join('; ')}`;
  if (mem.kvTokens < limit) notes.push(`decode contexts stop at the worker's KV capacity, ${mem.kvTokens} tokens (the model takes ${limit})`);
  const decode = decodeSweep(ctx, config, grid, limit, mem.kvTokens, opts.planRunning);
  return {
    prefill,
    decode,
    mocker: mockerGrid(ctx, config, prefill, decode, grid.mockerPoints),
    notes,
    prefillGpus: gpus(config.prefill),
    decodeGpus: gpus(config.decode),
    contextLimit: limit,
  };
}

/** The two JSON files of a profile results directory (what the ConfigMap carries). */
export function profileJsonFiles(p: PlannerProfile): { 'prefill_raw_data.json': string; 'decode_raw_data.json': string } {
  return {
    'prefill_raw_data.json': JSON.stringify(p.prefill) + '\n',
    'decode_raw_data.json': JSON.stringify(p.decode) + '\n',
  };
}

const f64 = (data: number[]) => ({ data, shape: [data.length], dtype: 'float64' as const });

/** The profiler's NPZ files (the loaders try these first) and the mocker's single NPZ. */
export function profileNpzFiles(p: PlannerProfile): Array<{ path: string; content: Buffer }> {
  const m = p.mocker;
  return [
    {
      path: 'selected_prefill_interpolation/raw_data.npz',
      content: npzBytes({ prefill_isl: f64(p.prefill.prefill_isl), prefill_ttft: f64(p.prefill.prefill_ttft), prefill_thpt_per_gpu: f64(p.prefill.prefill_thpt_per_gpu) }),
    },
    {
      path: 'selected_decode_interpolation/raw_data.npz',
      content: npzBytes({
        max_kv_tokens: { data: [p.decode.max_kv_tokens], shape: [1], dtype: 'int64' },
        x_kv_usage: f64(p.decode.x_kv_usage),
        y_context_length: f64(p.decode.y_context_length),
        z_itl: f64(p.decode.z_itl),
        z_thpt_per_gpu: f64(p.decode.z_thpt_per_gpu),
      }),
    },
    {
      path: 'mocker_perf_data.npz',
      content: npzBytes({
        prefill_isl: f64(m.prefill_isl),
        prefill_ttft_ms: f64(m.prefill_ttft_ms),
        decode_active_kv_tokens: f64(m.decode_active_kv_tokens),
        decode_context_length: f64(m.decode_context_length),
        decode_itl: { data: m.decode_itl.flat(), shape: [m.decode_active_kv_tokens.length, m.decode_context_length.length], dtype: 'float64' },
      }),
    },
  ];
}
