// The op list of one engine step (one forward pass) for a parallel layout, priced by the perf source.
// A step carries prefill tokens (a batch of prompt chunks) and/or decode tokens (one per running sequence);
// every shape here is per GPU after the tp / dp / moe splits.
import { DTYPE_BYTES, type Dtype, type ModelSpec } from '../inputs/types.js';
import { isMoeLayer } from '../inputs/params.js';
import type { CommQuery, MoeQuery, PerfSource } from '../perf/types.js';
import { computeFlops, peaksOf, type Peaks } from '../perf/sol.js';
import type { EngineContext, ParallelLayout } from './types.js';
import { profileOf, sglangTrtllmMoe, trtllmGenMoe, type BackendProfile } from './backends.js';

/** Layers that share one shape are priced once and multiplied by `count`. */
export interface LayerKind {
  count: number;
  attention: 'full' | 'none' | 'linear' | 'mla';
  /** Sliding window in tokens; 0 = full attention. */
  window: number;
  kvHeads: number;
  ffn: 'dense' | 'moe' | 'none' | 'linear';
  inter: number;
}

const kindsCache = [new WeakMap<ModelSpec, LayerKind[]>(), new WeakMap<ModelSpec, LayerKind[]>()];

/**
 * Group the model's layers by shape (dense first layers, sliding-window layers, heterogeneous blocks). A window
 * on every layer (Mistral v0.1) counts only where the engine applies it (`uniformWindow` of its profile).
 */
export function layerKinds(model: ModelSpec, uniformWindow = true): LayerKind[] {
  const cache = kindsCache[uniformWindow ? 1 : 0]!;
  const hit = cache.get(model);
  if (hit) return hit;
  const windows = uniformWindow || !model.slidingWindow?.layers.every(Boolean) ? model.slidingWindow : undefined;
  const overrides = new Map((model.layerOverrides ?? []).map((o) => [o.layer, o]));
  const byKey = new Map<string, LayerKind>();
  for (let i = 0; i < model.numLayers; i++) {
    const o = overrides.get(i);
    let attention: LayerKind['attention'] = model.mla ? 'mla' : 'full';
    if (o?.attention === 'none') attention = 'none';
    else if (o?.attention === 'linear') attention = 'linear';
    const window = attention === 'full' && windows?.layers[i] ? windows.window : 0;
    const kvHeads = o?.numKvHeads ?? model.numKvHeads;
    let ffn: LayerKind['ffn'] = isMoeLayer(model, i) ? 'moe' : 'dense';
    let inter = model.intermediateSize;
    if (o?.ffn === 'none' || o?.intermediateSize === 0) ffn = 'none';
    else if (o?.ffn === 'linear') ffn = 'linear';
    else if (o?.intermediateSize) inter = o.intermediateSize;
    const key = `${attention}|${window}|${kvHeads}|${ffn}|${inter}`;
    const k = byKey.get(key);
    if (k) k.count++;
    else byKey.set(key, { count: 1, attention, window, kvHeads, ffn, inter });
  }
  const kinds = [...byKey.values()];
  cache.set(model, kinds);
  return kinds;
}

/** What one engine step runs, for the whole model instance (all dp ranks). */
export interface StepShape {
  /** Sequences whose prompt (or a chunk of it) is processed in this step. */
  pfBatch: number;
  /** New prompt tokens per prefilling sequence in this step. */
  pfSeq: number;
  /** Tokens already cached for each prefilling sequence (prefix reuse or earlier chunks). */
  pfPrefix: number;
  /** Sequences generating one token each. */
  dcBatch: number;
  /** KV length of each decoding sequence. */
  dcKv: number;
}

export type OpTimes = Record<string, number>;

export interface StepCost {
  ms: number;
  byOp: OpTimes;
}

function add(t: OpTimes, key: string, v: number): void {
  if (v > 0) t[key] = (t[key] ?? 0) + v;
}

/** Whether a group of `gpus` consecutive ranks spans more than one scale-up domain. */
export function crossesNode(ctx: EngineContext, gpus: number): boolean {
  return gpus > ctx.system.gpusPerNode;
}

