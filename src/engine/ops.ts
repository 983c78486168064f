// The op list of one engine step (one forward pass) for a parallel layout, priced by the perf source.
// A step carries prefill tokens (a batch of prompt chunks) and/or decode tokens (one per running sequence, 1 +
// draft when it verifies a speculative draft);
// every shape here is per GPU after the tp / dp / moe splits.
import { DTYPE_BYTES, type AttentionShape, type Dtype, type LayerOverride, type ModelSpec } from '../inputs/types.js';
import { layersOf, type LayerOf } from '../inputs/layers.js';
import { isMoeLayer } from '../inputs/params.js';
import type { CommQuery, LinearAttentionQuery, MoeQuery, PerfSource, SparseAttentionQuery } from '../perf/types.js';
import { computeFlops, generationAttentionSol, mlaSol, peaksOf, type Peaks } from '../perf/sol.js';
import type { EngineContext, ParallelLayout } from './types.js';
import { profileOf, sglangTrtllmMoe, trtllmGenMoe, type BackendProfile } from './backends.js';

/** Token mixers of hybrid and sparse models, each priced by its own op (see stepCost). */
export type MixerKind = 'gdn' | 'mamba2' | 'kda' | 'dsa' | 'minimax_sparse' | 'compressed';

/** Layers that share one shape are priced once and multiplied by `count`. */
export interface LayerKind {
  count: number;
  attention: 'full' | 'none' | 'linear' | 'mla' | MixerKind;
  /** Sliding window in tokens (compressed layers: the window beside the compressed KV); 0 = full attention. */
  window: number;
  kvHeads: number;
  /** The layers' own attention shape where it differs from the model's (Gemma-4 global layers, MiMo-V2). */
  shape?: AttentionShape;
  /** Compressed layers: tokens per compressed KV entry (0: the window only). */
  ratio: number;
  /** The mixer as the spec states it (for its parameter count). */
  layer: LayerOf;
  ffn: 'dense' | 'moe' | 'none' | 'linear';
  inter: number;
}

const kindsCache = [new WeakMap<ModelSpec, LayerKind[]>(), new WeakMap<ModelSpec, LayerKind[]>()];

/** The engine's view of one layer's mixer (attention over everything, MLA, a window, or a hybrid kind). */
function attentionOf(m: ModelSpec, l: LayerOf, override: LayerOverride | undefined): LayerKind['attention'] {
  if (override?.attention === 'none' || l.kind === 'none') return 'none';
  if (override?.attention === 'linear') return 'linear';
  if (l.kind === 'full' || l.kind === 'sliding') return m.mla ? 'mla' : 'full';
  return l.kind;
}

/**
 * Group the model's layers by shape (dense first layers, sliding-window layers, heterogeneous blocks, the layer mix of
 * hybrid models). A window on every layer (Mistral v0.1) counts only where the engine applies it (`uniformWindow` of
 * its profile).
 */
