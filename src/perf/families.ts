// Ops of the hybrid and sparse-attention families: linear attention (GDN, Mamba-2, KDA), sparse attention
// (DeepSeek-V3.2 / GLM-5 DSA, DeepSeek-V4 CSA / HCA, MiniMax MSA), hyper-connections and activation quantization.
// Each op is split into the parts the reference tables time separately (a GDN layer is its causal convolution
// plus its scan), and each part is priced like the other ops: speed of light x exp(fitted correction), the
// correction a sum of bilinear surfaces over pairs of log2 shape features (model.ts), fitted per engine release by
// `npm run perf:fit` into data/calibration/families/<system>.json. Without a fitted model a part takes the
// roofline's constant efficiency.
import { existsSync, readFileSync } from 'node:fs';
import { dataPath } from '../util/paths.js';
import { versionDistance } from '../util/versions.js';
import { decodeSurface, encodeSurface } from './calibration.js';
import { evalCorrection, type FeatureDef, type GroupModel, type OpModel } from './model.js';
import { dtypeBytes, gemmSol, type Peaks } from './sol.js';
import { DTYPE_FALLBACK, type Row } from './tables.js';
import type { HyperConnectionQuery, LinearAttentionQuery, QuantizeQuery, SparseAttentionQuery } from './types.js';

/**
 * A separately timed part of a family op, named "<kind>.<phase>.<part>": linear attention's `conv` and `core`
 * (scan or state update), a sparse-attention `module`, hyper-connections' `pre` and `post`, quantization's `scale`
 * (per-token scales of dynamic quantization) and `apply`.
 */
export type FamilyPart = string;

export const LINEAR_PARTS = ['conv', 'core'] as const;

/** Chunk length of the chunked scans (fla's GDN/KDA kernels use 64; Mamba-2 SSD 128 or 256, similar cost per token). */
const SCAN_CHUNK = 64;
/** Recurrent states are kept in fp32 (mamba_ssm_dtype / mamba_ssm_cache_dtype float32). */
const STATE_BYTES = 4;
const ACT_BYTES = 2;

const l2 = (v: number): number => Math.log2(Math.max(v, 1));
const num = (r: Row, c: string): number => r[c] as number;

/**
 * Dimensions of the models the sparse-attention module tables were measured on (the tables name the model, not
 * its shapes), from each model's config.json on Hugging Face. Keyed by model name without organisation and
 * quantization suffix; `heads0` / `kvHeads0` are the model's heads before any split. Also the defaults of
 * `configure perf query`.
 */
export const SPARSE_MODEL_DIMS: Record<string, Record<string, number>> = {
  // deepseek-ai/DeepSeek-V3.2
  'deepseek-v3.2': { hidden: 7168, qLoraRank: 1536, kvLoraRank: 512, qkNopeHeadDim: 128, qkRopeHeadDim: 64, vHeadDim: 128, indexHeads: 64, indexHeadDim: 128, topk: 2048, compressRatio: 1, window: 0, heads0: 128, kvHeads0: 1 },
  // zai-org/GLM-5 (GLM-5.1 and GLM-5.2 share the attention shapes)
  'glm-5': { hidden: 6144, qLoraRank: 2048, kvLoraRank: 512, qkNopeHeadDim: 192, qkRopeHeadDim: 64, vHeadDim: 256, indexHeads: 32, indexHeadDim: 128, topk: 2048, compressRatio: 1, window: 0, heads0: 64, kvHeads0: 1 },
  // deepseek-ai/DeepSeek-V4-Flash: one 512-wide latent KV head, sliding window 128
  'deepseek-v4-flash': { hidden: 4096, qLoraRank: 1024, kvLoraRank: 512, qkNopeHeadDim: 448, qkRopeHeadDim: 64, vHeadDim: 512, indexHeads: 64, indexHeadDim: 128, topk: 512, compressRatio: 1, window: 128, heads0: 64, kvHeads0: 1 },
  // deepseek-ai/DeepSeek-V4-Pro
  'deepseek-v4-pro': { hidden: 7168, qLoraRank: 1536, kvLoraRank: 512, qkNopeHeadDim: 448, qkRopeHeadDim: 64, vHeadDim: 512, indexHeads: 64, indexHeadDim: 128, topk: 1024, compressRatio: 1, window: 128, heads0: 128, kvHeads0: 1 },
  // MiniMaxAI/MiniMax-M3: GQA 64 / 4, head_dim 128 (rotary 64); sparse_topk_blocks 16 x sparse_block_size 128
  'minimax-m3': { hidden: 6144, qLoraRank: 0, kvLoraRank: 0, qkNopeHeadDim: 64, qkRopeHeadDim: 64, vHeadDim: 128, indexHeads: 4, indexHeadDim: 128, topk: 2048, compressRatio: 1, window: 0, heads0: 64, kvHeads0: 4 },
};