/**
 * Largest step (tokens per rank) whose shared experts hide beside the routed experts: small batches leave the
 * GPU idle between latency-bound expert kernels; larger ones saturate it and the two add up (vLLM's default
 * VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD).
 */
const SHARED_ASIDE_MAX_TOKENS = 256;

/**
 * Memory-bound kernels an engine runs on their own around each attention (profile attentionKernelsApart): the
 * rotary embedding of Q and K, the KV-cache write, the post-attention norm and the model's Q/K norms. At decode
 * sizes each costs a launch, which is what they add up to.
 */
function kernelsBesideAttention(m: ModelSpec, perf: PerfSource, T: number, heads: number, kvh: number): number {
  const bytes = (headsTouched: number): number => 4 * T * headsTouched * m.headDim; // bf16 read + write
  let ms = perf.elementwise({ bytes: bytes(heads + kvh) }) // rotary embedding
    + perf.elementwise({ bytes: bytes(2 * kvh) }) // K and V into the cache
    + perf.elementwise({ bytes: 2 * T * m.hiddenSize * 2 }); // post-attention norm
  if (m.qkNorm) ms += perf.elementwise({ bytes: bytes(heads) }) + perf.elementwise({ bytes: bytes(kvh) });
  return ms;
}

/**
 * Price one forward pass of `shape` through all layers (all pipeline stages in sequence).
 * Pipelining credit is the caller's business (it passes the micro-batch).
 */
