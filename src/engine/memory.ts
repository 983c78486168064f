// Memory per GPU: weights, KV cache per token, activations for the step's token budget, runtime reserve,
// and from these the number of sequences of length isl+osl that fit.
import { DTYPE_BYTES, type GdnSpec, type IndexerSpec, type KdaSpec, type Mamba2Spec, type ModelSpec } from '../inputs/types.js';
import { mixerParams } from '../inputs/params.js';
import { memoryFractionOf, profileOf } from './backends.js';
import { layerKinds } from './ops.js';
import type { EngineContext, MemoryPicture, ParallelLayout, Refusal } from './types.js';

const GiB = 1024 ** 3;

/** Weight bytes on the most loaded GPU (pipeline stages hold ~L/pp layers each; embeddings on the ends). */
export function weightBytesPerGpu(ctx: EngineContext, layout: ParallelLayout): number {
  const m = ctx.model;
  const { tp, pp, moeTp, moeEp } = layout;
  const wb = DTYPE_BYTES[ctx.gemmDtype];
  const mb = DTYPE_BYTES[ctx.moeDtype];
  const h = m.hiddenSize;
  const heads = Math.ceil(m.numHeads / tp);
  const mats = m.ungatedMlp ? 2 : 3;
  let layers = 0;
  for (const k of layerKinds(m)) {
    let per = 0;
    if (k.attention === 'full' && (k.shape || m.attentionOutputGate)) {
      per += (mixerParams(m, k.layer, k.kvHeads) * wb) / tp;
    } else if (k.attention === 'full' || k.attention === 'minimax_sparse') {
      const kvh = Math.ceil(k.kvHeads / tp);
      per += (h * (heads + 2 * kvh) * m.headDim + heads * m.headDim * h) * wb;
    } else if ((k.attention === 'mla' || k.attention === 'dsa') && m.mla) {
      const a = m.mla;
      per += h * ((a.qLoraRank || 0) + a.kvLoraRank + a.qkRopeHeadDim) * wb;
      per += (a.qLoraRank > 0 ? a.qLoraRank : h) * heads * (a.qkNopeHeadDim + a.qkRopeHeadDim) * wb;
      per += a.kvLoraRank * heads * (a.qkNopeHeadDim + a.vHeadDim) * wb;
      per += heads * a.vHeadDim * h * wb;
    } else if (k.attention === 'linear') {
      per += (h * h * wb) / tp;
    } else if (k.attention !== 'none') {
      // Linear-attention and DeepSeek-V4 mixers split their heads over tp.
      per += (mixerParams(m, k.layer, k.kvHeads) * wb) / tp;
    }
    // The indexer of sparse attention is replicated on every rank.
    if ((k.attention === 'dsa' || k.attention === 'minimax_sparse') && m.indexer) per += indexerParams(m) * wb;
    if (k.ffn === 'dense') per += (mats * h * k.inter * wb) / tp;
    else if (k.ffn === 'linear') per += (h * h * wb) / tp;
    else if (k.ffn === 'moe' && m.moe) {
      const e = m.moe;
      per += (e.numExperts * mats * (e.latentSize ?? h) * e.expertIntermediateSize * mb) / (moeTp * moeEp);
      if (e.latentSize) per += (2 * h * e.latentSize * wb) / tp;
      per += (e.sharedExperts * mats * h * e.sharedIntermediateSize * wb) / tp;
      per += e.numExperts * h * 2;
    }
    per += 2 * h * 2; // norms
    layers += per * k.count;
  }
  const embed = (m.vocabSize * h * 2) / tp;
  const head = m.tiedEmbeddings ? 0 : embed;
  // With pp > 1 the first stage holds the embedding and the last the LM head; take the larger stage.
  return pp > 1 ? layers / pp + Math.max(embed, head) : layers + embed + head;
}

/** Weights of a sparse attention's indexer: its query projection, key projection and head weights. */
function indexerParams(m: ModelSpec): number {
  const idx = m.indexer!;
  const h = m.hiddenSize;
  const qIn = m.mla && m.mla.qLoraRank > 0 ? m.mla.qLoraRank : h;
  return qIn * idx.numHeads * idx.headDim + h * idx.headDim + h * idx.numHeads;
}

