// The op model: latency = speed of light x exp(correction), where the correction is a sum of bilinear
// surfaces over pairs of log2 shape features (a second-order additive model on an octave lattice).
// Coefficients come from `npm run perf:fit` (data/calibration/<system>.json).
import type { OpName, Row } from './tables.js';

export type ModelOp = Exclude<OpName, 'elementwise'>;

export interface FeatureDef {
  /** Feature names, for the calibration file. */
  names: string[];
  /** Lowest and highest lattice node per feature (log2 units, one node per octave). */
  lo: number[];
  hi: number[];
  group(r: Row): string;
  features(r: Row): number[];
}

/**
 * TRT-LLM runs gated FP4 experts with its low-latency kernel up to this many tokens and the CUTLASS one above
 * (a step at the switch); where it was measured, the low-latency rows are a group of their own
 * ("<dtype>|low_latency") that prices MoE up to this size on the routings it was measured on (GroupModel.routes).
 */
export const MOE_MIN_LATENCY_TOKENS = 128;
export const LOW_LATENCY = 'low_latency';
/** MoE lookup rows of workers on TRT-LLM's trtllm-gen backend (MoeQuery.trtllmGen): the low-latency group at every size. */
export const TRTLLM_GEN = 'trtllm_gen';

/**
 * MoE rows of SGLang's FlashInfer TRT-LLM-gen runner in a table that timed the same format with SGLang's Triton
 * kernel too (tagMoeKernels), and lookups of workers SGLang serves with that runner (MoeQuery.flashinferTrtllm): a
 * group of their own ("<dtype>|flashinfer_trtllm"). SGLang picks the runner per model architecture, not per shape.
 */
export const FLASHINFER_TRTLLM = 'flashinfer_trtllm';

/** Whether a reference MoE row timed TRT-LLM's low-latency kernel. */
export function isLowLatencyKernel(r: Row): boolean {
  return String(r.kernel ?? '').includes('min_latency');
}

/** Whether a row's routing (experts, top-k) lies within a kernel's `routes` (GroupModel.routes). */
export function withinRoutes(routes: number[], r: Row): boolean {
  const e = r.experts as number;
  const k = r.topk as number;
  return e >= routes[0]! && e <= routes[1]! && k >= routes[2]! && k <= routes[3]!;
}

const l2 = (v: number): number => Math.log2(Math.max(v, 1));
const num = (r: Row, c: string): number => r[c] as number;

