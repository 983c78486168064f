// Public API of the inference model. Search, output and the CLI call exactly these.
import { aggMemory, aggPoint } from './agg.js';
import { bandsFor } from './bands.js';
export { bandBasisFor, basisLines, type BandBasis } from './bands.js';
import { disaggMemory, disaggPoint, gpusOfPool } from './disagg.js';
import { memoryPicture } from './memory.js';
import { cachedStep } from './steps.js';
import { disaggRule, gpusOf, layoutRule } from './rules.js';
import { countKinds, LAYER_KIND_NAMES } from '../inputs/layers.js';
import type { LayerKind, ModelSpec } from '../inputs/types.js';
import { UnsupportedError } from '../util/errors.js';
import type {
  AggConfig, AggEstimate, DisaggConfig, DisaggEstimate, EngineContext, MemoryPicture, ParallelLayout, Refusal, ServingMetrics,
} from './types.js';

export type * from './types.js';
export { backendProfile, graphPaddedBatch, profileOf, trtllmGenMoe, type BackendProfile } from './backends.js';
export { layoutRule, disaggRule, gpusOf } from './rules.js';
export { layerKinds, stepCost, type StepShape, type StepCost } from './ops.js';
export { weightBytesPerGpu, kvBytesPerToken } from './memory.js';
export { kvTransferMs } from './disagg.js';

export function isRefusal(x: unknown): x is Refusal {
  return typeof x === 'object' && x !== null && (x as Refusal).refused === true;
}

/** Layer kinds the engine prices: attention over the whole context or a window, and blocks with no mixer. */
const PRICED_KINDS: ReadonlySet<LayerKind> = new Set(['full', 'sliding', 'none']);

/**
 * Why the engine cannot price this model, or undefined when it can: each layer kind, attention shape or expert
 * layout of the spec that no op prices yet. Such a model parses (for `configure models`, `support`'s architecture
 * line and the memory accounting) but every estimate refuses it rather than pricing its layers as full attention.
 */
export function modelRefusal(m: ModelSpec): string | undefined {
  const parts: string[] = [];
  const counts = countKinds(m);
  for (const [kind, n] of Object.entries(counts) as [LayerKind, number][]) {
    if (PRICED_KINDS.has(kind)) continue;
    const hc = kind === 'compressed' && m.compressed ? ` with hyper-connections (hc_mult ${m.compressed.hcMult})` : '';
    parts.push(`${n} ${LAYER_KIND_NAMES[kind]} layer${n === 1 ? '' : 's'}${hc}`);
  }
  for (const kind of ['full', 'sliding'] as const) {
    const shape = m.attentionShapes?.[kind];
    if (!shape || !counts[kind]) continue;
    const v = shape.vHeadDim !== undefined && shape.vHeadDim !== shape.headDim ? `, value head dim ${shape.vHeadDim}` : '';
    parts.push(`${counts[kind]} ${LAYER_KIND_NAMES[kind]} layer${counts[kind] === 1 ? ' of its' : 's of their'} own shape (head dim ${shape.headDim}${v}, ${shape.numKvHeads} KV heads${shape.kEqV ? ', K shared with V' : ''})`);
  }
  if (m.moe?.latentSize) parts.push(`latent experts (width ${m.moe.latentSize})`);
  if (m.ungatedMlp) parts.push('ungated (relu2) MLPs');
  if (parts.length === 0) return undefined;
  const list = parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}` : parts[0]!;
  const verb = parts.length === 1 && /^1 /.test(list) ? 'is' : 'are';
  return `${m.id}: ${list} ${verb} not priced yet (issue: model families)`;
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
  if (opts.breakdown) est.breakdown = breakdownOf(ctx, config, p.running, 1);
  return est;
}

/** Disaggregated serving of one xPyD unit (prefill.workers x prefill layout + decode.workers x decode layout). */
export function estimateDisagg(
  ctx: EngineContext,
  config: DisaggConfig,
  opts: { concurrency?: number; breakdown?: boolean } = {},
): DisaggEstimate | Refusal {
  assertPriced(ctx);
  const rule = disaggRule(ctx, config);
  if (rule) return engineRefusal(rule);
  const mem = disaggMemory(ctx, config);
  if (isRefusal(mem.prefill)) return { ...mem.prefill, reason: `prefill: ${mem.prefill.reason}` };
  if (isRefusal(mem.decode)) return { ...mem.decode, reason: `decode: ${mem.decode.reason}` };
  const concurrency = Math.max(1, opts.concurrency ?? config.decode.batchSize * config.decode.workers);
  const memory = { prefill: mem.prefill, decode: mem.decode };
  const p = disaggPoint(ctx, config, concurrency, memory);
  if (!Number.isFinite(p.ttftMs) || !Number.isFinite(p.tpotMs)) return engineRefusal(notPriced(ctx));
  const gpus = gpusOfPool(config.prefill) * config.prefill.workers + gpusOfPool(config.decode) * config.decode.workers;
  const metrics = servingMetrics(ctx, p, p.requestsPerS, concurrency, gpus);
  const est: DisaggEstimate = {
    refused: false,
    mode: 'disagg',
    config,
    metrics,
    bands: bandsFor(ctx, 'disagg', metrics),
    memory,
    kvTransferMs: p.kvTransferMs,
    ttftParts: p.ttftParts,
  };
  if (opts.breakdown) est.breakdown = breakdownOf(ctx, config.decode, p.decodeRunning, 1, config.prefill);
  return est;
}