// ---- Speed of light of each part, ms on one GPU -------------------------------------------------------------

/** Channels through the causal convolution: q, k and v (GDN, KDA) or x, B and C (Mamba-2). */
function convChannels(q: LinearAttentionQuery): number {
  return q.kind === 'mamba2' ? q.heads * q.valueDim + 2 * q.keyHeads * q.stateDim : 2 * q.keyHeads * q.headDim + q.heads * q.valueDim;
}

/** Key-side width of the scan: d_state for Mamba-2 (B, C), the key head dim otherwise. */
const scanKeyDim = (q: LinearAttentionQuery): number => (q.kind === 'mamba2' ? q.stateDim : q.headDim);

export function linearAttentionSol(p: Peaks, q: LinearAttentionQuery, part: (typeof LINEAR_PARTS)[number]): number {
  const C = convChannels(q);
  const tokens = q.batch * (q.phase === 'context' ? q.seq : 1);
  if (part === 'conv') {
    // Context reads and writes every channel of every token; decode also reads and writes the rolling conv state.
    const bytes = q.phase === 'context'
      ? 2 * tokens * C * ACT_BYTES
      : q.batch * C * ACT_BYTES * (2 + 2 * Math.max(q.convKernel - 1, 1));
    return bytes / p.mem;
  }
  const dk = scanKeyDim(q);
  const state = dk * q.valueDim; // per head
  const io = tokens * ACT_BYTES * (2 * q.keyHeads * dk + 2 * q.heads * q.valueDim);
  if (q.phase === 'context') {
    // Chunked scan: inter-chunk state products plus intra-chunk attention of each token with its chunk.
    const flops = tokens * q.heads * (4 * state + 4 * Math.min(SCAN_CHUNK, q.seq) * (dk + q.valueDim));
    const bytes = io + q.batch * q.heads * state * STATE_BYTES;
    return Math.max(flops / p.flops.bf16, bytes / p.mem);
  }
  // Decode: the recurrent state is read and written once per sequence.
  const bytes = io + 2 * q.batch * q.heads * state * STATE_BYTES;
  return Math.max((4 * q.batch * q.heads * state) / p.flops.bf16, bytes / p.mem);
}

/** Cached keys a query of the module can see after compression, on average over the chunk (causal). */
function visibleKeys(q: SparseAttentionQuery): number {
  const ratio = Math.max(q.compressRatio, 1);
  const seen = q.phase === 'context' ? (q.prefix ?? 0) + (q.seq + 1) / 2 : q.seq;
  return Math.max(seen / ratio, 1);
}