export function stepCost(ctx: EngineContext, layout: ParallelLayout, shape: StepShape, perf: PerfSource = ctx.perf): StepCost {
  const m = ctx.model;
  const { tp, dp, pp } = layout;
  const t: OpTimes = {};
  const pfB = shape.pfBatch > 0 ? Math.ceil(shape.pfBatch / dp) : 0;
  const dcB = shape.dcBatch > 0 ? Math.ceil(shape.dcBatch / dp) : 0;
  const pfTok = pfB * shape.pfSeq;
  const T = pfTok + dcB;
  if (T <= 0) return { ms: 0, byOp: t };
  const h = m.hiddenSize;
  const gd: Dtype = ctx.gemmDtype;
  const prof = profileOf(ctx);
  const system = perf === ctx.perf ? ctx.system : ctx.decodeSystem ?? ctx.system;
  const qc: QuantCtx = { peaks: peaksOf(system), prof };
  const heads = Math.max(1, Math.ceil(m.numHeads / tp));
  const cross = crossesNode(ctx, tp);
  const arOne = tp > 1 ? tpAllReduce(prof, perf, { dtype: 'bfloat16', gpus: tp, elements: T * h, crossNode: cross }) : 0;
  // Q/K norms over all heads: each token's two fp32 partial variances (8 bytes) are summed across the ranks.
  const arQkNorm = m.qkNorm === 'across_heads' && tp > 1 ? tpAllReduce(prof, perf, { dtype: 'bfloat16', gpus: tp, elements: 4 * T, crossNode: cross }) : 0;
  const norm = perf.elementwise({ bytes: 2 * T * h * 2 });
  const attnDtype: Dtype = 'bfloat16';
  const sharedAside = T <= SHARED_ASIDE_MAX_TOKENS && (prof.sharedExpertsAside === 'always'
    || (prof.sharedExpertsAside === 'graph' && pfB === 0 && dcB <= prof.cudaGraphMaxBatch));

  for (const k of layerKinds(m, prof.uniformWindow)) {
    const n = k.count;
    // Attention block.
    if (k.attention === 'full') {
      const kvh = Math.max(1, Math.ceil(k.kvHeads / tp));
      add(t, 'qkv_gemm', n * gemmMs(perf, qc, gd, T, (heads + 2 * kvh) * m.headDim, h));
      if (pfB > 0) {
        add(t, 'attention_prefill', n * perf.contextAttention({
          batch: pfB, seq: shape.pfSeq, prefix: shape.pfPrefix, heads, kvHeads: kvh, headDim: m.headDim,
          dtype: attnDtype, kvDtype: ctx.kvDtype, window: k.window,
        }));
      }
      if (dcB > 0) {
        // Engines that free the KV blocks behind a sliding window hold only the window's tokens of those layers,
        // so their decode kernel reads no more (measured kernels given the whole cache may read it all).
        const freed = k.window > 0 && prof.kvWindowSavesMemory;
        add(t, 'attention_decode', n * perf.generationAttention({
          batch: dcB, kvLen: freed ? Math.min(shape.dcKv, k.window) : shape.dcKv, heads, kvHeads: kvh, headDim: m.headDim,
          kvDtype: ctx.kvDtype, window: freed ? 0 : k.window,
        }));
      }
      add(t, 'proj_gemm', n * gemmMs(perf, qc, gd, T, h, heads * m.headDim));
      if (prof.attentionKernelsApart) add(t, 'norm', n * kernelsBesideAttention(m, perf, T, heads, kvh));
      add(t, 'allreduce', n * arOne);
      if (arQkNorm > 0) add(t, 'allreduce', n * arQkNorm);
      add(t, 'norm', n * norm);
    } else if (k.attention === 'mla' && m.mla) {
      // The MLA source prices the whole attention module (down/up projections, attention, output projection).
      const a = m.mla;
      const common = {
        heads, kvLoraRank: a.kvLoraRank, qkRopeHeadDim: a.qkRopeHeadDim, qkNopeHeadDim: a.qkNopeHeadDim,
        vHeadDim: a.vHeadDim, qLoraRank: a.qLoraRank, hidden: h, dtype: gd, kvDtype: ctx.kvDtype,
      };
      if (pfB > 0) {
        const full = perf.mla({ phase: 'context', batch: pfB, seq: shape.pfSeq + shape.pfPrefix, ...common });
        add(t, 'attention_prefill', n * full * prefixShare(shape.pfSeq, shape.pfPrefix));
      }
      if (dcB > 0) add(t, 'attention_decode', n * perf.mla({ phase: 'generation', batch: dcB, seq: shape.dcKv, ...common }));
      add(t, 'allreduce', n * arOne);
      add(t, 'norm', n * norm);
    } else if (k.attention === 'linear') {
      add(t, 'proj_gemm', n * gemmMs(perf, qc, gd, T, h, Math.ceil(h / tp)));
      add(t, 'allreduce', n * arOne);
    }
    // Feed-forward block.
    if (k.ffn === 'dense') {
      const inter = Math.ceil(k.inter / tp);
      add(t, 'ffn_gemm', n * gemmMs(perf, qc, gd, T, 2 * inter, h));
      add(t, 'ffn_gemm', n * gemmMs(perf, qc, gd, T, h, inter));
      add(t, 'norm', n * perf.elementwise({ bytes: T * inter * 3 * 2 }));
      add(t, 'allreduce', n * arOne);
    } else if (k.ffn === 'linear') {
      add(t, 'ffn_gemm', n * gemmMs(perf, qc, gd, T, h, Math.ceil(h / tp)));
      add(t, 'allreduce', n * arOne);
    } else if (k.ffn === 'moe' && m.moe) {
      const e = m.moe;
      add(t, 'moe_router', n * perf.gemm({ dtype: 'bfloat16', m: T, n: e.numExperts, k: h }));
      // Top-k selection over the fp32 router logits, where the expert table starts from chosen experts.
      const tableRoutes = prof.moeRoutingInTable === 'all' || prof.moeRoutingInTable.includes(ctx.moeDtype);
      if (!tableRoutes) add(t, 'moe_router', n * perf.elementwise({ bytes: T * (4 * e.numExperts + 8 * e.topK) }));
      let shared = 0;
      if (e.sharedExperts > 0) {
        const si = Math.ceil((e.sharedExperts * e.sharedIntermediateSize) / tp);
        shared = gemmMs(perf, qc, gd, T, 2 * si, h) + gemmMs(perf, qc, gd, T, h, si);
      }
      // The experts serve every attention-dp rank's tokens: the step's own, not dp x the busiest rank's (one
      // prompt on one rank of four is one prompt of expert work).
      const moeTokens = Math.min(T * dp, shape.pfBatch * shape.pfSeq + shape.dcBatch);
      const moeQ: MoeQuery = {
        dtype: ctx.moeDtype, tokens: balancedEquivalentTokens(moeTokens, e.topK, e.numExperts), hidden: h,
        inter: e.expertIntermediateSize, topk: e.topK, experts: expertSlots(e.numExperts, layout.moeEp),
        moeTp: layout.moeTp, moeEp: layout.moeEp,
        trtllmGen: !ctx.engineDefaultMoe && trtllmGenMoe(prof, ctx.moeDtype, system, layout),
        flashinferTrtllm: sglangTrtllmMoe(prof, m.architecture, system),
      };
      let experts = moeMs(perf, qc, moeQ);
      // Engines that run MXFP4 experts through their fp4 MoE kernels do so where the GPU has fp4 tensor cores.
      if (moeQ.dtype === 'mxfp4' && prof.mxfp4ViaFp4Moe && (system.gpu.tflops.nvfp4 ?? 0) > 0) {
        experts = Math.min(experts, perf.moe({ ...moeQ, dtype: 'nvfp4' }));
      }
      add(t, 'moe_experts', n * experts);
      // Beside the routed experts on a second stream only the part of the shared experts that outlasts them shows.
      add(t, 'moe_shared', n * (sharedAside ? Math.max(0, shared - experts) : shared));
      add(t, 'moe_comm', n * moeCommMs(ctx, prof, layout, T, perf));
    }
  }
  // Embedding, final norm, logits (one row per sequence that samples a token in this step).
  add(t, 'norm', perf.elementwise({ bytes: 2 * T * h * 2 }));
  const sampled = pfB + dcB;
  add(t, 'logits_gemm', perf.gemm({ dtype: 'bfloat16', m: sampled, n: Math.ceil(m.vocabSize / tp), k: h }));
  if (pp > 1) {
    const bytes = T * h * 2;
    add(t, 'pp_p2p', (pp - 1) * perf.p2p(bytes, crossesNode(ctx, tp * dp * pp)));
  }
  let ms = 0;
  for (const v of Object.values(t)) ms += v;
  return { ms, byOp: t };
}

