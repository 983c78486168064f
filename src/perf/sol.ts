// Speed of light per op: the time the op would take at peak tensor throughput or peak bandwidth, whichever
// binds. Every table entry and every lookup is floored at these values. Milliseconds, one GPU.
import { DTYPE_BYTES, type SystemSpec } from '../inputs/types.js';
import type { Collective } from './types.js';
import type { Row } from './tables.js';
import { busiestRankLoad } from './routing.js';

/** Peak figures of a system in per-millisecond units, precomputed once per source. */
export interface Peaks {
  /** FLOP per ms by compute dtype. */
  flops: { bf16: number; fp8: number; fp4: number; int8: number };
  /** HBM bytes per ms. */
  mem: number;
  /** Scale-up and scale-out link bytes per ms (one direction, per GPU). */
  intra: number;
  inter: number;
  gpusPerNode: number;
}

export function peaksOf(sys: SystemSpec): Peaks {
  const t = sys.gpu.tflops;
  const bf16t = t.bfloat16 ?? 1;
  const bf16 = bf16t * 1e9; // TFLOPS -> FLOP per ms
  const fp8 = (t.fp8 ?? bf16t) * 1e9;
  return {
    flops: { bf16, fp8, fp4: (t.nvfp4 ?? t.fp8 ?? bf16t) * 1e9, int8: (t.int8 ?? bf16t) * 1e9 },
    mem: sys.gpu.memBwGBs * 1e6,
    intra: sys.intraNodeBwGBs * 1e6,
    inter: sys.interNodeBwGBs * 1e6,
    gpusPerNode: sys.gpusPerNode,
  };
}

/**
 * How a dtype name of the tables runs on the GPU: bytes per weight element (scales included), the tensor
 * throughput its math runs at, and bytes per activation element. Weight-only formats (`int4_wo`, `int8_wo`,
 * `mxfp4`, `w4a16_mxfp4`) dequantize into bf16 math on 16-bit activations; the others quantize activations too
 * (SmoothQuant `sq` is W8A8 on the int8 tensor cores; `w4afp8` / `w4a8_mxfp4_mxfp8` run 4-bit weights against
 * fp8 activations). Names not listed count as 16-bit.
 */
export interface DtypeFormat {
  weightBytes: number;
  compute: keyof Peaks['flops'];
  actBytes: number;
}

const BF16_FORMAT: DtypeFormat = { weightBytes: 2, compute: 'bf16', actBytes: 2 };
const weightOnly = (weightBytes: number): DtypeFormat => ({ weightBytes, compute: 'bf16', actBytes: 2 });
const quantized = (weightBytes: number, compute: DtypeFormat['compute'], actBytes: number): DtypeFormat => ({ weightBytes, compute, actBytes });

const FORMATS: Record<string, DtypeFormat> = {
  bfloat16: BF16_FORMAT, float16: BF16_FORMAT, half: BF16_FORMAT,
  fp8: quantized(1, 'fp8', 1), fp8_block: quantized(1, 'fp8', 1), fp8_static: quantized(1, 'fp8', 1),
  nvfp4: quantized(DTYPE_BYTES.nvfp4, 'fp4', DTYPE_BYTES.nvfp4),
  int8: quantized(1, 'int8', 1), sq: quantized(1, 'int8', 1),
  w4afp8: quantized(DTYPE_BYTES.mxfp4, 'fp8', 1), w4a8_mxfp4_mxfp8: quantized(DTYPE_BYTES.mxfp4, 'fp8', 1),
  int8_wo: weightOnly(DTYPE_BYTES.int8_wo), int4_wo: weightOnly(DTYPE_BYTES.int4_wo),
  mxfp4: weightOnly(DTYPE_BYTES.mxfp4), w4a16_mxfp4: weightOnly(DTYPE_BYTES.mxfp4),
};

export function dtypeFormat(dtype: string): DtypeFormat {
  return FORMATS[dtype] ?? BF16_FORMAT;
}

/** Bytes per element of a dtype name as the tables spell it (unknown names count as 16-bit). */
export function dtypeBytes(dtype: string): number {
  return dtypeFormat(dtype).weightBytes;
}

/** Tensor throughput the math of a GEMM-like op in `dtype` runs at. */
export function computeFlops(p: Peaks, dtype: string): number {
  return p.flops[dtypeFormat(dtype).compute];
}

