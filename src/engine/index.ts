// Public API of the inference model. Search, output and the CLI call exactly these.
import { aggMemory, aggPoint } from './agg.js';
import { bandsFor } from './bands.js';
export { bandBasisFor, basisLines, type BandBasis } from './bands.js';
import { disaggMemory, disaggPoint, gpusOfPool } from './disagg.js';
import { memoryPicture } from './memory.js';
import { cachedStep } from './steps.js';
import { decodeTpotMs, speculationOf, speculativeStepParts } from './speculation.js';
import type { PerfSource } from '../perf/types.js';
import { disaggRule, gpusOf, layoutRule } from './rules.js';
import { countKinds, LAYER_KIND_NAMES } from '../inputs/layers.js';
import type { LayerKind, ModelSpec } from '../inputs/types.js';
import { UnsupportedError } from '../util/errors.js';
import type {
  AggConfig, AggEstimate, DisaggConfig, DisaggEstimate, EngineContext, MemoryPicture, ParallelLayout, Refusal, ServingMetrics,
  SpeculativeStepParts,
} from './types.js';

export type * from './types.js';
export { backendProfile, graphPaddedBatch, profileOf, trtllmGenMoe, type BackendProfile } from './backends.js';
export { layoutRule, disaggRule, familyRule, gpusOf } from './rules.js';
export { layerKinds, stepCost, type StepShape, type StepCost } from './ops.js';
export { weightBytesPerGpu, kvBytesPerToken } from './memory.js';
export { kvTransferMs } from './disagg.js';

/**
 * Time per output token (ms) of one decode worker of `layout` running `running` sequences whose KV holds
 * `contextTokens` tokens: the decode step the disaggregated estimate prices (planner profiles read it too).
 */
export function decodeItlMs(ctx: EngineContext, layout: ParallelLayout, running: number, contextTokens: number): number {
  assertPriced(ctx);
  return decodeTpotMs(ctx, layout, Math.max(1, running), contextTokens, ctx.decodePerf);
}

export function isRefusal(x: unknown): x is Refusal {
  return typeof x === 'object' && x !== null && (x as Refusal).refused === true;
}

/** What the op of each hybrid or sparse layer kind reads from the spec, and what it is called when missing. */
const KIND_NEEDS: Partial<Record<LayerKind, { has: (m: ModelSpec) => boolean; what: string }>> = {
  gdn: { has: (m) => !!m.gdn, what: 'gated-delta-net dimensions (linear_num_key_heads, linear_key_head_dim, ...)' },
  mamba2: { has: (m) => !!m.mamba2, what: 'Mamba-2 dimensions (mamba_num_heads, ssm_state_size, ...)' },
  kda: { has: (m) => !!m.kda, what: 'Kimi-delta-attention dimensions (linear_attn_config)' },
  dsa: { has: (m) => !!m.mla && !!m.indexer, what: 'MLA ranks and an indexer (index_topk, index_n_heads, index_head_dim)' },
  minimax_sparse: { has: (m) => !!m.indexer, what: 'an indexer (sparse_attention_config)' },
  compressed: { has: (m) => !!m.compressed, what: 'compression and hyper-connection fields (hc_mult, o_lora_rank, o_groups)' },
};

/**
 * Why the engine cannot price this model, or undefined when it can: a layer kind whose op needs dimensions the spec
 * lacks (a hand-written or truncated config.json). Every estimate refuses such a model (exit 4) rather than pricing
 * its layers as something else.
 */
export function modelRefusal(m: ModelSpec): string | undefined {
  const parts: string[] = [];
  for (const [kind, n] of Object.entries(countKinds(m)) as [LayerKind, number][]) {
    const need = KIND_NEEDS[kind];
    if (need && !need.has(m)) parts.push(`${n} ${LAYER_KIND_NAMES[kind]} layer${n === 1 ? '' : 's'} without ${need.what}`);
  }
  if (parts.length === 0) return undefined;
  return `${m.id}: ${parts.join('; ')}: cannot be priced`;
}

const pricedContexts = new WeakSet<EngineContext>();

