// Memory per GPU: weights, KV cache per token, activations for the step's token budget, runtime reserve,
// and from these the number of sequences of length isl+osl that fit.
import { layersOf } from '../inputs/layers.js';
import { DTYPE_BYTES, type Dtype, type GdnSpec, type KdaSpec, type LayerKind, type Mamba2Spec, type ModelSpec } from '../inputs/types.js';
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
  let layers = 0;
  for (const k of layerKinds(m)) {
    let per = 0;
    if (k.attention === 'full') {
      const kvh = Math.ceil(k.kvHeads / tp);
      per += (h * (heads + 2 * kvh) * m.headDim + heads * m.headDim * h) * wb;
    } else if (k.attention === 'mla' && m.mla) {
      const a = m.mla;
      per += h * ((a.qLoraRank || 0) + a.kvLoraRank + a.qkRopeHeadDim) * wb;
      per += (a.qLoraRank > 0 ? a.qLoraRank : h) * heads * (a.qkNopeHeadDim + a.qkRopeHeadDim) * wb;
      per += a.kvLoraRank * heads * (a.qkNopeHeadDim + a.vHeadDim) * wb;
      per += heads * a.vHeadDim * h * wb;
    } else if (k.attention === 'linear') {
      per += (h * h * wb) / tp;
    }
    if (k.ffn === 'dense') per += (3 * h * k.inter * wb) / tp;
    else if (k.ffn === 'linear') per += (h * h * wb) / tp;
    else if (k.ffn === 'moe' && m.moe) {
      const e = m.moe;
      per += (e.numExperts * 3 * h * e.expertIntermediateSize * mb) / (moeTp * moeEp);
      per += (e.sharedExperts * 3 * h * e.sharedIntermediateSize * wb) / tp;
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
  const kvRead = perRank * (kv.full * kvLen + kv.sliding * Math.min(kvLen, kv.window || kvLen));
  return ((weights + kvRead) / (ctx.system.gpu.memBwGBs * 1e9)) * 1000;
}

/** KV-cache bytes per token per GPU for full-attention layers and for sliding-window layers. */
export function kvBytesPerToken(ctx: EngineContext, layout: ParallelLayout): { full: number; sliding: number; window: number } {
  const m = ctx.model;
  const kb = DTYPE_BYTES[ctx.kvDtype];
  let full = 0;
  let sliding = 0;
  let window = 0;
  for (const k of layerKinds(m, profileOf(ctx).uniformWindow)) {
    let per = 0;
    if (k.attention === 'full') per = 2 * Math.ceil(k.kvHeads / layout.tp) * m.headDim * kb;
    else if (k.attention === 'mla' && m.mla) per = (m.mla.kvLoraRank + m.mla.qkRopeHeadDim) * kb; // latent, replicated over tp
    if (k.window > 0) {
      sliding += per * k.count;
      window = Math.max(window, k.window);
    } else full += per * k.count;
  }
  return { full: full / layout.pp, sliding: sliding / layout.pp, window };
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
  const weights = weightBytesPerGpu(ctx, layout);
  const act = activationBytes(ctx, layout, maxNumTokens);
  const reserve = prof.reserveGiB * GiB + (layout.tp * layout.dp > 1 ? 0.4 * GiB : 0);
  const nonKv = weights + act + reserve;
  const frac = memoryFractionOf(prof, system.gpu.memGiB);
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
  const kv = kvBytesPerToken(ctx, layout);
  const slidingTok = kv.window > 0 && prof.kvWindowSavesMemory ? Math.min(kv.window, seqTokens) : seqTokens;
  const block = prof.kvBlockTokens;
  const roundUp = (x: number) => Math.ceil(x / block) * block;
  const perSeq = kv.full * roundUp(seqTokens) + kv.sliding * roundUp(slidingTok);
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

/**
 * What one layer of a model caches per sequence, for every layer kind (the spec's own view, one GPU, no parallel
 * split): bytes per cached token of attention, per compressed entry, per indexed token, and a fixed recurrent state.
 */
export interface LayerState {
  kind: LayerKind;
  /** Bytes per token kept in the attention cache (K and V, or the MLA latent). */
  perToken: number;
  /** Tokens kept: every token (undefined) or the last `window`. */
  window?: number;
  /** Compressed KV (DeepSeek-V4): bytes per entry, one entry per `ratio` tokens. */
  compressed?: { perEntry: number; ratio: number };
  /** Indexer keys per token (DSA, MiniMax sparse) or per compressed entry (DeepSeek-V4 ratio-4 layers). */
  indexerPerToken: number;
  /** Bytes per sequence that do not grow with its length: recurrent state and convolution window. */
  fixed: number;
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

/** Bytes per token of one attention layer's cache: the MLA latent, or K and V of every KV head (one vector when K = V). */
function attentionTokenBytes(m: ModelSpec, kind: 'full' | 'sliding', kvHeads: number, kb: number): number {
  if (m.mla) return (m.mla.kvLoraRank + m.mla.qkRopeHeadDim) * kb;
  const shape = m.attentionShapes?.[kind];
  if (!shape) return 2 * kvHeads * m.headDim * kb;
  const v = shape.kEqV ? 0 : (shape.vHeadDim ?? shape.headDim);
  return shape.numKvHeads * (shape.headDim + v) * kb;
}

/** Per-layer cache of a model whose KV entries take `kvDtype` (recurrent states take the spec's stateBytes). */
export function layerStates(m: ModelSpec, kvDtype: Dtype): LayerState[] {
  const kb = DTYPE_BYTES[kvDtype];
  const overrides = new Map((m.layerOverrides ?? []).map((o) => [o.layer, o]));
  const idx = m.indexer;
  return layersOf(m).map((l, i): LayerState => {
    const o = overrides.get(i);
    const base: LayerState = { kind: l.kind, perToken: 0, indexerPerToken: 0, fixed: 0 };
    if (o?.attention === 'none' || o?.attention === 'linear') return base;
    switch (l.kind) {
      case 'none':
        return base;
      case 'gdn':
        return { ...base, fixed: gdnStateBytes(m.gdn!) };
      case 'mamba2':
        return { ...base, fixed: mamba2StateBytes(m.mamba2!) };
      case 'kda':
        return { ...base, fixed: kdaStateBytes(m.kda!) };
      case 'full':
      case 'sliding': {
        const s: LayerState = { ...base, perToken: attentionTokenBytes(m, l.kind, o?.numKvHeads ?? m.numKvHeads, kb) };
        if (l.kind === 'sliding') s.window = l.window;
        return s;
      }
      case 'dsa':
      case 'minimax_sparse':
        // Every token stays cached (the indexer chooses which to read); the indexer keeps one key per token.
        return { ...base, perToken: attentionTokenBytes(m, 'full', o?.numKvHeads ?? m.numKvHeads, kb), indexerPerToken: (idx?.headDim ?? 0) * kb };
      case 'compressed': {
        // DeepSeek-V4: one shared K/V vector per KV head for each token of the window and each compressed entry.
        const entry = m.numKvHeads * m.headDim * kb;
        const s: LayerState = { ...base, perToken: entry, window: l.window };
        if (l.ratio) s.compressed = { perEntry: entry + (l.ratio === 4 && idx ? idx.headDim * kb : 0), ratio: l.ratio };
        return s;
      }
    }
  });
}

/** One sequence's cache, by part, for a sequence of `tokens` tokens on one GPU (no parallel split). */
export interface SequenceBytes {
  /** K/V (or latent) of the layers that keep every token. */
  kv: number;
  /** K/V of windowed layers, at most their window each. */
  window: number;
  /** Compressed KV entries (and their indexer keys). */
  compressed: number;
  /** Indexer keys of sparse-attention layers. */
  indexer: number;
  /** Recurrent and convolution states of linear-attention and Mamba-2 layers, independent of `tokens`. */
  recurrent: number;
  total: number;
}

/**
 * Bytes one sequence of `tokens` tokens holds: only full-attention (and sparse) layers grow with every token,
 * sliding layers stop at their window, compressed layers grow by one entry per `ratio` tokens, and linear-attention
 * layers keep a fixed-size state. `kvBytesPerToken` is what today's pricing uses; for the kinds it prices (full,
 * sliding, MLA) both agree.
 */
export function sequenceBytes(m: ModelSpec, kvDtype: Dtype, tokens: number): SequenceBytes {
  const out: SequenceBytes = { kv: 0, window: 0, compressed: 0, indexer: 0, recurrent: 0, total: 0 };
  for (const s of layerStates(m, kvDtype)) {
    if (s.window !== undefined) out.window += s.perToken * Math.min(tokens, s.window);
    else out.kv += s.perToken * tokens;
    if (s.compressed) out.compressed += s.compressed.perEntry * Math.ceil(tokens / s.compressed.ratio);
    out.indexer += s.indexerPerToken * tokens;
    out.recurrent += s.fixed;
  }
  out.total = out.kv + out.window + out.compressed + out.indexer + out.recurrent;
  return out;
}