export function layerKinds(model: ModelSpec, uniformWindow = true): LayerKind[] {
  const cache = kindsCache[uniformWindow ? 1 : 0]!;
  const hit = cache.get(model);
  if (hit) return hit;
  const layers = layersOf(model);
  const windowsApply = uniformWindow || !layers.every((l) => l.kind === 'sliding');
  const overrides = new Map((model.layerOverrides ?? []).map((o) => [o.layer, o]));
  const byKey = new Map<string, LayerKind>();
  for (let i = 0; i < model.numLayers; i++) {
    const o = overrides.get(i);
    const l = layers[i]!;
    const attention = attentionOf(model, l, o);
    let window = 0;
    if (l.kind === 'compressed') window = l.window ?? 0;
    else if (l.kind === 'sliding' && windowsApply && attention === 'full') window = l.window ?? 0;
    const shape = (l.kind === 'full' || l.kind === 'sliding') && attention === 'full' ? model.attentionShapes?.[l.kind] : undefined;
    const kvHeads = shape?.numKvHeads ?? o?.numKvHeads ?? model.numKvHeads;
    const ratio = l.kind === 'compressed' ? (l.ratio ?? 0) : 0;
    let ffn: LayerKind['ffn'] = isMoeLayer(model, i) ? 'moe' : 'dense';
    let inter = model.intermediateSize;
    if (o?.ffn === 'none' || o?.intermediateSize === 0) ffn = 'none';
    else if (o?.ffn === 'linear') ffn = 'linear';
    else if (o?.intermediateSize) inter = o.intermediateSize;
    const key = `${attention}|${window}|${kvHeads}|${shape ? l.kind : ''}|${ratio}|${ffn}|${inter}`;
    const k = byKey.get(key);
    if (k) k.count++;
    else {
      const kind: LayerKind = { count: 1, attention, window, kvHeads, ratio, layer: l, ffn, inter };
      if (shape) kind.shape = shape;
      byKey.set(key, kind);
    }
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
  /** Decoding sequences. */
  dcBatch: number;
  /** KV length of each decoding sequence. */
  dcKv: number;
  /** Tokens each decoding sequence runs through the model (1 + draft when verifying a speculative draft; default 1). */
  dcQuery?: number;
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
  const q = shape.dcQuery ?? 1;
  const dcSeqs = shape.dcBatch > 0 ? Math.ceil(shape.dcBatch / dp) : 0;
  // Decode tokens per rank: every op but attention's KV read runs once per token.
  const dcB = dcSeqs * q;
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
      // A layer's own shape (Gemma-4 global layers, MiMo-V2) or the model's; an output gate doubles the query width.
      const a = attentionShapeOf(m, k, tp);
      const kvh = a.kvHeads;
      const gate = m.attentionOutputGate ? a.heads * a.qkDim : 0;
      add(t, 'qkv_gemm', n * gemmMs(perf, qc, gd, T, a.heads * a.qkDim + gate + kvh * a.qkDim + (a.kEqV ? 0 : kvh * a.vDim), h));
      if (pfB > 0) {
        add(t, 'attention_prefill', n * perf.contextAttention({
          batch: pfB, seq: shape.pfSeq, prefix: shape.pfPrefix, heads: a.heads, kvHeads: kvh, headDim: a.computeDim,
          dtype: attnDtype, kvDtype: ctx.kvDtype, window: k.window,
        }));
      }
      if (dcB > 0) {
        // Engines that free the KV blocks behind a sliding window hold only the window's tokens of those layers,
        // so their decode kernel reads no more (measured kernels given the whole cache may read it all).
        const freed = k.window > 0 && prof.kvWindowSavesMemory;
        const gq = {
          kvLen: freed ? Math.min(shape.dcKv, k.window) : shape.dcKv, heads: a.heads, kvHeads: kvh, headDim: a.cacheDim,
          kvDtype: ctx.kvDtype, window: freed ? 0 : k.window,
        };
        const solOf = (b: number, queries: number): number =>
          generationAttentionSol(qc.peaks, b, gq.kvLen, gq.heads, gq.kvHeads, gq.headDim, gq.kvDtype, gq.window, queries);
        add(t, 'attention_decode', n * readKvOnce(q, (b) => perf.generationAttention({ ...gq, batch: b }), dcSeqs, solOf));
      }
      if (gate > 0) add(t, 'norm', n * perf.elementwise({ bytes: 3 * T * a.heads * a.vDim * 2 }));
      add(t, 'proj_gemm', n * gemmMs(perf, qc, gd, T, h, a.heads * a.vDim));
      if (prof.attentionKernelsApart) add(t, 'norm', n * kernelsBesideAttention(m, perf, T, a.heads, kvh));
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
      if (dcB > 0) {
        const solOf = (b: number, queries: number): number => mlaSol(qc.peaks, 'generation', b, shape.dcKv, heads, a.kvLoraRank, a.qkRopeHeadDim,
          a.qkNopeHeadDim, a.vHeadDim, a.qLoraRank, h, gd, ctx.kvDtype, queries);
        add(t, 'attention_decode', n * readKvOnce(q, (b) => perf.mla({ phase: 'generation', batch: b, seq: shape.dcKv, ...common }), dcSeqs, solOf));
      }
      add(t, 'allreduce', n * arOne);
      add(t, 'norm', n * norm);
    } else if (k.attention === 'linear') {
      add(t, 'proj_gemm', n * gemmMs(perf, qc, gd, T, h, Math.ceil(h / tp)));
      add(t, 'allreduce', n * arOne);
    } else if (k.attention !== 'none') {
      const mix: MixerStep = { ctx, perf, qc, tp, T, pfB, dcB, shape };
      const parts = k.attention === 'gdn' || k.attention === 'mamba2' || k.attention === 'kda' ? linearMixerMs(mix, k.attention) : sparseMixerMs(mix, k);
      for (const [op, ms] of Object.entries(parts)) add(t, op, n * ms);
      add(t, 'allreduce', n * arOne);
      add(t, 'norm', n * norm);
    }
    // DeepSeek-V4 hyper-connections: hc_mult residual streams mixed before and after each of the two sub-blocks.
    if (m.compressed && m.compressed.hcMult > 1) {
      const hc = { tokens: T, hidden: h, multiplier: m.compressed.hcMult, sinkhornIters: m.compressed.sinkhornIters ?? HC_SINKHORN_ITERS };
      add(t, 'hyper_connection', n * 2 * perf.hyperConnection(hc));
    }
    // Feed-forward block.
    if (k.ffn === 'dense') {
      const inter = Math.ceil(k.inter / tp);
      add(t, 'ffn_gemm', n * gemmMs(perf, qc, gd, T, (m.ungatedMlp ? 1 : 2) * inter, h));
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
        shared = gemmMs(perf, qc, gd, T, (m.ungatedMlp ? 1 : 2) * si, h) + gemmMs(perf, qc, gd, T, h, si);
      }
      // The experts serve every attention-dp rank's tokens: the step's own, not dp x the busiest rank's (one
      // prompt on one rank of four is one prompt of expert work).
      const moeTokens = Math.min(T * dp, shape.pfBatch * shape.pfSeq + shape.dcBatch * q);
      // Latent experts run in their own width between a down and an up projection (Nemotron-3 moe_latent_size).
      if (e.latentSize) add(t, 'moe_latent', n * (gemmMs(perf, qc, gd, T, e.latentSize, h) + gemmMs(perf, qc, gd, T, h, e.latentSize)));
      const routed = randomRouting(moeTokens, e.topK, e.numExperts);
      const moeQ: MoeQuery = {
        dtype: ctx.moeDtype, tokens: routed.tokens, hidden: e.latentSize ?? h,
        inter: expertWidth(m), topk: e.topK, experts: expertSlots(e.numExperts, layout.moeEp),
        moeTp: layout.moeTp, moeEp: layout.moeEp,
        trtllmGen: !ctx.engineDefaultMoe && trtllmGenMoe(prof, ctx.moeDtype, system, layout),
        flashinferTrtllm: sglangTrtllmMoe(prof, m.architecture, system),
      };
      let experts = moeMs(perf, qc, moeQ);
      // Engines that run MXFP4 experts through their fp4 MoE kernels do so where the GPU has fp4 tensor cores.
      if (moeQ.dtype === 'mxfp4' && prof.mxfp4ViaFp4Moe && (system.gpu.tflops.nvfp4 ?? 0) > 0) {
        experts = Math.min(experts, perf.moe({ ...moeQ, dtype: 'nvfp4' }));
      }
      add(t, 'moe_experts', n * experts * routed.share);
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

/** DeepSeek-V4's Sinkhorn iterations of the hyper-connection weights (hc_sinkhorn_iters) when the spec has none. */
const HC_SINKHORN_ITERS = 20;

/** Width of one routed expert as priced: ungated (relu2) experts hold two matrices, the width of a gated 2/3 as wide. */
function expertWidth(m: ModelSpec): number {
  const inter = m.moe?.expertIntermediateSize ?? 0;
  return m.ungatedMlp ? Math.round((2 * inter) / 3) : inter;
}

/** One attention layer's shape per GPU, and the head dims its kernels are priced at. */
interface AttentionAtGpu {
  heads: number;
  kvHeads: number;
  qkDim: number;
  vDim: number;
  kEqV: boolean;
  /** Head dim of a kernel doing the same work: the mean of the Q.K and P.V dims. */
  computeDim: number;
  /** Head dim of a kernel reading the same cache: K and V of (qkDim + vDim) / 2 each, or one shared vector. */
  cacheDim: number;
}

function attentionShapeOf(m: ModelSpec, k: LayerKind, tp: number): AttentionAtGpu {
  const sh = k.shape;
  const qkDim = sh?.headDim ?? m.headDim;
  const vDim = sh?.vHeadDim ?? qkDim;
  const kEqV = sh?.kEqV === true;
  return {
    heads: Math.max(1, Math.ceil((sh?.numHeads ?? m.numHeads) / tp)),
    kvHeads: Math.max(1, Math.ceil(k.kvHeads / tp)),
    qkDim,
    vDim,
    kEqV,
    computeDim: (qkDim + vDim) / 2,
    cacheDim: kEqV ? qkDim / 2 : (qkDim + vDim) / 2,
  };
}

/** What a hybrid mixer's pricing needs of the step. */
interface MixerStep {
  ctx: EngineContext;
  perf: PerfSource;
  qc: QuantCtx;
  tp: number;
  /** Tokens on this GPU, prefilling sequences and decoding sequences per dp rank. */
  T: number;
  pfB: number;
  dcB: number;
  shape: StepShape;
}

/**
 * A linear-attention layer (GDN, Mamba-2, KDA): its input projection, the mixer op (the chunked scan over the new
 * tokens in prefill, one state update per decoding sequence), the gated norm and the output projection. Heads split
 * over tp; the state never grows with the context.
 */
function linearMixerMs(x: MixerStep, kind: 'gdn' | 'mamba2' | 'kda'): OpTimes {
  const { ctx, perf, qc, tp, T, pfB, dcB, shape } = x;
  const m = ctx.model;
  const h = m.hiddenSize;
  let q: Omit<LinearAttentionQuery, 'phase' | 'batch' | 'seq'>;
  let inWidth: number;
  let outWidth: number;
  let gates = 0;
  if (kind === 'gdn') {
    const g = m.gdn!;
    const hv = Math.ceil(g.numValueHeads / tp);
    const hk = Math.ceil(g.numKeyHeads / tp);
    q = { kind, heads: hv, keyHeads: hk, headDim: g.keyHeadDim, valueDim: g.valueHeadDim, stateDim: 0, convKernel: g.convKernel, dtype: 'bfloat16' };
    outWidth = hv * g.valueHeadDim;
    inWidth = 2 * hk * g.keyHeadDim + 2 * outWidth; // q, k, v and the output gate z
    // The engines project the b / a gates with a GEMM of their own (in_proj_ba).
    gates = 2 * hv;
  } else if (kind === 'mamba2') {
    const s = m.mamba2!;
    const hh = Math.ceil(s.numHeads / tp);
    const groups = Math.ceil(s.groups / Math.min(tp, s.groups));
    q = { kind, heads: hh, keyHeads: groups, headDim: s.headDim, valueDim: s.headDim, stateDim: s.stateSize, convKernel: s.convKernel, dtype: 'bfloat16' };
    outWidth = hh * s.headDim;
    inWidth = 2 * outWidth + 2 * groups * s.stateSize + hh; // z, x, B, C and dt
  } else {
    const kd = m.kda!;
    const hh = Math.ceil(kd.numHeads / tp);
    q = { kind, heads: hh, keyHeads: hh, headDim: kd.headDim, valueDim: kd.headDim, stateDim: 0, convKernel: kd.convKernel, dtype: 'bfloat16' };
    outWidth = hh * kd.headDim;
    inWidth = 5 * outWidth; // q, k, v, the decay and the output gate
  }
  const t: OpTimes = {};
  add(t, 'qkv_gemm', gemmMs(perf, qc, ctx.gemmDtype, T, inWidth, h));
  if (gates > 0) add(t, 'qkv_gemm', gemmMs(perf, qc, ctx.gemmDtype, T, gates, h));
  if (pfB > 0) add(t, 'linear_attn_prefill', perf.linearAttention({ ...q, phase: 'context', batch: pfB, seq: shape.pfSeq }));
  if (dcB > 0) add(t, 'linear_attn_decode', perf.linearAttention({ ...q, phase: 'generation', batch: dcB, seq: 1 }));
  add(t, 'norm', perf.elementwise({ bytes: 3 * T * outWidth * 2 }));
  add(t, 'proj_gemm', gemmMs(perf, qc, ctx.gemmDtype, T, h, outWidth));
  return t;
}

/**
 * A sparse-attention layer priced as one module (projections, indexer, top-k, attention over the chosen tokens):
 * DSA over MLA (DeepSeek-V3.2, GLM-5), DeepSeek-V4's compressed layers (ratio 4 indexed, ratio 128 read whole),
 * MiniMax's block-sparse GQA. DeepSeek-V4's window-only layers are an MQA over the window with their projections.
 */
function sparseMixerMs(x: MixerStep, k: LayerKind): OpTimes {
  const { ctx, perf, qc, tp, T, pfB, dcB, shape } = x;
  const m = ctx.model;
  const h = m.hiddenSize;
  const idx = m.indexer;
  const heads = Math.max(1, Math.ceil(m.numHeads / tp));
  const t: OpTimes = {};
  let q: Omit<SparseAttentionQuery, 'phase' | 'batch' | 'seq' | 'prefix'>;
  const base = { heads, hidden: h, dtype: ctx.gemmDtype, kvDtype: ctx.kvDtype, window: 0, compressRatio: 1 };
  const indexer = { indexHeads: idx?.numHeads ?? 0, indexHeadDim: idx?.headDim ?? 0 };
  if (k.attention === 'dsa') {
    const a = m.mla!;
    q = {
      ...base, ...indexer, kind: 'dsa', kvHeads: 1, qLoraRank: a.qLoraRank, kvLoraRank: a.kvLoraRank, qkNopeHeadDim: a.qkNopeHeadDim,
      qkRopeHeadDim: a.qkRopeHeadDim, vHeadDim: a.vHeadDim, topk: idx?.topK ?? 0,
    };
  } else if (k.attention === 'minimax_sparse') {
    q = {
      ...base, ...indexer, kind: 'minimax_msa', kvHeads: Math.max(1, Math.ceil(m.numKvHeads / tp)), qLoraRank: 0, kvLoraRank: 0,
      qkNopeHeadDim: m.headDim, qkRopeHeadDim: 0, vHeadDim: m.headDim, topk: (idx?.topK ?? 0) * (idx?.blockSize ?? 1),
    };
  } else if (k.ratio > 0) {
    const c = m.compressed!;
    const rope = m.mla?.qkRopeHeadDim ?? DSV4_ROPE_DIM;
    const csa = k.ratio === 4 && idx !== undefined;
    q = {
      ...base, ...(csa ? indexer : { indexHeads: 0, indexHeadDim: 0 }), kind: csa ? 'dsv4_csa' : 'dsv4_hca', kvHeads: 1,
      qLoraRank: c.qLoraRank ?? 0, kvLoraRank: m.headDim, qkNopeHeadDim: m.headDim - rope, qkRopeHeadDim: rope, vHeadDim: m.headDim,
      topk: csa ? idx.topK : 0, compressRatio: k.ratio, window: k.window,
    };
  } else return windowOnlyMs(x, k);
  if (pfB > 0) add(t, 'sparse_attn_prefill', perf.sparseAttention({ ...q, phase: 'context', batch: pfB, seq: shape.pfSeq, prefix: shape.pfPrefix }));
  if (dcB > 0) add(t, 'sparse_attn_decode', perf.sparseAttention({ ...q, phase: 'generation', batch: dcB, seq: shape.dcKv }));
  void qc;
  return t;
}

/** DeepSeek-V4's rotary part of its 512-wide head (qk_rope_head_dim) when the spec has no MLA ranks. */
const DSV4_ROPE_DIM = 64;

/** DeepSeek-V4 layers that keep the window only: low-rank query, one shared K/V head, grouped low-rank output. */
function windowOnlyMs(x: MixerStep, k: LayerKind): OpTimes {
  const { ctx, perf, qc, tp, T, pfB, dcB, shape } = x;
  const m = ctx.model;
  const h = m.hiddenSize;
  const c = m.compressed!;
  const gd = ctx.gemmDtype;
  const heads = Math.max(1, Math.ceil(m.numHeads / tp));
  const qLora = c.qLoraRank ?? 0;
  const t: OpTimes = {};
  const qProj = qLora > 0 ? gemmMs(perf, qc, gd, T, qLora, h) + gemmMs(perf, qc, gd, T, heads * m.headDim, qLora) : gemmMs(perf, qc, gd, T, heads * m.headDim, h);
  add(t, 'qkv_gemm', qProj + gemmMs(perf, qc, gd, T, m.headDim, h));
  if (pfB > 0) {
    add(t, 'attention_prefill', perf.contextAttention({
      batch: pfB, seq: shape.pfSeq, prefix: shape.pfPrefix, heads, kvHeads: 1, headDim: m.headDim, dtype: 'bfloat16', kvDtype: ctx.kvDtype, window: k.window,
    }));
  }
  if (dcB > 0) {
    add(t, 'attention_decode', perf.generationAttention({
      batch: dcB, kvLen: Math.min(shape.dcKv, k.window), heads, kvHeads: 1, headDim: m.headDim, kvDtype: ctx.kvDtype, window: 0,
    }));
  }
  const groups = Math.max(1, Math.ceil(c.oGroups / tp));
  add(t, 'proj_gemm', gemmMs(perf, qc, gd, T, groups * c.oLoraRank, (heads * m.headDim) / groups) + gemmMs(perf, qc, gd, T, h, groups * c.oLoraRank));
  return t;
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

/**
 * Decode attention of `seqs` sequences that each run `queries` tokens (a speculative verify pass) over one read of
 * their KV cache. The tables time one token per sequence, so the price of seqs x queries sequences is scaled by
 * the speed-of-light ratio of the two shapes (`solOf(sequences, queries)`): about 1 / queries where reading the
 * cache bounds the kernel, 1 where its arithmetic does (MLA with many heads per GPU). Never below the price of
 * the sequences decoding one token each.
 */
function readKvOnce(queries: number, price: (batch: number) => number, seqs: number, solOf: (batch: number, queries: number) => number): number {
  const all = price(seqs * queries);
  if (queries <= 1) return all;
  return Math.max(price(seqs), all * (solOf(seqs, queries) / solOf(seqs * queries, 1)));
}

/** Share of a full-length prefill's attention work done by the new tokens after `prefix` cached ones. */
function prefixShare(seq: number, prefix: number): number {
  if (prefix <= 0) return 1;
  const full = seq + prefix;
  return (full * full - prefix * prefix) / (full * full);
}

/**
 * How to price `tokens` routed at random with tables measured under balanced routing: the tokens to ask for and
 * the share of the answer to keep. Balanced routing puts every copy on an expert of its own until tokens x topk
 * reaches the experts, then keeps every expert busy. Routers pick experts independently per token, so copies
 * collide and fewer expert weights stream (32 tokens x top-4 of 128 experts: 82 distinct, not 128), and the
 * memory-bound expert kernels cost what they read. Below that point the table is asked for as many tokens as touch
 * that many experts; above it the table reads every expert and keeps the share random routing touches (48 tokens
 * x top-8 of 256: 78%). Large batches touch every expert either way, and the share converges to 1.
 */
export function randomRouting(tokens: number, topk: number, experts: number): { tokens: number; share: number } {
  if (tokens <= 1 || topk >= experts) return { tokens, share: 1 };
  const touched = 1 - (1 - topk / experts) ** tokens;
  if (tokens * topk <= experts) return { tokens: (touched * experts) / topk, share: 1 };
  return { tokens, share: touched };
}

/** Expert slots of an expert-parallel group: redundant slots fill a width that does not divide the experts. */
function expertSlots(experts: number, moeEp: number): number {
  return Math.ceil(experts / moeEp) * moeEp;
}

/** Bytes per element of NVFP4 activations: 4-bit values and an 8-bit scale per 16 of them. */
const NVFP4_BYTES_PER_ELEMENT = 0.5 + 1 / 16;

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
    const combine = perf.nccl('alltoall', { dtype: 'bfloat16', gpus, elements, crossNode: cross });
    // TRT-LLM quantizes NVFP4 experts' activations before dispatching them (its post-quant all-to-all, on by
    // default), so they travel at NVFP4's bytes; the combine returns bf16.
    const postQuant = ctx.backend === 'trtllm' && ctx.moeDtype === 'nvfp4';
    const dispatchElements = postQuant ? Math.ceil((elements * NVFP4_BYTES_PER_ELEMENT) / DTYPE_BYTES.bfloat16) : elements;
    return combine + perf.nccl('alltoall', { dtype: 'bfloat16', gpus, elements: dispatchElements, crossNode: cross });
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
