// The layer mix of a model: which kind of token mixer each layer runs (full or sliding attention, linear
// attention, state-space mixers, sparse attention), as a per-layer list, as runs, and as a short summary.
import type { LayerKind, LayerOverride, LayerRun, ModelSpec } from './types.js';

/** One layer's mixer; `window` and `ratio` as in LayerRun. */
export interface LayerOf {
  kind: LayerKind;
  window?: number;
  ratio?: number;
}

/** What each kind is called in messages. */
export const LAYER_KIND_NAMES: Readonly<Record<LayerKind, string>> = {
  full: 'full-attention',
  sliding: 'sliding-window',
  gdn: 'gated-delta-net',
  mamba2: 'Mamba-2',
  kda: 'Kimi-delta-attention (KDA)',
  dsa: 'DeepSeek-sparse-attention (DSA)',
  minimax_sparse: 'MiniMax-sparse-attention',
  compressed: 'DeepSeek-V4 compressed-attention',
  none: 'FFN-only',
};

const SHORT: Readonly<Record<LayerKind, string>> = {
  full: 'full',
  sliding: 'sliding',
  gdn: 'GDN',
  mamba2: 'Mamba-2',
  kda: 'KDA',
  dsa: 'DSA',
  minimax_sparse: 'sparse',
  compressed: 'compressed',
  none: 'FFN-only',
};

/** Run-length form of a per-layer list (consecutive layers of the same kind, window and ratio merge). */
export function toRuns(layers: readonly LayerOf[]): LayerRun[] {
  const runs: LayerRun[] = [];
  for (const l of layers) {
    const last = runs[runs.length - 1];
    if (last && last.kind === l.kind && last.window === l.window && last.ratio === l.ratio) {
      last.count++;
      continue;
    }
    const run: LayerRun = { kind: l.kind, count: 1 };
    if (l.window !== undefined) run.window = l.window;
    if (l.ratio !== undefined) run.ratio = l.ratio;
    runs.push(run);
  }
  return runs;
}

/**
 * Every layer's mixer, in layer order: from `layerMix` when the spec has one, otherwise full attention with the
 * sliding layers of `slidingWindow` (the attention a layer override removes or replaces stays 'full' here: the
 * override says what the engine runs).
 */
export function layersOf(m: ModelSpec): LayerOf[] {
  if (m.layerMix) {
    return m.layerMix.flatMap((r) => Array.from({ length: r.count }, () => {
      const l: LayerOf = { kind: r.kind };
      if (r.window !== undefined) l.window = r.window;
      if (r.ratio !== undefined) l.ratio = r.ratio;
      return l;
    }));
  }
  const sw = m.slidingWindow;
  return Array.from({ length: m.numLayers }, (_, i) => (sw?.layers[i] ? { kind: 'sliding', window: sw.window } : { kind: 'full' }));
}

/** Number of layers of each kind. */
export function countKinds(m: ModelSpec): Partial<Record<LayerKind, number>> {
  const out: Partial<Record<LayerKind, number>> = {};
  // From the runs of the mix, without expanding them layer by layer (the engine's rules ask on every estimate).
  const runs: Array<{ kind: LayerKind; count: number }> = m.layerMix ?? layersOf(m).map((l) => ({ kind: l.kind, count: 1 }));
  for (const r of runs) out[r.kind] = (out[r.kind] ?? 0) + r.count;
  return out;
}

/** The label of one layer in the summary: `sliding(512)`, `full[hd 512, K=V]`, `compressed(1/4)`, `GDN`. */
function labelOf(m: ModelSpec, l: LayerOf): string {
  let label = SHORT[l.kind];
  if (l.kind === 'sliding') label += `(${l.window})`;
  if (l.kind === 'compressed') label = l.ratio ? `compressed(1/${l.ratio})` : `window(${l.window})`;
  const shape = l.kind === 'full' || l.kind === 'sliding' ? m.attentionShapes?.[l.kind] : undefined;
  if (shape) {
    const notes = [`hd ${shape.headDim}${shape.vHeadDim !== undefined ? `/${shape.vHeadDim}` : ''}`, `kv ${shape.numKvHeads}`];
    if (shape.kEqV) notes.push('K=V');
    label += `[${notes.join(', ')}]`;
  }
  return label;
}

/**
 * The layer mix in one line, most common kind first: `45 GDN + 15 full`, `40 sliding(512) + 8 full`, `64 full`.
 * Layers whose attention a layer override removes count as `no-attn`, replaced by a linear as `linear`.
 */
export function layerMixSummary(m: ModelSpec): string {
  const overrides = new Map((m.layerOverrides ?? []).map((o) => [o.layer, o]));
  const counts = new Map<string, number>();
  layersOf(m).forEach((l, i) => {
    const o = overrides.get(i)?.attention;
    const label = l.kind === 'full' && o === 'none' ? 'no-attn' : l.kind === 'full' && o === 'linear' ? 'linear' : labelOf(m, l);
    counts.set(label, (counts.get(label) ?? 0) + 1);
  });
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([label, n]) => `${n} ${label}`)
    .join(' + ');
}

/**
 * The letters of a bundled entry's `layerPattern`, one per layer: F full attention, G gated delta net, M Mamba-2,
 * K Kimi delta attention, D DeepSeek sparse attention, X MiniMax sparse attention, N no mixer, and DeepSeek-V4's
 * compressed layers W (the window only), C (CSA: one entry per 4 tokens) and H (HCA: one per 128).
 */
const LAYER_LETTERS: Readonly<Record<string, LayerOf>> = {
  F: { kind: 'full' }, G: { kind: 'gdn' }, M: { kind: 'mamba2' }, K: { kind: 'kda' }, D: { kind: 'dsa' },
  X: { kind: 'minimax_sparse' }, N: { kind: 'none' }, W: { kind: 'compressed', ratio: 0 }, C: { kind: 'compressed', ratio: 4 },
  H: { kind: 'compressed', ratio: 128 },
};

/** The layers a `layerPattern` spells, the pattern repeated over `numLayers`; compressed layers get `window`. */
export function layersFromPattern(pattern: string, numLayers: number, window?: number): LayerOf[] {
  return Array.from({ length: numLayers }, (_, i) => {
    const l = { ...LAYER_LETTERS[pattern[i % pattern.length]!]! };
    if (l.kind === 'compressed') return { kind: l.kind, window: window ?? 0, ratio: l.ratio };
    return l;
  });
}

/**
 * Nemotron-H blocks (hybrid_override_pattern): M a Mamba-2 mixer, * attention, E an MoE FFN, - a dense MLP. A block is
 * a mixer or an FFN, never both, so mixer layers skip the FFN and FFN layers the attention. Undefined for a block
 * letter outside these four.
 */
export function nemotronBlockLayers(blocks: readonly string[]): { layers: LayerOf[]; overrides: LayerOverride[] } | { unknown: string } {
  const overrides: LayerOverride[] = [];
  const layers: LayerOf[] = [];
  for (const [layer, b] of blocks.entries()) {
    if (b === 'M' || b === '*') {
      overrides.push({ layer, ffn: 'none' });
      layers.push({ kind: b === 'M' ? 'mamba2' : 'full' });
    } else if (b === 'E' || b === '-') {
      overrides.push({ layer, attention: 'none' });
      layers.push({ kind: 'none' });
    } else return { unknown: b };
  }
  return { layers, overrides };
}