export const FEATURES: Record<ModelOp, FeatureDef> = {
  // Nodes every second octave (features are log2 / 2). The total work m*n*k captures how busy the GPU is,
  // which no sum of pairwise terms in m, n, k can express.
  gemm: {
    names: ['log2_m/2', 'log2_n/2', 'log2_k/2', 'log2_mnk/2'], lo: [0, 2, 2, 5], hi: [8, 9, 8, 24],
    group: (r) => String(r.dtype),
    features: (r) => [l2(num(r, 'm')) / 2, l2(num(r, 'n')) / 2, l2(num(r, 'k')) / 2, l2(num(r, 'm') * num(r, 'n') * num(r, 'k')) / 2],
  },
  // Total work (batch x seq x heads, every second octave), sequence length, heads and GQA ratio.
  context_attention: {
    names: ['log2_batch_seq_heads/2', 'log2_seq', 'log2_heads/2', 'log2_gqa/2'], lo: [0, 0, 0, 0], hi: [14, 17, 4, 3],
    group: (r) => `${r.head_dim}|${r.dtype}|${r.kv_dtype}|${num(r, 'window') > 0 ? 'window' : 'full'}`,
    features: (r) => [l2(num(r, 'batch') * num(r, 'seq') * num(r, 'heads')) / 2, l2(num(r, 'seq')), l2(num(r, 'heads')) / 2, l2(num(r, 'heads') / num(r, 'kv_heads')) / 2],
  },
  // Decode attention: thread blocks (sequences x KV heads, before split-KV), KV length (work per block), query
  // heads sharing each KV read, batch (launch and page-table work per sequence) and the KV bytes read in total
  // (every second octave; how busy HBM is, which no sum of pairwise terms in the others can express).
  generation_attention: {
    names: ['log2_batch_kv_heads', 'log2_kv_len', 'log2_gqa', 'log2_batch', 'log2_kv_read/2'], lo: [0, 0, 0, 0, 0], hi: [18, 17, 6, 11, 17],
    group: (r) => `${r.head_dim}|${r.kv_dtype}|${num(r, 'window') > 0 ? 'window' : 'full'}`,
    features: (r) => {
      const b = num(r, 'batch'), kvh = num(r, 'kv_heads'), kv = num(r, 'kv_len'), w = num(r, 'window');
      return [l2(b * kvh), l2(kv), l2(num(r, 'heads') / kvh), l2(b), l2(b * kvh * (w > 0 ? Math.min(kv, w) : kv)) / 2];
    },
  },
  allreduce: {
    names: ['log2_elements', 'log2_gpus'], lo: [7, 1], hi: [29, 3],
    group: (r) => `${r.kind}|${r.dtype}`,
    features: (r) => [l2(num(r, 'elements')), l2(num(r, 'gpus'))],
  },
  nccl: {
    names: ['log2_elements', 'log2_gpus'], lo: [7, 1], hi: [29, 6],
    group: (r) => `${r.collective}|${r.dtype}`,
    features: (r) => [l2(num(r, 'elements')), l2(num(r, 'gpus'))],
  },
  moe: {
    // Tokens routed to each expert (tokens x topk / experts) sets how full the expert GEMMs are; the expert math
    // per GPU (tokens x topk x hidden x expert FFN / (TP x EP), every second octave) how busy the GPU is. The
    // expert-parallel ranks count apart from the work they leave each GPU (H100 TRT-LLM runs Kimi-K2's 384 experts
    // 2.5x slower at EP 32 / 64 than at EP 16); the tokens follow from tokens per expert, experts per GPU and ranks.
    names: ['log2_ep', 'log2_hidden', 'log2_inter_per_tp', 'log2_experts_per_ep', 'log2_tokens_per_expert', 'log2_work_per_gpu/2'],
    lo: [0, 11, 5, 0, -6, 0], hi: [8, 13, 14, 9, 12, 24],
    // Rows of TRT-LLM's low-latency FP4 kernel form their own group (see MOE_MIN_LATENCY_TOKENS), as do those of
    // SGLang's FlashInfer TRT-LLM-gen runner beside its Triton kernel (FLASHINFER_TRTLLM).
    group: (r) => (isLowLatencyKernel(r) ? `${r.dtype}|${LOW_LATENCY}` : r.kernel === FLASHINFER_TRTLLM ? `${r.dtype}|${FLASHINFER_TRTLLM}` : String(r.dtype)),
    features: (r) => [
      l2(num(r, 'moe_ep')), l2(num(r, 'hidden')), l2(num(r, 'inter') / num(r, 'moe_tp')), l2(num(r, 'experts') / num(r, 'moe_ep')),
      Math.log2((num(r, 'tokens') * num(r, 'topk')) / num(r, 'experts')),
      l2((num(r, 'tokens') * num(r, 'topk') * num(r, 'hidden') * num(r, 'inter')) / (num(r, 'moe_tp') * num(r, 'moe_ep'))) / 2,
    ],
  },
  mla: {
    names: ['log2_batch', 'log2_seq', 'log2_heads'], lo: [0, 0, 0], hi: [10, 17, 7],
    group: (r) => `${r.phase}|${r.dtype}|${r.kv_dtype}`,
    features: (r) => [l2(num(r, 'batch')), l2(num(r, 'seq')), l2(num(r, 'heads'))],
  },
};

/**
 * Token counts that block-scaled GEMM kernels take without padding: their per-token activation scales are read
 * by TMA in 16-byte rows (four fp32 scales), so an m off that multiple costs the engine a padded copy.
 */
export const GEMM_M_ALIGN = 4;

/** Expert routings the reference MoE tables measure: every token copy on an expert of its own, or power-law skew. */
export const MOE_DISTRIBUTIONS = ['balanced', 'power_law_1.01', 'power_law_1.2'] as const;

/**
 * How routing skew changes an expert layer's latency, relative to its group's model (fitted on one routing): the
 * expert FFN slice and the experts per GPU, tokens per expert (every second octave) and the expert-parallel
 * ranks. Skew activates fewer distinct experts (less weight traffic) but piles tokens onto the hot ones and onto
 * the rank holding them, so the ratio falls below 1 for small batches on one GPU and rises well above it for
 * large ones; across ranks it does so from the first token (one token at EP 8-32: 1.8-2.1x balanced on H200
 * SGLang, where balanced routing spreads the copies over the ranks; 1.0x at EP 1).
 */
export const MOE_ROUTING: FeatureDef = {
  names: ['log2_inter_per_tp', 'log2_experts_per_ep', 'log2_tokens_per_expert/2', 'log2_ep'],
  lo: [5, 0, -3, 0], hi: [14, 9, 6, 8],
  group: (r) => FEATURES.moe.group(r),
  features: (r) => {
    const f = FEATURES.moe.features(r);
    return [f[2]!, f[3]!, f[4]! / 2, f[0]!];
  },
};

