// The one question every prediction rests on: how long does this op take on this system with this engine?
// All latencies are milliseconds for one launch on one GPU (shapes are per GPU, after parallel splitting).
import type { Backend, Dtype } from '../inputs/types.js';

export interface GemmQuery {
  dtype: Dtype;
  m: number; // tokens
  n: number; // output features (per GPU)
  k: number; // input features (per GPU)
}

export interface ContextAttentionQuery {
  batch: number;
  seq: number; // new tokens per sequence (prefill length)
  /** Tokens already cached before this chunk (prefix reuse / chunked prefill); 0 for a fresh prompt. */
  prefix?: number;
  heads: number; // query heads per GPU
  kvHeads: number; // kv heads per GPU
  headDim: number;
  dtype: Dtype;
  kvDtype: Dtype;
  window: number; // 0 = full attention
}

export interface GenerationAttentionQuery {
  batch: number;
  kvLen: number; // tokens already cached per sequence
  heads: number;
  kvHeads: number;
  headDim: number;
  kvDtype: Dtype;
  window: number;
}

export type Collective = 'all_reduce' | 'all_gather' | 'reduce_scatter' | 'alltoall';

export interface CommQuery {
  dtype: Dtype;
  gpus: number;
  /** Number of elements in the message (per GPU buffer). */
  elements: number;
  /** Whether the group spans nodes (uses the inter-node fabric). */
  crossNode?: boolean;
}

export interface MoeQuery {
  dtype: Dtype;
  tokens: number; // tokens entering the MoE layer on this GPU (before routing)
  hidden: number;
  inter: number; // expert intermediate size (full, before moe_tp split)
  topk: number;
  experts: number; // total routed experts
  moeTp: number;
  moeEp: number;
  /**
   * Expert routing (MOE_DISTRIBUTIONS). Unset: balanced where the tables have it, else the routing they hold
   * (the engine prices routing itself, see balancedEquivalentTokens).
   */
  distribution?: string;
  /**
   * The worker runs TRT-LLM's trtllm-gen MoE backend (moe_config.backend TRTLLM): its low-latency kernels at
   * every size where they were measured, not only up to MOE_MIN_LATENCY_TOKENS.
   */
  trtllmGen?: boolean;
}

export type MlaPhase = 'context' | 'generation';
export interface MlaQuery {
  phase: MlaPhase;
  batch: number;
  /** context: prompt length; generation: kv length. */
  seq: number;
  /** Attention heads per GPU (128 / tp for DeepSeek). */
  heads: number;
  kvLoraRank: number;
  qkRopeHeadDim: number;
  qkNopeHeadDim: number;
  vHeadDim: number;
  qLoraRank: number;
  hidden: number;
  dtype: Dtype;
  kvDtype: Dtype;
}

export interface ElementwiseQuery {
  /** Bytes read plus written. */
  bytes: number;
}

export interface PerfSourceInfo {
  system: string;
  backend: Backend | 'torch';
  version: string;
  /** "synthesized" (our op model), "measured" (a user's or our collector's tables), "aiconfigurator" (parquet). */
  kind: 'synthesized' | 'measured' | 'aiconfigurator';
  /** Human text shown in reports, e.g. "calibrated on vllm 0.14.0". */
  calibratedOn: string;
  dir?: string;
  /** Ops this source has no table for, answered by its fallback (our synthesized tables or the roofline). */
  fallbackOps?: string[];
}

export interface PerfSource {
  readonly info: PerfSourceInfo;
  gemm(q: GemmQuery): number;
  contextAttention(q: ContextAttentionQuery): number;
  generationAttention(q: GenerationAttentionQuery): number;
  /** Tensor-parallel all-reduce as the engine runs it (custom all-reduce inside a node, NCCL across). */
  allReduce(q: CommQuery): number;
  nccl(collective: Collective, q: CommQuery): number;
  moe(q: MoeQuery): number;
  mla(q: MlaQuery): number;
  elementwise(q: ElementwiseQuery): number;
  /** Point-to-point transfer of `bytes` between two GPUs (pipeline hops, KV transfer). */
  p2p(bytes: number, crossNode: boolean): number;
}