/** Where a model meets the engine: every estimate and memory picture starts here. Throws UnsupportedError (exit 4). */
function assertPriced(ctx: EngineContext): void {
  if (pricedContexts.has(ctx)) return;
  const why = modelRefusal(ctx.model);
  if (why) throw new UnsupportedError(why, { model: ctx.model.id, architecture: ctx.model.architecture });
  pricedContexts.add(ctx);
}

function notPriced(ctx: EngineContext): string {
  return `the performance data (${ctx.perf.info.calibratedOn}) cannot price this layout of ${ctx.model.id} with ${ctx.gemmDtype} weights`;
}

function engineRefusal(reason: string): Refusal {
  return { refused: true, constraint: 'engine', reason };
}

/** Memory picture of one GPU of an instance with this layout and token budget (sequences of isl+osl). */
export function memoryFor(
  ctx: EngineContext,
  layout: ParallelLayout,
  maxNumTokens: number,
  role: 'agg' | 'prefill' | 'decode' = 'agg',
): MemoryPicture | Refusal {
  assertPriced(ctx);
  const { isl, osl } = ctx.workload;
  const seq = role === 'prefill' ? isl + 1 : isl + osl;
  const system = role === 'decode' ? (ctx.decodeSystem ?? ctx.system) : ctx.system;
  return memoryPicture(ctx, layout, maxNumTokens, seq, system);
}

function breakdownOf(ctx: EngineContext, layout: ParallelLayout, batch: number, pfBatch: number, pf: ParallelLayout = layout) {
  const { isl, osl, prefix } = ctx.workload;
  const pfShape = { pfBatch, pfSeq: Math.max(1, isl - prefix), pfPrefix: prefix, dcBatch: 0, dcKv: 0 };
  const dcShape = { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: batch, dcKv: isl + Math.floor(osl / 2) };
  return { prefill: { ...cachedStep(ctx, pf, pfShape).byOp }, decode: { ...cachedStep(ctx, layout, dcShape, ctx.decodePerf).byOp } };
}

/** Verify and draft time of the running batch's decode step, when the context speculates. */
function speculativeBreakdown(ctx: EngineContext, layout: ParallelLayout, running: number, perf?: PerfSource): { speculative?: SpeculativeStepParts } {
  if (!ctx.speculation || ctx.speculation.draft <= 0) return {};
  const { isl, osl } = ctx.workload;
  const parts = speculativeStepParts(ctx, layout, Math.max(1, running), isl + Math.floor(osl / 2), perf);
  return { speculative: { ...parts, tokensPerStep: speculationOf(ctx).perStep } };
}

const pointMemo = new WeakMap<EngineContext, Map<string, ReturnType<typeof aggPoint>>>();

/** Serving points repeat across replica counts and SLA sweeps: memoize per context. */
function memoAggPoint(ctx: EngineContext, c: AggConfig, clients: number, mem: MemoryPicture): ReturnType<typeof aggPoint> {
  let m = pointMemo.get(ctx);
  if (!m) pointMemo.set(ctx, (m = new Map()));
  const key = `${c.tp},${c.pp},${c.dp},${c.moeTp},${c.moeEp},${c.batchSize},${c.maxNumTokens},${clients}`;
  let v = m.get(key);
  if (!v) m.set(key, (v = aggPoint(ctx, c, clients, mem)));
  return v;
}

/** Serving metrics of a priced point: `requestsPerS` covers every GPU the estimate counts. */
function servingMetrics(
  ctx: EngineContext,
  p: { ttftMs: number; tpotMs: number; requestLatencyMs: number },
  requestsPerS: number,
  concurrency: number,
  gpus: number,
): ServingMetrics {
  const outTok = requestsPerS * ctx.workload.osl;
  return {
    ttftMs: p.ttftMs,
    tpotMs: p.tpotMs,
    requestLatencyMs: p.requestLatencyMs,
    outputTokPerS: outTok,
    tokPerSPerGpu: outTok / gpus,
    tokPerSPerUser: 1000 / p.tpotMs,
    requestsPerS,
    concurrency,
    gpus,
  };
}