/** Quantized formats whose kernels the engines pick per shape among several tactics (weight-only included). */
const QUANTIZED = new Set<Dtype>(['fp8', 'fp8_block', 'nvfp4', 'int4_wo', 'int8_wo']);

/**
 * A quantized kernel as the serving engine runs it. Quantized kernels measured in isolation carry a fixed
 * cost (activation quantization, scale handling) that dominates when a few rows stream the weights; engines
 * pick the fastest tactic per shape, which for a weight-streaming (memory-bound) shape is never slower than
 * the 16-bit kernel less the weight bytes it would not move (counted at peak bandwidth). Formats the engine
 * runs exactly as measured (profile `kernelAsMeasured`) keep the measured time.
 */
function servedMs(q: QuantCtx, own: number, bf16: () => number, dtype: Dtype, flop: number, weights: number): number {
  if (!QUANTIZED.has(dtype) || q.prof.kernelAsMeasured.includes(dtype)) return own;
  const peaks = q.peaks;
  const w = DTYPE_BYTES[dtype];
  if (flop / computeFlops(peaks, dtype) > (w * weights) / peaks.mem) return own;
  return Math.min(own, bf16() - ((2 - w) * weights) / peaks.mem);
}

/** The step's hardware and its engine (which kernels it runs for quantized layers). */
interface QuantCtx {
  peaks: Peaks;
  prof: BackendProfile;
}

function gemmMs(perf: PerfSource, qc: QuantCtx, dtype: Dtype, m: number, n: number, k: number): number {
  const q = { dtype, m, n, k };
  return servedMs(qc, perf.gemm(q), () => perf.gemm({ ...q, dtype: 'bfloat16' }), dtype, 2 * m * n * k, n * k);
}