/** Calibration of one op group: bilinear surfaces on all feature pairs (or one curve for one feature). */
export interface GroupModel {
  /** Rows it was fitted on. */
  rows: number;
  /** Surface values in units of `scale` (ln latency), row-major over (feature i, feature j), one per pair. */
  surfaces: number[][];
  /**
   * The group's own lattice bounds (within the model's): the nodes its rows reach. Beyond them the smoothness
   * penalty would only repeat the edge values, so they are not stored; lookups hold the edge.
   */
  lo?: number[];
  hi?: number[];
  /**
   * Measured range of the op's table axes (OP_SPECS axisCols: min, max per axis). Outside it the model keeps the
   * efficiency of the nearest measured shape (roofline transfer) instead of extrapolating its surfaces.
   */
  box?: number[];
  /**
   * GEMM: latency factor when m is not a multiple of GEMM_M_ALIGN, where the group's kernel pays for it (its
   * surfaces then price aligned m; see unalignedMFactor).
   */
  unalignedM?: number;
  /**
   * Sliding-window attention: the window widths its rows measured. Lookups at another width do not trust the
   * group (its surfaces know the measured widths only) and price full attention scaled to the window instead.
   */
  windows?: number[];
  /**
   * Family ops (families.ts): the least latency its rows measured, ms. The reference times these ops with every
   * head of the model on one GPU; a tensor-parallel worker runs fewer heads per GPU, below the measured shapes,
   * where the surfaces would scale launches and fixed costs down with the work. No shape is priced under it.
   */
  floor?: number;
  /** MoE low-latency kernel: the routings it was measured on (see routesOf); lookups outside them take the other kernel. */
  routes?: number[];
  /**
   * A kernel measured on another GPU of the same architecture only ("<system> <backend>/<version>"; see
   * resolvedModel's `kinGpu`): it prices only the workers that ask for it by name (MoeQuery.trtllmGen), at its
   * efficiency there and no slower than this GPU's own kernel (modelLatency).
   */
  kin?: string;
  /** MoE: the routing of the group's own rows when the reference measured no balanced routing. */
  distribution?: string;
  /** MoE: per other routing, ln(its measured latency / this group's model), on the MOE_ROUTING lattice. */
  routing?: Record<string, GroupModel>;
}

export interface OpModel {
  features: string[];
  lo: number[];
  hi: number[];
  scale: number;
  groups: Record<string, GroupModel>;
}

/** Feature pairs of a model with d features (d = 1: the single feature with itself). */
const pairsMemo = new Map<number, [number, number][]>();
export function pairsOf(d: number): [number, number][] {
  const hit = pairsMemo.get(d);
  if (hit) return hit;
  const v = pairsOfUncached(d);
  pairsMemo.set(d, v);
  return v;
}

function pairsOfUncached(d: number): [number, number][] {
  if (d === 1) return [[0, 0]];
  const out: [number, number][] = [];
  for (let i = 0; i < d; i++) for (let j = i + 1; j < d; j++) out.push([i, j]);
  return out;
}

/** Lattice position of a feature value: node index and weight of the upper node (clamped at the ends). */
export function latticePos(x: number, lo: number, hi: number): [number, number] {
  if (x <= lo) return [0, 0];
  if (x >= hi) return [Math.max(0, hi - lo - 1), hi > lo ? 1 : 0];
  const i = Math.floor(x - lo);
  return [i, x - lo - i];
}

/** ln(latency / SOL) the model predicts for a row of its group. */
export function evalCorrection(m: OpModel, g: GroupModel, x: number[]): number {
  const lo = g.lo ?? m.lo, hi = g.hi ?? m.hi;
  const d = lo.length;
  const pairs = pairsOf(d);
  let v = 0;
  for (let p = 0; p < pairs.length; p++) {
    const [i, j] = pairs[p]!;
    const surf = g.surfaces[p]!;
    const ni = hi[i]! - lo[i]! + 1;
    const nj = hi[j]! - lo[j]! + 1;
    const [ai, wi] = latticePos(x[i]!, lo[i]!, hi[i]!);
    if (d === 1) {
      v += (1 - wi) * surf[ai]! + wi * (surf[Math.min(ai + 1, ni - 1)] ?? 0);
      continue;
    }
    const [aj, wj] = latticePos(x[j]!, lo[j]!, hi[j]!);
    const ai1 = Math.min(ai + 1, ni - 1), aj1 = Math.min(aj + 1, nj - 1);
    v += (1 - wi) * (1 - wj) * surf[ai * nj + aj]! + wi * (1 - wj) * surf[ai1 * nj + aj]! + (1 - wi) * wj * surf[ai * nj + aj1]! + wi * wj * surf[ai1 * nj + aj1]!;
  }
  return v * m.scale;
}