export function gemmSol(p: Peaks, dtype: string, m: number, n: number, k: number): number {
  const f = dtypeFormat(dtype);
  const math = (2 * m * n * k) / p.flops[f.compute];
  const mem = (f.weightBytes * n * k + f.actBytes * m * k + 2 * m * n) / p.mem;
  return Math.max(math, mem);
}

/** Prefill attention (causal) over `seq` new tokens after `prefix` cached ones; `window` 0 = full. */
export function contextAttentionSol(
  p: Peaks, batch: number, seq: number, prefix: number, heads: number, kvHeads: number, headDim: number,
  dtype: string, kvDtype: string, window: number,
): number {
  // Keys each new token attends to: its position (causal), at most the window. Tokens before the window fills
  // ramp up; the rest see the whole window.
  const ramp = window > 0 ? Math.max(0, Math.min(seq, window - prefix)) : seq;
  const keys = ramp * prefix + (ramp * ramp) / 2 + (seq - ramp) * window;
  const ops = 2 * batch * heads * headDim * 2 * keys;
  // KV read: every cached and new token, or those within a window of the new ones.
  const kvTokens = seq + (window > 0 ? Math.min(prefix, window) : prefix);
  const bytes = 2 * batch * (2 * heads * seq * headDim) + dtypeBytes(kvDtype) * batch * 2 * kvHeads * kvTokens * headDim;
  const f = dtype === 'fp8' ? p.flops.fp8 : p.flops.bf16;
  return Math.max(ops / f, bytes / p.mem);
}

/** Decode attention: one new token per sequence attending to `kvLen` cached tokens (or the window). */
export function generationAttentionSol(
  p: Peaks, batch: number, kvLen: number, heads: number, kvHeads: number, headDim: number, kvDtype: string, window: number,
  queries = 1,
): number {
  const kv = window > 0 ? Math.min(kvLen, window) : kvLen;
  // `queries` tokens per sequence (a speculative verify pass) attend over one read of the sequence's KV.
  const ops = 2 * batch * queries * heads * headDim * 2 * kv;
  const bytes = batch * (4 * queries * heads * headDim + 2 * kvHeads * kv * headDim * dtypeBytes(kvDtype));
  const f = kvDtype === 'fp8' ? p.flops.fp8 : p.flops.bf16;
  return Math.max(ops / f, bytes / p.mem);
}

/** Link bandwidth (bytes/ms) a group of `gpus` communicates over. */
export function linkBw(p: Peaks, gpus: number, crossNode?: boolean): number {
  return crossNode || gpus > p.gpusPerNode ? p.inter : p.intra;
}

/** Bytes each GPU moves over its links in a ring collective, per byte of the message (NCCL's bus bandwidth). */
export function ringBytesPerByte(collective: string, gpus: number): number {
  return (collective === 'all_reduce' ? 2 : 1) * ((gpus - 1) / gpus);
}

/**
 * Fixed cost a collective pays for crossing the inter-node network, ms: one more round of RDMA writes and
 * completions through the NICs and switches (NCCL's small-message latency across two InfiniBand nodes is about
 * 20 us above its NVLink-only latency).
 */
export const NETWORK_LATENCY_MS = 0.02;

/** A message large enough that a collective runs at its bulk bandwidth (the largest size our tables list). */
export const BULK_ELEMENTS = 2 ** 29;

/**
 * A collective's latency moved from one link to another: its fixed costs (launch, protocol, synchronization)
 * stay, the wire time changes by the difference of the two speeds of light at the collective's bulk bandwidth
 * efficiency `bulkEff`, and `network` is added (the round trip through the inter-node network when moving
 * onto it, subtracted when moving off it).
 */
export function moveCollective(lat: number, bulkEff: number, solFrom: number, solTo: number, network: number): number {
  const eff = Math.min(1, Math.max(1e-3, bulkEff));
  return Math.max(solTo, lat + (solTo - solFrom) / eff + network);
}

/** Ring-style collective: every GPU sends (g-1)/g of the buffer once (twice for all-reduce). */
export function collectiveSol(p: Peaks, collective: Collective, dtype: string, gpus: number, elements: number, crossNode?: boolean): number {
  if (gpus <= 1) return 0;
  const bytes = elements * dtypeBytes(dtype);
  const passes = collective === 'all_reduce' ? 2 : 1;
  return (passes * bytes * (gpus - 1)) / gpus / linkBw(p, gpus, crossNode);
}

