// Parameter counts from a ModelSpec (the 2% check against published sizes, and weight memory).
import type { LayerOverride, ModelSpec } from './types.js';

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

/** Whether layer `i` runs the MoE block (after the dense first layers, on every `layerStep`-th layer). */
export function isMoeLayer(m: ModelSpec, i: number): boolean {
  return !!m.moe && i >= m.moe.firstDenseLayers && (i + 1) % (m.moe.layerStep ?? 1) === 0;
}

/** Parameters of the FFN of layer `i` (dense MLP, MoE with router and shared experts). */
export function ffnParams(m: ModelSpec, i: number, ov?: LayerOverride): number {
  const h = m.hiddenSize;
  if (ov?.ffn === 'none' || ov?.intermediateSize === 0) return 0;
  if (ov?.ffn === 'linear') return h * h;
  if (isMoeLayer(m, i)) {
    const e = m.moe!;
    return e.numExperts * 3 * h * e.expertIntermediateSize + e.sharedExperts * 3 * h * e.sharedIntermediateSize + h * e.numExperts;
  }
  return 3 * h * (ov?.intermediateSize ?? m.intermediateSize);
}

/** Total parameters including embeddings and the LM head (counted once when tied); MTP layers excluded. */
export function countParams(m: ModelSpec): number {
  const h = m.hiddenSize;
  const overrides = new Map((m.layerOverrides ?? []).map((o) => [o.layer, o]));
  let total = m.vocabSize * h * (m.tiedEmbeddings ? 1 : 2) + h; // embeddings, LM head, final norm
  for (let i = 0; i < m.numLayers; i++) {
    const ov = overrides.get(i);
    const attn = ov?.attention === 'none' ? 0 : ov?.attention === 'linear' ? h * h : attentionParams(m, ov?.numKvHeads);
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
  for (let i = 0; i < m.numLayers; i++) if (isMoeLayer(m, i)) moeLayers++;
  return countParams(m) - embedding - moeLayers * (e.numExperts - e.topK) * 3 * m.hiddenSize * e.expertIntermediateSize;
}
