// Parameter counts from a ModelSpec (the 2% check against published sizes, and weight memory).
import { layersOf, type LayerOf } from './layers.js';
import type { AttentionShape, LayerOverride, ModelSpec } from './types.js';

/** Parameters of one attention block (projections and, for MLA, the latent norms). */
export function attentionParams(m: ModelSpec, kvHeads = m.numKvHeads): number {
  const h = m.hiddenSize;
  if (m.mla) {
    const a = m.mla;
    const qkHead = a.qkNopeHeadDim + a.qkRopeHeadDim;
    const q = a.qLoraRank > 0 ? h * a.qLoraRank + a.qLoraRank + a.qLoraRank * m.numHeads * qkHead : h * m.numHeads * qkHead;
    const kvA = h * (a.kvLoraRank + a.qkRopeHeadDim) + a.kvLoraRank;
    const kvB = a.kvLoraRank * m.numHeads * (a.qkNopeHeadDim + a.vHeadDim);
    const o = m.numHeads * a.vHeadDim * h;
    return q + kvA + kvB + o;
  }
  const qo = 2 * h * m.numHeads * m.headDim;
  const kv = 2 * h * kvHeads * m.headDim;
  return qo + kv;
}

/** Parameters of an attention block of an explicit shape (Gemma-4 global layers, MiMo-V2-Flash). */
function shapedAttentionParams(h: number, a: AttentionShape): number {
  const v = a.vHeadDim ?? a.headDim;
  return h * a.numHeads * a.headDim + h * a.numKvHeads * a.headDim + (a.kEqV ? 0 : h * a.numKvHeads * v) + a.numHeads * v * h;
}

/**
 * Parameters of one layer's token mixer. Full and sliding attention as `attentionParams`; the linear and sparse
 * kinds count their projections, convolutions and indexers (small gates and norms left out).
 */
export function mixerParams(m: ModelSpec, l: LayerOf, kvHeads = m.numKvHeads): number {
  const h = m.hiddenSize;
  const idx = m.indexer;
  switch (l.kind) {
    case 'none':
      return 0;
    case 'gdn': {
      const g = m.gdn!;
      const qk = 2 * g.numKeyHeads * g.keyHeadDim;
      const v = g.numValueHeads * g.valueHeadDim;
      return h * (qk + 2 * v + 2 * g.numValueHeads) + (qk + v) * g.convKernel + v * h;
    }
    case 'mamba2': {
      const s = m.mamba2!;
      const inner = s.numHeads * s.headDim;
      const conv = inner + 2 * s.groups * s.stateSize;
      return h * (inner + conv + s.numHeads) + conv * s.convKernel + inner * h + 3 * s.numHeads + inner;
    }
    case 'kda': {
      const k = m.kda!;
      const width = k.numHeads * k.headDim;
      // q, k, v, the decay and output gates, and the output projection; short convolutions over q, k, v.
      return 6 * h * width + 3 * width * k.convKernel + h * k.numHeads;
    }
    case 'compressed': {
      const a = m.mla;
      const c = m.compressed!;
      const qLora = a?.qLoraRank ?? 0;
      const q = qLora > 0 ? h * qLora + qLora * m.numHeads * m.headDim : h * m.numHeads * m.headDim;
      const kv = h * m.numKvHeads * m.headDim;
      const o = m.numHeads * m.headDim * c.oLoraRank + c.oGroups * c.oLoraRank * h;
      const indexer = l.ratio === 4 && idx ? (qLora || h) * idx.numHeads * idx.headDim + h * idx.headDim + h * idx.numHeads : 0;
      return q + kv + o + indexer;
    }
    default: {
      const shape = l.kind === 'full' || l.kind === 'sliding' ? m.attentionShapes?.[l.kind] : undefined;
      const gate = m.attentionOutputGate && !m.mla ? h * m.numHeads * m.headDim : 0;
      const attn = (shape ? shapedAttentionParams(h, shape) : attentionParams(m, kvHeads)) + gate;
      if ((l.kind !== 'dsa' && l.kind !== 'minimax_sparse') || !idx) return attn;
      const qIn = m.mla && m.mla.qLoraRank > 0 ? m.mla.qLoraRank : h;
      return attn + qIn * idx.numHeads * idx.headDim + h * idx.headDim + h * idx.numHeads;
    }
  }
}

/** Whether layer `i` runs the MoE block (after the dense first layers, on every `layerStep`-th layer). */
export function isMoeLayer(m: ModelSpec, i: number): boolean {
  return !!m.moe && i >= m.moe.firstDenseLayers && (i + 1) % (m.moe.layerStep ?? 1) === 0;
}

/** Parameters of the FFN of layer `i` (dense MLP, MoE with router and shared experts). */
export function ffnParams(m: ModelSpec, i: number, ov?: LayerOverride): number {
  const h = m.hiddenSize;
  if (ov?.ffn === 'none' || ov?.intermediateSize === 0) return 0;
  if (ov?.ffn === 'linear') return h * h;
  const mats = m.ungatedMlp ? 2 : 3;
  if (isMoeLayer(m, i)) {
    const e = m.moe!;
    // Latent experts: projected down to latentSize and back around the experts.
    const width = e.latentSize ?? h;
    const latent = e.latentSize ? 2 * h * e.latentSize : 0;
    return e.numExperts * mats * width * e.expertIntermediateSize + latent + e.sharedExperts * mats * h * e.sharedIntermediateSize + h * e.numExperts;
  }
  return mats * h * (ov?.intermediateSize ?? m.intermediateSize);
}

/** Total parameters including embeddings and the LM head (counted once when tied); MTP layers excluded. */
export function countParams(m: ModelSpec): number {
  const h = m.hiddenSize;
  const overrides = new Map((m.layerOverrides ?? []).map((o) => [o.layer, o]));
  let total = m.vocabSize * h * (m.tiedEmbeddings ? 1 : 2) + h; // embeddings, LM head, final norm
  const layers = m.layerMix || m.attentionShapes ? layersOf(m) : undefined;
  for (let i = 0; i < m.numLayers; i++) {
    const ov = overrides.get(i);
    const attn = ov?.attention === 'none' ? 0 : ov?.attention === 'linear' ? h * h : layers ? mixerParams(m, layers[i]!, ov?.numKvHeads) : attentionParams(m, ov?.numKvHeads);
    total += attn + ffnParams(m, i, ov) + 2 * h; // two RMSNorms
  }
  return total;
}

/**
 * Weights a token passes through: routed experts counted top-k times, and the input embedding left out (a row
 * lookup, not a matmul). This is how the gpt-oss card counts its 5.1B active parameters.
 */
export function activeParams(m: ModelSpec): number {
  const embedding = m.tiedEmbeddings ? 0 : m.vocabSize * m.hiddenSize;
  if (!m.moe) return countParams(m) - embedding;
  const e = m.moe;
  let moeLayers = 0;
  const noFfn = new Set((m.layerOverrides ?? []).filter((o) => o.ffn === 'none' || o.intermediateSize === 0).map((o) => o.layer));
  for (let i = 0; i < m.numLayers; i++) if (isMoeLayer(m, i) && !noFfn.has(i)) moeLayers++;
  const idle = (e.numExperts - e.topK) * (m.ungatedMlp ? 2 : 3) * (e.latentSize ?? m.hiddenSize) * e.expertIntermediateSize;
  return countParams(m) - embedding - moeLayers * idle;
}