/**
 * Aggregated serving: `replicas` identical instances of `config`, `concurrency` clients in total
 * (default batchSize x replicas). Metrics cover all replicas.
 */
export function estimateAgg(
  ctx: EngineContext,
  config: AggConfig,
  opts: { concurrency?: number; replicas?: number; breakdown?: boolean } = {},
): AggEstimate | Refusal {
  assertPriced(ctx);
  const rule = layoutRule(ctx, config, 'agg');
  if (rule) return engineRefusal(rule);
  if (!(config.batchSize >= 1) || !(config.maxNumTokens >= 1)) return engineRefusal('batch size and max-num-tokens must be at least 1');
  const mem = aggMemory(ctx, config);
  if (isRefusal(mem)) return mem;
  const replicas = Math.max(1, opts.replicas ?? 1);
  const concurrency = Math.max(1, opts.concurrency ?? config.batchSize * replicas);
  const perReplica = concurrency / replicas;
  const p = memoAggPoint(ctx, config, perReplica, mem);
  if (!Number.isFinite(p.ttftMs) || !Number.isFinite(p.tpotMs)) return engineRefusal(notPriced(ctx));
  const gpus = gpusOf(config) * replicas;
  const metrics = servingMetrics(ctx, p, p.requestsPerS * replicas, concurrency, gpus);
  const est: AggEstimate = {
    refused: false,
    mode: 'agg',
    config,
    replicas,
    metrics,
    bands: bandsFor(ctx, 'agg', metrics),
    memory: mem,
    ttftParts: p.ttftParts,
  };
  if (opts.breakdown) est.breakdown = { ...breakdownOf(ctx, config, p.running, 1), ...speculativeBreakdown(ctx, config, p.running) };
  if (ctx.speculation && ctx.speculation.draft > 0) est.speculation = ctx.speculation;
  return est;
}

/**
 * Disaggregated serving: `replicas` identical xPyD units (prefill.workers x prefill layout + decode.workers x
 * decode layout), `concurrency` clients in total (default decode batch x decode workers x replicas). Metrics
 * cover all units.
 */
export function estimateDisagg(
  ctx: EngineContext,
  config: DisaggConfig,
  opts: { concurrency?: number; replicas?: number; breakdown?: boolean } = {},
): DisaggEstimate | Refusal {
  assertPriced(ctx);
  const rule = disaggRule(ctx, config);
  if (rule) return engineRefusal(rule);
  const mem = disaggMemory(ctx, config);
  if (isRefusal(mem.prefill)) return { ...mem.prefill, reason: `prefill: ${mem.prefill.reason}` };
  if (isRefusal(mem.decode)) return { ...mem.decode, reason: `decode: ${mem.decode.reason}` };
  const replicas = Math.max(1, opts.replicas ?? 1);
  const concurrency = Math.max(1, opts.concurrency ?? config.decode.batchSize * config.decode.workers * replicas);
  const memory = { prefill: mem.prefill, decode: mem.decode };
  const p = disaggPoint(ctx, config, concurrency / replicas, memory);
  if (!Number.isFinite(p.ttftMs) || !Number.isFinite(p.tpotMs)) return engineRefusal(notPriced(ctx));
  const gpus = (gpusOfPool(config.prefill) * config.prefill.workers + gpusOfPool(config.decode) * config.decode.workers) * replicas;
  const metrics = servingMetrics(ctx, p, p.requestsPerS * replicas, concurrency, gpus);
  const est: DisaggEstimate = {
    refused: false,
    mode: 'disagg',
    config,
    replicas,
    metrics,
    bands: bandsFor(ctx, 'disagg', metrics),
    memory,
    kvTransferMs: p.kvTransferMs,
    ttftParts: p.ttftParts,
    decodeRunning: p.decodeRunning,
  };
  if (opts.breakdown) {
    est.breakdown = { ...breakdownOf(ctx, config.decode, p.decodeRunning, 1, config.prefill), ...speculativeBreakdown(ctx, config.decode, p.decodeRunning, ctx.decodePerf) };
  }
  if (ctx.speculation && ctx.speculation.draft > 0) est.speculation = ctx.speculation;
  return est;
}