export function sparseAttentionSol(p: Peaks, q: SparseAttentionQuery): number {
  const tokens = q.phase === 'context' ? q.batch * q.seq : q.batch;
  const qk = q.qkNopeHeadDim + q.qkRopeHeadDim;
  const latent = q.kvLoraRank > 0;
  const w = q.dtype;
  let t = 0;
  // Projections: query (through its low rank when there is one), keys and values, MLA up-projection, output.
  t += q.qLoraRank > 0 ? gemmSol(p, w, tokens, q.qLoraRank, q.hidden) + gemmSol(p, w, tokens, q.heads * qk, q.qLoraRank) : gemmSol(p, w, tokens, q.heads * qk, q.hidden);
  t += latent ? gemmSol(p, w, tokens, q.kvLoraRank + q.qkRopeHeadDim, q.hidden) : gemmSol(p, w, tokens, 2 * q.kvHeads * qk, q.hidden);
  if (latent && q.kind === 'dsa') t += gemmSol(p, w, tokens, q.heads * (q.qkNopeHeadDim + q.vHeadDim), q.kvLoraRank);
  t += gemmSol(p, w, tokens, q.hidden, q.heads * q.vHeadDim);
  const visible = visibleKeys(q);
  const kvTokens = q.phase === 'context' ? (q.prefix ?? 0) + q.seq : q.seq;
  const stored = q.batch * Math.max(kvTokens / Math.max(q.compressRatio, 1), 1);
  // Indexer: its projections, fp8 logits of every query against every visible key, and the top-k over them.
  if (q.indexHeads > 0) {
    t += gemmSol(p, w, tokens, q.indexHeads * q.indexHeadDim, q.qLoraRank || q.hidden) + gemmSol(p, w, tokens, q.indexHeadDim + q.indexHeads, q.hidden);
    const flops = 2 * tokens * q.indexHeads * q.indexHeadDim * visible;
    const bytes = stored * q.indexHeadDim + 2 * 4 * tokens * visible;
    t += Math.max(flops / p.flops.fp8, bytes / p.mem);
  }
  // Attention over the selected keys (all visible ones where nothing selects) plus the sliding window.
  // A layer that skips its indexer reuses the previous layer's selection: still top-k keys.
  const keys = (q.topk > 0 ? Math.min(q.topk, visible) : visible) + Math.min(q.window, kvTokens);
  const perKeyFlops = latent ? 2 * (q.kvLoraRank + q.qkRopeHeadDim) + 2 * q.kvLoraRank : 2 * qk + 2 * q.vHeadDim;
  const perKeyBytes = dtypeBytes(q.kvDtype) * (latent ? q.kvLoraRank + q.qkRopeHeadDim : q.kvHeads * (qk + q.vHeadDim));
  const flops = tokens * q.heads * keys * perKeyFlops;
  const read = q.phase === 'context' ? stored * perKeyBytes : q.batch * keys * perKeyBytes;
  t += Math.max(flops / p.flops.bf16, (read + 2 * ACT_BYTES * tokens * q.heads * (qk + q.vHeadDim)) / p.mem);
  return t;
}

export function hyperConnectionSol(p: Peaks, q: HyperConnectionQuery, part: 'pre' | 'post'): number {
  const streams = q.tokens * q.multiplier * q.hidden * ACT_BYTES;
  const one = q.tokens * q.hidden * ACT_BYTES;
  if (part === 'pre') {
    // Mixing weights from the flattened streams (a skinny fp32 GEMM), then a weighted reduce of the streams.
    const flops = 2 * q.tokens * q.multiplier * q.hidden * (q.multiplier * q.multiplier + 2 * q.multiplier);
    return Math.max(flops / (p.flops.bf16 / 2), (streams + one) / p.mem);
  }
  return (2 * streams + one) / p.mem;
}

export function quantizeSol(p: Peaks, q: Pick<QuantizeQuery, 'm' | 'k' | 'dtype'>, part: 'scale' | 'apply'): number {
  const elems = q.m * q.k;
  return (part === 'scale' ? elems * ACT_BYTES : elems * (ACT_BYTES + dtypeBytes(q.dtype))) / p.mem;
}

// ---- Shape features of each part (log2, one lattice node per octave unless halved) ---------------------------

/** Value heads per key head: how the convolution's channels split between keys and values. */
const gqa = (r: Row): number => l2(num(r, 'heads') / Math.max(num(r, 'keyHeads'), 1));
// Total work (tokens x heads, every second octave), sequence length, heads (the batch follows from the three)
// and the heads' grouping.
const linearContext: FeatureDef = {
  names: ['log2_tokens_heads/2', 'log2_seq', 'log2_heads', 'log2_gqa'], lo: [0, 0, 0, 0], hi: [15, 16, 9, 5],
  group: (r) => String(r.dtype),
  features: (r) => [l2(num(r, 'batch') * num(r, 'seq') * num(r, 'heads')) / 2, l2(num(r, 'seq')), l2(num(r, 'heads')), gqa(r)],
};
const linearGeneration: FeatureDef = {
  names: ['log2_batch', 'log2_heads', 'log2_gqa', 'log2_state/2'], lo: [0, 0, 0, 5], hi: [11, 9, 5, 8],
  group: (r) => String(r.dtype),
  features: (r) => [l2(num(r, 'batch')), l2(num(r, 'heads')), gqa(r), l2((r.kind === 'mamba2' ? num(r, 'stateDim') : num(r, 'headDim')) * num(r, 'valueDim')) / 2],
};
/**
 * Sparse modules group by weight and KV dtype, indexer, and the model's hidden size: the modules of different
 * models run differently built kernels (DeepSeek-V4-Flash's grouped output projection, GLM-5's wider heads) that
 * one speed-of-light formula does not rank alike.
 */