/**
 * A floor for one decode step on one GPU: the weights it must read (only the experts `tokens` can touch)
 * plus the KV cache of `seqs` sequences of `kvLen` tokens, at full HBM bandwidth. ms.
 */
export function decodeFloorMs(ctx: EngineContext, layout: ParallelLayout, seqs: number, kvLen: number): number {
  const m = ctx.model;
  let weights = weightBytesPerGpu(ctx, layout);
  if (m.moe) {
    const e = m.moe;
    const moeLayers = layerKinds(m).filter((k) => k.ffn === 'moe').reduce((a, k) => a + k.count, 0) / layout.pp;
    const experts = (moeLayers * e.numExperts * 3 * m.hiddenSize * e.expertIntermediateSize * DTYPE_BYTES[ctx.moeDtype]) / (layout.moeTp * layout.moeEp);
    const touched = Math.min(1, (seqs * e.topK) / e.numExperts);
    weights -= experts * (1 - touched);
  }
  const kv = kvBytesPerToken(ctx, layout);
  const perRank = Math.ceil(seqs / layout.dp);
  const kvRead = perRank * (kv.full * kvLen + kv.sliding * Math.min(kvLen, kv.window || kvLen) + kv.fixed);
  return ((weights + kvRead) / (ctx.system.gpu.memBwGBs * 1e9)) * 1000;
}

/**
 * What one sequence holds in the cache of one GPU: bytes per token of the layers that keep every token (attention,
 * MLA, sparse attention with its indexer keys, DeepSeek-V4's compressed entries spread over their tokens), bytes per
 * token of the windowed layers (kept up to `window` tokens), and a fixed per-sequence state (the recurrent state
 * and convolution window of linear-attention layers), which never grows with the context.
 */
export interface KvPerGpu {
  full: number;
  sliding: number;
  window: number;
  fixed: number;
}

/** KV-cache bytes per token per GPU for full-attention and sliding-window layers, and the fixed state per sequence. */
export function kvBytesPerToken(ctx: EngineContext, layout: ParallelLayout): KvPerGpu {
  const m = ctx.model;
  const kb = DTYPE_BYTES[ctx.kvDtype];
  const tp = layout.tp;
  let full = 0;
  let sliding = 0;
  let window = 0;
  let fixed = 0;
  for (const k of layerKinds(m, profileOf(ctx).uniformWindow)) {
    let per = 0;
    let perFull = 0;
    if (k.attention === 'full' || k.attention === 'minimax_sparse') {
      const kvh = Math.ceil(k.kvHeads / tp);
      const qk = k.shape?.headDim ?? m.headDim;
      per = kvh * (qk + (k.shape?.kEqV ? 0 : (k.shape?.vHeadDim ?? qk))) * kb;
    } else if ((k.attention === 'mla' || k.attention === 'dsa') && m.mla) {
      per = (m.mla.kvLoraRank + m.mla.qkRopeHeadDim) * kb; // latent, replicated over tp
    } else if (k.attention === 'compressed') {
      // One shared K/V vector per token of the window, and per compressed entry (ratio-4 entries with indexer keys).
      per = m.numKvHeads * m.headDim * kb;
      if (k.ratio > 0) perFull = (per + (k.ratio === 4 && m.indexer ? indexerKeyBytes(m.indexer) : 0)) / k.ratio;
    } else if (k.attention === 'gdn') {
      const g = m.gdn!;
      fixed += k.count * gdnStateBytes({ ...g, numValueHeads: Math.ceil(g.numValueHeads / tp), numKeyHeads: Math.ceil(g.numKeyHeads / tp) });
    } else if (k.attention === 'mamba2') {
      const s2 = m.mamba2!;
      fixed += k.count * mamba2StateBytes({ ...s2, numHeads: Math.ceil(s2.numHeads / tp), groups: Math.ceil(s2.groups / Math.min(tp, s2.groups)) });
    } else if (k.attention === 'kda') {
      fixed += k.count * kdaStateBytes({ ...m.kda!, numHeads: Math.ceil(m.kda!.numHeads / tp) });
    }
    if ((k.attention === 'dsa' || k.attention === 'minimax_sparse') && m.indexer) per += indexerKeyBytes(m.indexer);
    full += perFull * k.count;
    if (k.window > 0) {
      sliding += per * k.count;
      window = Math.max(window, k.window);
    } else full += per * k.count;
  }
  return { full: full / layout.pp, sliding: sliding / layout.pp, window, fixed: fixed / layout.pp };
}