function moeMs(perf: PerfSource, qc: QuantCtx, q: MoeQuery): number {
  const routed = (q.tokens * q.topk) / q.moeEp;
  const active = Math.min(q.experts / q.moeEp, routed);
  const flop = (6 * routed * q.hidden * q.inter) / q.moeTp;
  const weights = (3 * q.hidden * q.inter * active) / q.moeTp;
  return servedMs(qc, perf.moe(q), () => perf.moe({ ...q, dtype: 'bfloat16' }), q.dtype, flop, weights);
}

/** Share of a full-length prefill's attention work done by the new tokens after `prefix` cached ones. */
function prefixShare(seq: number, prefix: number): number {
  if (prefix <= 0) return 1;
  const full = seq + prefix;
  return (full * full - prefix * prefix) / (full * full);
}

/**
 * Tokens a balanced-routing MoE table must be asked for to touch as many distinct experts as `tokens` routed at
 * random do. The tables were measured with balanced routing: below tokens x topk = experts every routed copy lands
 * on an expert of its own. Routers pick experts independently per token, so copies collide and fewer expert
 * weights stream (32 tokens x top-4 of 128 experts: 82 distinct, not 128); the memory-bound expert kernels cost
 * what they read. Large batches touch every expert either way, and the count converges to `tokens`.
 */
export function balancedEquivalentTokens(tokens: number, topk: number, experts: number): number {
  if (tokens <= 1 || topk >= experts) return tokens;
  const distinct = experts * (1 - (1 - topk / experts) ** tokens);
  return (tokens * distinct) / Math.min(experts, tokens * topk);
}

/** Expert slots of an expert-parallel group: redundant slots fill a width that does not divide the experts. */
function expertSlots(experts: number, moeEp: number): number {
  return Math.ceil(experts / moeEp) * moeEp;
}

/** Expert-parallel groups wider than one 8-GPU board route tokens with all-to-all (DeepEP, wide-EP kernels). */
const ALLTOALL_EP_MIN = 16;

/**
 * Communication around the expert layer. With attention DP the MoE group gathers every rank's tokens
 * (all-gather before, reduce-scatter after); with attention TP only it is the usual TP all-reduce.
 */
function moeCommMs(ctx: EngineContext, prof: BackendProfile, layout: ParallelLayout, T: number, perf: PerfSource): number {
  const { tp, dp } = layout;
  const h = ctx.model.hiddenSize;
  const gpus = tp * dp;
  if (gpus <= 1) return 0;
  const cross = crossesNode(ctx, gpus);
  if (dp > 1 && layout.moeEp >= ALLTOALL_EP_MIN) {
    // Dispatch each token to its top-k experts' GPUs and combine the results back: only routed copies move.
    // The tp ranks of a dp group hold the same tokens after attention, so each dispatches a 1/tp share.
    const elements = Math.ceil(T / tp) * h * Math.min(ctx.model.moe?.topK ?? 1, layout.moeEp);
    return 2 * perf.nccl('alltoall', { dtype: 'bfloat16', gpus, elements, crossNode: cross });
  }
  if (dp > 1) {
    const elements = T * h * dp;
    const gather = perf.nccl('all_gather', { dtype: 'bfloat16', gpus, elements, crossNode: cross });
    const scatter = perf.nccl('reduce_scatter', { dtype: 'bfloat16', gpus, elements, crossNode: cross });
    return gather + scatter;
  }
  return tpAllReduce(prof, perf, { dtype: 'bfloat16', gpus: tp, elements: T * h, crossNode: cross });
}

/** A tensor-parallel all-reduce as the engine runs it: its custom kernels, or NCCL where the engine picks that. */
function tpAllReduce(prof: BackendProfile, perf: PerfSource, q: CommQuery): number {
  return prof.allReduceViaNccl ? perf.nccl('all_reduce', q) : perf.allReduce(q);
}