const sparseGroup = (r: Row): string => `${r.dtype}|${r.kvDtype}|${num(r, 'indexHeads') > 0 ? 'indexed' : 'dense'}|h${r.hidden}`;
/**
 * Prefill whose every query sees no more keys than top-k selects runs dense attention in SGLang (its DSA module
 * switches to FA3 MHA up to index_topk keys): short prompts are a group of their own.
 */
const sparseContextGroup = (r: Row): string => {
  const keys = (num(r, 'seq') + num(r, 'prefix')) / Math.max(num(r, 'compressRatio'), 1);
  return `${sparseGroup(r)}|${num(r, 'topk') > 0 && keys <= num(r, 'topk') ? 'short' : 'long'}`;
};
// Total work (tokens x heads), sequence length, cached prefix, heads, and the keys read in all (sequences x
// cached and new tokens; every second octave): how busy the indexer's scan keeps HBM.
const sparseContext: FeatureDef = {
  names: ['log2_tokens_heads/2', 'log2_seq', 'log2_prefix', 'log2_heads', 'log2_batch_kv/2'], lo: [0, 0, 0, 0, 0], hi: [15, 17, 21, 8, 14],
  group: sparseContextGroup,
  features: (r) => [
    l2(num(r, 'batch') * num(r, 'seq') * num(r, 'heads')) / 2, l2(num(r, 'seq')), l2(num(r, 'prefix') + 1), l2(num(r, 'heads')),
    l2(num(r, 'batch') * (num(r, 'seq') + num(r, 'prefix'))) / 2,
  ],
};
const sparseGeneration: FeatureDef = {
  names: ['log2_batch', 'log2_kv_len', 'log2_heads'], lo: [0, 0, 0], hi: [11, 21, 8],
  group: sparseGroup,
  features: (r) => [l2(num(r, 'batch')), l2(num(r, 'seq')), l2(num(r, 'heads'))],
};
const hyperConnection: FeatureDef = {
  names: ['log2_tokens', 'log2_hidden'], lo: [0, 10], hi: [17, 14],
  group: () => 'bfloat16',
  features: (r) => [l2(num(r, 'tokens')), l2(num(r, 'hidden'))],
};
const quantize: FeatureDef = {
  names: ['log2_m', 'log2_k', 'log2_mk/2'], lo: [0, 6, 3], hi: [16, 17, 16],
  group: (r) => String(r.dtype),
  features: (r) => [l2(num(r, 'm')), l2(num(r, 'k')), l2(num(r, 'm') * num(r, 'k')) / 2],
};

/** Feature definition of a part (by its kind and phase). */
export function partFeatures(part: FamilyPart): FeatureDef {
  const [kind, phase] = part.split('.');
  if (kind === 'gdn' || kind === 'mamba2' || kind === 'kda') return phase === 'context' ? linearContext : linearGeneration;
  if (kind === 'mhc') return hyperConnection;
  if (kind === 'quantize') return quantize;
  return phase === 'context' ? sparseContext : sparseGeneration;
}

/** Speed of light of a part for a row in query shape (the fields of its query type). */
export function partSol(p: Peaks, part: FamilyPart, r: Row): number {
  const [kind, phase, piece] = part.split('.');
  if (kind === 'gdn' || kind === 'mamba2' || kind === 'kda') return linearAttentionSol(p, r as unknown as LinearAttentionQuery, piece as 'conv' | 'core');
  if (kind === 'mhc') return hyperConnectionSol(p, r as unknown as HyperConnectionQuery, phase as 'pre' | 'post');
  if (kind === 'quantize') return quantizeSol(p, r as unknown as QuantizeQuery, phase as 'scale' | 'apply');
  return sparseAttentionSol(p, r as unknown as SparseAttentionQuery);
}

// ---- Fitted models ------------------------------------------------------------------------------------------

/** data/calibration/families/<system>.json: per measured source ("<backend>/<version>"), per part, a model. */
export interface FamilyCalibration {
  system: string;
  generator: string;
  sources: Record<string, Record<FamilyPart, OpModel>>;
}