/** Bytes per token of an indexer's key cache: fp8 keys with one fp32 scale per 128 values, as the engines store them. */
export function indexerKeyBytes(idx: IndexerSpec): number {
  return idx.headDim + 4 * Math.ceil(idx.headDim / 128);
}

/** Activation peak for a step of `tokens` tokens on one GPU: the widest intermediate tensors, a few live at once. */
export function activationBytes(ctx: EngineContext, layout: ParallelLayout, tokens: number): number {
  const m = ctx.model;
  const { tp } = layout;
  const qkv = (Math.ceil(m.numHeads / tp) + 2 * Math.ceil(m.numKvHeads / tp)) * m.headDim;
  const ffn = m.moe
    ? Math.max((2 * m.intermediateSize) / tp, (m.moe.topK * 2 * m.moe.expertIntermediateSize) / Math.max(1, layout.moeTp))
    : (2 * m.intermediateSize) / tp;
  const widest = Math.max(qkv, ffn, m.hiddenSize);
  const perToken = (4 * m.hiddenSize + 2 * widest) * 2;
  const logits = Math.min(tokens, 1024) * (m.vocabSize / tp) * 4;
  return tokens * perToken + logits + 256 * 1024 * 1024;
}

/**
 * Speculative decoding's draft on each GPU (src/engine/speculation.ts): its layers' weights and KV. An MTP draft
 * loads the checkpoint's MTP layers, each one decoder layer of the main model's shape with its own KV cache; an
 * EAGLE-3 draft is one dense layer of the model's width (bf16, split over tp) with a 32k-token head.
 */
function draftMemory(ctx: EngineContext, layout: ParallelLayout): { weightBytes: number; kvFactor: number } {
  const s = ctx.speculation;
  const m = ctx.model;
  if (!s || s.draft <= 0) return { weightBytes: 0, kvFactor: 1 };
  if (s.method === 'eagle3') {
    const h = m.hiddenSize;
    const layer = (4 * h * h + 3 * h * m.intermediateSize + 3 * h * h + 32000 * h) * 2;
    return { weightBytes: layer / layout.tp, kvFactor: 1 + 1 / m.numLayers };
  }
  const layers = Math.max(1, m.mtpLayers ?? 1);
  const perLayer = weightBytesPerGpu(ctx, { ...layout, pp: 1 }) / m.numLayers;
  return { weightBytes: layers * perLayer, kvFactor: 1 + layers / m.numLayers };
}

/**
 * The memory picture of one GPU of an instance with this layout and token budget. Refuses when the weights
 * (plus runtime reserve) leave no room for a single sequence.
 */
const memMemo = new WeakMap<EngineContext, Map<string, MemoryPicture | Refusal>>();

export function memoryPicture(
  ctx: EngineContext,
  layout: ParallelLayout,
  maxNumTokens: number,
  seqTokens: number,
  system = ctx.system,
): MemoryPicture | Refusal {
  let m = memMemo.get(ctx);
  if (!m) memMemo.set(ctx, (m = new Map()));
  const key = `${layout.tp},${layout.pp},${layout.dp},${layout.moeTp},${layout.moeEp},${maxNumTokens},${seqTokens},${system.name}`;
  let v = m.get(key);
  if (!v) m.set(key, (v = computeMemory(ctx, layout, maxNumTokens, seqTokens, system)));
  return v;
}