/**
 * Routed-expert compute of one MoE layer on the busiest GPU (gated FFN: gate+up and down), for the expert
 * routing the tables hold (see busiestRankLoad): tensor time and memory time, ms.
 */
export function moeRoofline(
  p: Peaks, dtype: string, tokens: number, hidden: number, inter: number, topk: number, experts: number, moeTp: number, moeEp: number,
  distribution?: string,
): { computeMs: number; memoryMs: number } {
  const { copies: t, active } = busiestRankLoad(tokens, experts, topk, moeEp, distribution);
  const bytes = dtypeBytes(dtype) * (t * hidden * 2 + (t * inter * 3) / moeTp) + (dtypeBytes(dtype) * hidden * inter * 3 * active) / moeTp;
  return { computeMs: (2 * t * hidden * inter * 3) / moeTp / computeFlops(p, dtype), memoryMs: bytes / p.mem };
}

/** Speed of light of the routed experts (moeRoofline's slower side), ms. */
export function moeSol(...a: Parameters<typeof moeRoofline>): number {
  const { computeMs, memoryMs } = moeRoofline(...a);
  return Math.max(computeMs, memoryMs);
}

export function memSol(p: Peaks, bytes: number): number {
  return bytes / p.mem;
}

/** Speed of light of a whole DeepSeek-style MLA attention module (projections + attention), per GPU. */
export function mlaSol(
  p: Peaks, phase: 'context' | 'generation', batch: number, seq: number, heads: number, kvLoraRank: number,
  qkRopeHeadDim: number, qkNopeHeadDim: number, vHeadDim: number, qLoraRank: number, hidden: number,
  dtype: string, kvDtype: string, queries = 1,
): number {
  const tokens = phase === 'context' ? batch * seq : batch * queries;
  const qk = qkNopeHeadDim + qkRopeHeadDim;
  let t = 0;
  if (qLoraRank > 0) t += gemmSol(p, dtype, tokens, qLoraRank, hidden) + gemmSol(p, dtype, tokens, heads * qk, qLoraRank);
  else t += gemmSol(p, dtype, tokens, heads * qk, hidden);
  t += gemmSol(p, dtype, tokens, kvLoraRank + qkRopeHeadDim, hidden);
  t += gemmSol(p, dtype, tokens, heads * (qkNopeHeadDim + vHeadDim), kvLoraRank);
  t += gemmSol(p, dtype, tokens, hidden, heads * vHeadDim);
  const kvBytes = dtypeBytes(kvDtype);
  if (phase === 'context') {
    const ops = batch * heads * (qk + vHeadDim) * seq * seq;
    const bytes = batch * heads * (kvBytes * seq * (qk + vHeadDim) + 2 * seq * (qk + vHeadDim));
    t += Math.max(ops / p.flops.bf16, bytes / p.mem);
  } else {
    const latent = kvLoraRank + qkRopeHeadDim;
    const ops = 2 * batch * queries * heads * (latent + kvLoraRank) * seq;
    const bytes = batch * (2 * queries * heads * (latent + kvLoraRank) + seq * latent * kvBytes);
    t += Math.max(ops / p.flops.bf16, bytes / p.mem);
  }
  return t;
}

/**
 * A collective over more GPUs than one NVLink domain holds: the fitted model prices it as if NVLink joined them
 * (its fixed costs and efficiency), then its wire time moves onto the inter-node link and the network's round
 * trip is added (scaling the whole latency by the link ratio would turn a 10 us launch-bound message into 100 us).
 */
export function acrossNodes(peaks: Peaks, collectiveOf: (r: Row) => string, f: (r: Row, s: number) => number): (r: Row, s: number) => number {
  const nvlink: Peaks = { ...peaks, gpusPerNode: Number.POSITIVE_INFINITY };
  return (r, s) => {
    const gpus = r.gpus as number;
    if (gpus <= peaks.gpusPerNode) return f(r, s);
    const c = collectiveOf(r) as Collective;
    const dtype = r.dtype as string;
    const inNode = collectiveSol(nvlink, c, dtype, gpus, r.elements as number);
    const bulkSol = collectiveSol(nvlink, c, dtype, gpus, BULK_ELEMENTS);
    const bulkEff = bulkSol / f({ ...r, elements: BULK_ELEMENTS }, bulkSol);
    return moveCollective(f(r, inNode), bulkEff, inNode, s, NETWORK_LATENCY_MS);
  };
}