export function serializeFamilyCalibration(cal: FamilyCalibration): string {
  const conv = (m: OpModel): OpModel => ({
    ...m, groups: Object.fromEntries(Object.entries(m.groups).map(([g, gm]) => [g, { ...gm, surfaces: gm.surfaces.map((s) => encodeSurface(s)) as unknown as number[][] }])),
  });
  return JSON.stringify({ ...cal, sources: Object.fromEntries(Object.entries(cal.sources).map(([k, parts]) => [k, Object.fromEntries(Object.entries(parts).map(([p, m]) => [p, conv(m)]))])) }) + '\n';
}

export function parseFamilyCalibration(text: string): FamilyCalibration {
  const raw = JSON.parse(text) as FamilyCalibration;
  for (const parts of Object.values(raw.sources))
    for (const m of Object.values(parts))
      for (const g of Object.values(m.groups)) g.surfaces = g.surfaces.map((s) => (typeof s === 'string' ? decodeSurface(s) : s));
  return raw;
}

export function familyCalibrationPath(system: string): string {
  return dataPath('calibration', 'families', `${system}.json`);
}

const calCache = new Map<string, FamilyCalibration | null>();
export function loadFamilyCalibration(system: string): FamilyCalibration | undefined {
  if (!calCache.has(system)) {
    const p = familyCalibrationPath(system);
    calCache.set(system, existsSync(p) ? parseFamilyCalibration(readFileSync(p, 'utf8')) : null);
  }
  return calCache.get(system) ?? undefined;
}

/**
 * The source whose model prices a part for (backend, version): the release's own, else the nearest measured
 * release of the same engine, else the nearest release of another engine (the kernels of these families are
 * largely shared across engines: fla's Triton scans, FlashMLA, DeepGEMM).
 */
export function familySource(cal: FamilyCalibration, backend: string, version: string, part: FamilyPart): string | undefined {
  const keys = Object.keys(cal.sources).filter((k) => cal.sources[k]![part]).sort();
  const own = `${backend}/${version}`;
  if (keys.includes(own)) return own;
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of keys) {
    const [b, v] = [k.slice(0, k.indexOf('/')), k.slice(k.indexOf('/') + 1)];
    const d = (b === backend ? 0 : 1e12) + versionDistance(v, version);
    if (d < bestD) { bestD = d; best = k; }
  }
  return best;
}

/**
 * A part's group for a row: its own, else the closest fitted one: most key fields equal (a dtype counting half
 * when it is a substitute of DTYPE_FALLBACK), then the nearest hidden size, then most rows. Returns the group's
 * key with its model.
 */
export function familyGroupOf(m: OpModel, group: string): { key: string; g: GroupModel } | undefined {
  if (m.groups[group]) return { key: group, g: m.groups[group] };
  const want = group.split('|');
  const hiddenOf = (parts: string[]): number => Number(parts.find((p) => /^h\d+$/.test(p))?.slice(1) ?? 0);
  let best: string | undefined;
  let bestScore = -Infinity;
  for (const k of Object.keys(m.groups).sort()) {
    const have = k.split('|');
    let score = 0;
    for (let i = 0; i < want.length; i++) {
      if (/^h\d+$/.test(want[i]!)) continue;
      if (have[i] === want[i]) score += 1;
      else if ((DTYPE_FALLBACK[want[i]!] ?? []).includes(have[i]!)) score += 0.5;
    }
    const hw = hiddenOf(want), hh = hiddenOf(have);
    score -= hw && hh ? Math.abs(Math.log2(hw / hh)) / 100 : 0;
    score += m.groups[k]!.rows / 1e9;
    if (score > bestScore) { bestScore = score; best = k; }
  }
  return best ? { key: best, g: m.groups[best]! } : undefined;
}

/** Constant efficiency and launch overhead (ms) of a part without a fitted model. */
export const FAMILY_ROOFLINE: Record<string, { eff: number; fixed: number }> = {
  conv: { eff: 0.5, fixed: 0.004 },
  core: { eff: 0.35, fixed: 0.01 },
  module: { eff: 0.4, fixed: 0.05 },
  mhc: { eff: 0.4, fixed: 0.008 },
  quantize: { eff: 0.7, fixed: 0.004 },
};

function rooflineKey(part: FamilyPart): string {
  const [kind, , piece] = part.split('.');
  if (kind === 'mhc' || kind === 'quantize') return kind;
  return piece === 'conv' || piece === 'core' ? piece : 'module';
}