function computeMemory(
  ctx: EngineContext,
  layout: ParallelLayout,
  maxNumTokens: number,
  seqTokens: number,
  system: EngineContext['system'],
): MemoryPicture | Refusal {
  const prof = profileOf(ctx);
  const cap = system.gpu.memGiB * GiB;
  const draft = draftMemory(ctx, layout);
  const weights = weightBytesPerGpu(ctx, layout) + draft.weightBytes;
  const act = activationBytes(ctx, layout, maxNumTokens);
  const reserve = prof.reserveGiB * GiB + (layout.tp * layout.dp > 1 ? 0.4 * GiB : 0);
  const nonKv = weights + act + reserve;
  const frac = ctx.memoryFraction ?? memoryFractionOf(prof, system.gpu.memGiB);
  const kvBudget = prof.memoryMode === 'of_free' ? (cap - nonKv) * frac : cap * frac - nonKv;
  const fmt = (b: number) => (b / GiB).toFixed(1);
  if (weights + reserve > cap * (prof.memoryMode === 'of_free' ? 1 : frac)) {
    return {
      refused: true,
      constraint: 'memory',
      reason: `weights need ${fmt(weights)} GiB per GPU (+${fmt(reserve)} GiB runtime) but ${system.name} has ${fmt(cap)} GiB` +
        (prof.memoryMode === 'of_total' ? ` of which ${Math.round(frac * 100)}% is usable` : ''),
    };
  }
  const kvMain = kvBytesPerToken(ctx, layout);
  const kv = { ...kvMain, full: kvMain.full * draft.kvFactor };
  const slidingTok = kv.window > 0 && prof.kvWindowSavesMemory ? Math.min(kv.window, seqTokens) : seqTokens;
  const block = prof.kvBlockTokens;
  const roundUp = (x: number) => Math.ceil(x / block) * block;
  // Linear-attention layers add their fixed recurrent state to every sequence, whatever its length.
  const perSeq = kv.full * roundUp(seqTokens) + kv.sliding * roundUp(slidingTok) + kv.fixed;
  const kvBytes = Math.max(0, kvBudget);
  const perTok = kv.full + kv.sliding;
  const kvTokens = perTok > 0 ? Math.floor(kvBytes / perTok) : Number.MAX_SAFE_INTEGER;
  const perRank = perSeq > 0 ? Math.floor(kvBytes / perSeq) : 1_000_000;
  if (perRank < 1) {
    return {
      refused: true,
      constraint: 'memory',
      reason: `after ${fmt(weights)} GiB of weights, ${fmt(act)} GiB of activations and ${fmt(reserve)} GiB runtime per GPU, ` +
        `the KV cache (${fmt(kvBytes)} GiB) cannot hold one sequence of ${seqTokens} tokens`,
    };
  }
  return {
    capacityGiB: cap / GiB,
    weightsGiB: weights / GiB,
    activationGiB: act / GiB,
    reserveGiB: reserve / GiB,
    kvCacheGiB: kvBytes / GiB,
    kvBytesPerTokenPerGpu: perTok,
    kvTokens: kvTokens * layout.dp,
    maxSequences: perRank * layout.dp,
  };
}

/** Elements of the convolution and recurrent states are kept in 16 bits unless the spec says float32 (stateBytes). */
const CONV_BYTES = 2;

/** Recurrent state + convolution window of one gated-delta-net layer, bytes per sequence. */
export function gdnStateBytes(g: GdnSpec): number {
  const state = g.numValueHeads * g.keyHeadDim * g.valueHeadDim * g.stateBytes;
  const conv = (g.convKernel - 1) * (2 * g.numKeyHeads * g.keyHeadDim + g.numValueHeads * g.valueHeadDim) * CONV_BYTES;
  return state + conv;
}

/** SSM state + convolution window of one Mamba-2 layer, bytes per sequence. */
export function mamba2StateBytes(s: Mamba2Spec): number {
  const state = s.numHeads * s.headDim * s.stateSize * s.stateBytes;
  const conv = (s.convKernel - 1) * (s.numHeads * s.headDim + 2 * s.groups * s.stateSize) * CONV_BYTES;
  return state + conv;
}

/** Recurrent state + short convolutions (q, k, v) of one Kimi-delta-attention layer, bytes per sequence. */
export function kdaStateBytes(k: KdaSpec): number {
  const state = k.numHeads * k.headDim * k.headDim * k.stateBytes;
  const conv = (k.convKernel - 1) * 3 * k.numHeads * k.headDim * CONV_BYTES;
  return state + conv;
}
