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
   * (the engine prices routing itself, see randomRouting).
   */
  distribution?: string;
  /**
   * The worker runs TRT-LLM's trtllm-gen MoE backend (moe_config.backend TRTLLM): its low-latency kernels at
   * every size where they were measured, not only up to MOE_MIN_LATENCY_TOKENS.
   */
  trtllmGen?: boolean;
  /**
   * The worker runs SGLang's FlashInfer TRT-LLM-gen MoE runner, which SGLang's server selects per model architecture
   * on Blackwell: priced from that runner's own rows where the tables measured it beside SGLang's Triton kernel.
   */
  flashinferTrtllm?: boolean;
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
  linearAttention(q: LinearAttentionQuery): number;
  sparseAttention(q: SparseAttentionQuery): number;
  /** One site's pre + post hyper-connection kernels (a layer has two sites). */
  hyperConnection(q: HyperConnectionQuery): number;
  quantize(q: QuantizeQuery): number;
}

// Ops of the hybrid and sparse-attention model families (see families.ts for how each is priced).

export type LinearAttentionKind = 'gdn' | 'mamba2' | 'kda';
export type FamilyPhase = 'context' | 'generation';

/**
 * One linear-attention mixer (GDN, Mamba-2 SSD, KDA) of one layer on one GPU: the short causal convolution plus
 * the chunked scan (context) or the recurrent state update (generation). The in/out projections are GEMMs and
 * are priced apart.
 */
export interface LinearAttentionQuery {
  kind: LinearAttentionKind;
  phase: FamilyPhase;
  /** Sequences in the step. */
  batch: number;
  /** New tokens per sequence (1 in generation). */
  seq: number;
  /** Value heads per GPU (GDN/KDA linear_num_value_heads / tp; Mamba-2 mamba_num_heads / tp). */
  heads: number;
  /** Key heads per GPU (GDN linear_num_key_heads / tp; KDA = heads; Mamba-2 n_groups / tp, the B/C groups). */
  keyHeads: number;
  /** Key head dimension (GDN/KDA linear_key_head_dim; Mamba-2 mamba_head_dim). */
  headDim: number;
  /** Value head dimension (GDN/KDA linear_value_head_dim; Mamba-2 mamba_head_dim). */
  valueDim: number;
  /** Mamba-2 ssm_state_size (d_state); 0 for GDN/KDA, whose state is headDim x valueDim per head. */
  stateDim: number;
  /** Causal convolution width (linear_conv_kernel_dim / conv_kernel; 4). */
  convKernel: number;
  dtype: Dtype;
}

export type SparseAttentionKind = 'dsa' | 'dsv4_csa' | 'dsv4_hca' | 'minimax_msa';

/**
 * One sparse-attention module of one layer on one GPU as the engines run it: the MLA-style projections, the
 * indexer (its own q projection, logits over the cached keys and the top-k), and attention over the selected
 * tokens. DeepSeek-V3.2 and GLM-5 are 'dsa'; DeepSeek-V4's compressed layers 'dsv4_csa' (ratio 4, indexed) and
 * 'dsv4_hca' (ratio 128, dense over the compressed keys); MiniMax's block-sparse attention 'minimax_msa'.
 */
export interface SparseAttentionQuery {
  kind: SparseAttentionKind;
  phase: FamilyPhase;
  batch: number;
  /** context: new tokens per sequence (prompt or chunk); generation: kv length (cached tokens, the new one included). */
  seq: number;
  /** context: tokens already cached before this chunk; 0 for a fresh prompt; unused in generation. */
  prefix?: number;
  /** Attention heads per GPU (num_attention_heads / tp). */
  heads: number;
  /** KV heads per GPU (MiniMax GQA: num_key_value_heads / tp, at least 1); MLA-style kinds: 1. */
  kvHeads: number;
  hidden: number;
  /** Query low-rank dimension (q_lora_rank); 0 when the query is projected directly. */
  qLoraRank: number;
  /** MLA latent (kv_lora_rank); DeepSeek-V4: head_dim (the single latent KV head); MiniMax: 0. */
  kvLoraRank: number;
  qkNopeHeadDim: number;
  qkRopeHeadDim: number;
  vHeadDim: number;
  /** Indexer heads and dimension (index_n_heads, index_head_dim); 0 where the layer has no indexer (dsv4_hca, skipped indexer). */
  indexHeads: number;
  indexHeadDim: number;
  /** Tokens each query attends to after selection (index_topk; MiniMax: selected blocks x block size). */
  topk: number;
  /** DeepSeek-V4 KV compression ratio (4 CSA, 128 HCA); 1 otherwise. */
  compressRatio: number;
  /** Sliding window each query also attends to (DeepSeek-V4 sliding_window); 0 when none. */
  window: number;
  /** Weights of the projections. */
  dtype: Dtype;
  kvDtype: Dtype;
}

/**
 * DeepSeek-V4 manifold-constrained hyper-connections at one site (attention or FFN) of one layer: the `pre`
 * mixing (Sinkhorn-normalized weights, reduce of the streams) plus the `post` mapping back onto the streams.
 */
export interface HyperConnectionQuery {
  /** Tokens on this GPU. */
  tokens: number;
  hidden: number;
  /** hc_mult: residual streams. */
  multiplier: number;
  /** hc_sinkhorn_iters. */
  sinkhornIters: number;
}

/** Activation quantization before an 8-bit GEMM: `dynamic` computes per-token scales first, `static` applies one. */
export interface QuantizeQuery {
  mode: 'dynamic' | 'static';
  m: number; // tokens
  k: number; // features
  dtype: Dtype; // quantized dtype (fp8)
}