/**
 * Prices family ops for one system and engine release. With no calibration (or none for a part) a part takes
 * the roofline's constant efficiency; Mamba-2's scan, which no engine table times alone, takes the fitted
 * efficiency of the same source's GDN scan (both are chunked Triton scans) on its own speed of light.
 */
export class FamilyPricer {
  private readonly models = new Map<FamilyPart, { m: OpModel; source: string } | null>();
  private loaded?: { cal?: FamilyCalibration };
  /** `cal` may be a loader: the calibration file is then read on the first family op priced (most runs price none). */
  constructor(readonly peaks: Peaks, readonly backend: string, readonly version: string, private readonly calOrLoader?: FamilyCalibration | (() => FamilyCalibration | undefined)) {}

  get cal(): FamilyCalibration | undefined {
    this.loaded ??= { cal: typeof this.calOrLoader === 'function' ? this.calOrLoader() : this.calOrLoader };
    return this.loaded.cal;
  }

  /** The fitted model of a part and the source it comes from; undefined when none. */
  modelOf(part: FamilyPart): { m: OpModel; source: string } | undefined {
    let hit = this.models.get(part);
    if (hit === undefined) {
      const source = this.cal && familySource(this.cal, this.backend, this.version, part);
      hit = source ? { m: this.cal!.sources[source]![part]!, source } : null;
      if (!hit && part.startsWith('mamba2.') && part.endsWith('.core')) hit = this.modelOf(part.replace('mamba2.', 'gdn.')) ?? null;
      this.models.set(part, hit);
    }
    return hit ?? undefined;
  }

  /** Latency of one part for a row in its query shape, ms. */
  part(part: FamilyPart, r: Row): number {
    const s = partSol(this.peaks, part, r);
    const fitted = this.modelOf(part);
    const def = partFeatures(part);
    // A model fitted on other features (an older calibration file) is not used.
    const usable = fitted && fitted.m.features.length === def.names.length && fitted.m.features.every((f, i) => f === def.names[i]);
    const hit = usable ? familyGroupOf(fitted.m, def.group(r)) : undefined;
    if (!hit) {
      const rl = FAMILY_ROOFLINE[rooflineKey(part)]!;
      return s / rl.eff + rl.fixed;
    }
    // Outside a group's lattice the correction of the nearest lattice edge holds (evalCorrection clamps).
    const timed = (q: Row, sol: number): number => sol * Math.exp(evalCorrection(fitted!.m, hit.g, def.features(q)));
    const dtype = hit.key.split('|')[0]!;
    const floor = hit.g.floor ?? 0;
    if (r.dtype === undefined || dtype === String(r.dtype)) return Math.max(s, floor, timed(r, s));
    // A format no table timed, priced from a substitute format's group: what that group spends beyond its speed of
    // light at the least work (one sequence, one token: launches and fixed costs) does not change with the format;
    // the rest scales with the speed of light of the format asked for. (Scaling all of it halved a launch-bound
    // module's time: GLM-5's DSA decode module at per-tensor FP8, priced from bf16's group, at 0.057 ms per layer
    // at 4 sequences where block FP8 measures 0.116.)
    const asSub = { ...r, dtype };
    const least = { ...asSub, batch: 1, seq: 1, prefix: 0 };
    const leastSol = partSol(this.peaks, part, least);
    const fixed = Math.max(0, timed(least, leastSol) - leastSol);
    const subSol = partSol(this.peaks, part, asSub);
    return Math.max(s, floor, fixed + Math.max(0, timed(asSub, subSol) - fixed) * (s / subSol));
  }

  linearAttention(q: LinearAttentionQuery): number {
    const r = { ...q, seq: q.phase === 'generation' ? 1 : q.seq } as unknown as Row;
    return LINEAR_PARTS.reduce((a, piece) => a + this.part(`${q.kind}.${q.phase}.${piece}`, r), 0);
  }

  sparseAttention(q: SparseAttentionQuery): number {
    return this.part(`${q.kind}.${q.phase}.module`, { ...q, prefix: q.prefix ?? 0 } as unknown as Row);
  }

  hyperConnection(q: HyperConnectionQuery): number {
    const r = q as unknown as Row;
    return this.part('mhc.pre', r) + this.part('mhc.post', r);
  }

  quantize(q: QuantizeQuery): number {
    const r = q as unknown as Row;
    return this.part('quantize.apply', r) + (q.mode === 'dynamic' ? this.part('quantize.scale', r) : 0);
  }
}
