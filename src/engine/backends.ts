// Engine defaults that matter for timing and memory, per backend and (where they changed) per version.
// Figures are the engines' documented defaults; the per-step overheads are host-side costs (scheduling,
// sampling, detokenization hand-off) fitted on the measured end-to-end rows, one value per backend.
import type { Backend, Dtype, SystemSpec } from '../inputs/types.js';
import { engineRelease } from '../inputs/dynamo-runtime.js';
import { onLineAtLeast, onLineBefore } from '../util/versions.js';
import type { EngineContext, ParallelLayout } from './types.js';

export interface BackendProfile {
  backend: Backend;
  version: string;
  /** Default token budget per engine step (max-num-batched-tokens / chunked-prefill-size / max_num_tokens). */
  maxNumTokens: number;
  /** Default cap on running sequences (max-num-seqs / max_running_requests / max_batch_size). */
  maxBatchSize: number;
  /** KV-cache block (page) size in tokens. */
  kvBlockTokens: number;
  /**
   * How the KV budget is derived: 'of_total' = capacity * fraction - everything else (vLLM, SGLang static
   * fraction); 'of_free' = (capacity - everything else) * fraction (TRT-LLM free_gpu_memory_fraction).
   */
  memoryMode: 'of_total' | 'of_free';
  memoryFraction: number;
  /** SGLang sizes its static fraction from the GPU: about this much is left outside it on large GPUs, GiB. */
  outsideFractionGiB?: number;
  /** Runtime reserve outside weights/KV/activations: CUDA context, NCCL buffers, graph pools, GiB. */
  reserveGiB: number;
  /** Largest decode batch replayed from a captured CUDA graph; larger batches run eagerly. */
  cudaGraphMaxBatch: number;
  /** Captured batch sizes are padded up to the next of these (sorted ascending). */
  cudaGraphSizes: number[];
  /** Host time per engine step (scheduler, input preparation, sampling), ms; partly hidden when overlapped. */
  stepOverheadMs: number;
  /** Additional host time per step per running sequence, ms (detokenization, output processing). */
  perSeqOverheadMs: number;
  /** Extra launch cost per layer when a step runs without CUDA graphs (eager prefill / mixed steps), ms. */
  eagerLayerMs: number;
  /** Fixed per-request cost outside the engine loop (HTTP, tokenization, routing), ms, added to TTFT. */
  requestOverheadMs: number;
  /**
   * TTFT per stream a scheduler serves (each attention-dp rank schedules its own), ms, beyond the scheduling
   * model, in agg servers and disagg decode workers: SGLang 0.5.6+ 1.5, TRT-LLM and vLLM 0.5 (fitted;
   * docs/engine.md).
   */
  ttftMsPerStream?: number;
  /**
   * Whether prefill chunks ride on decode steps (vLLM, TRT-LLM in-flight batching). When false (SGLang's
   * default, mixed chunks off) waiting prompts are prefilled in steps of their own before decoding resumes.
   */
  mixesPrefill: boolean;
  /** Prefill-first scheduling that keeps closed-loop clients in lockstep: every round is one burst of prompts. */
  lockstep?: boolean;
  /** Whether KV blocks are allocated as sequences grow (vLLM, SGLang) rather than reserved for isl+osl up front. */
  kvOnDemand: boolean;
  /**
   * How the engine's flags split the experts over the tp x dp GPUs of a pipeline stage. 'all_or_nothing': one
   * switch makes every GPU of the group expert parallel or leaves the experts tensor parallel over all of them
   * (vLLM: --enable-expert-parallel gives EP = tp x dp with expert TP 1, without it expert TP = tp x dp, as its
   * data-parallel deployment guide states). 'any': an expert-parallel width that divides tp x dp, the rest
   * sharding each expert (SGLang --ep-size with moe TP = tp-size / ep-size; TRT-LLM moe_expert_parallel_size x
   * moe_tensor_parallel_size = tensor_parallel_size).
   */
  expertSplit: 'all_or_nothing' | 'any';
  /**
   * Whether each attention-DP rank can itself shard attention by tp. vLLM (--tensor-parallel-size per
   * --data-parallel-size rank) and SGLang (--tp-size tp x dp with --dp-size dp: attention TP = tp-size / dp-size)
   * can; TRT-LLM's enable_attention_dp makes every one of tensor_parallel_size ranks an attention rank of its
   * own (Dynamo's TRT-LLM guide: attention_dp_size = tensor_parallel_size), so attention DP runs tp 1.
   */
  tpWithAttentionDp: boolean;
  /** Whether pipeline parallelism combines with attention DP (TRT-LLM's attention DP runs one stage). */
  ppWithAttentionDp: boolean;
  /**
   * Whether attention DP is offered with experts tensor parallel (moe_tp > 1). vLLM would run it (no
   * --enable-expert-parallel: expert TP = tp x dp), but none of its measured runs has that layout to check the
   * price against; not offered until one does.
   */
  moeDpWithMoeTp: boolean;
  /** Whether disaggregated prefill and decode must use the same TP size. */
  disaggSameTp: boolean;
  /**
   * Steps between a token's forward pass and its return to the client: an overlap scheduler prepares step
   * i+1 on the host while step i runs and hands step i's tokens out one step later.
   */
  outputLagSteps?: number;
  /**
   * Quantized formats whose layers run the measured kernel as it is: activations quantized by a kernel of
   * their own before a GEMM of fixed dispatch (vLLM and SGLang NVFP4: scaled_fp4_quant, then the CUTLASS /
   * FlashInfer fp4 GEMM), with no tuned tactic or fused quantization to undercut the isolated measurement.
   */
  kernelAsMeasured: Dtype[];
  /** Whether MXFP4 experts run through the engine's fp4 MoE kernels on GPUs with fp4 tensor cores (TRT-LLM). */
  mxfp4ViaFp4Moe: boolean;
  /** Whether the release takes TRT-LLM's trtllm-gen MoE backend (moe_config.backend TRTLLM, from 1.0; see trtllmGenMoe). */
  trtllmGenMoe?: boolean;
  /** Model architectures whose experts SGLang's server runs on FlashInfer's TRT-LLM-gen runner on Blackwell (see sglangTrtllmMoe). */
  flashinferTrtllmMoeArchs?: readonly string[];
  /**
   * Whether sliding-window layers hold only their window of KV in GPU memory, leaving room for more sequences
   * (vLLM's hybrid allocator, SGLang's SWA pool). TRT-LLM's KV budget holds full-length sequences: its
   * per-window pools do not lend the unused window memory to the full-attention layers.
   */
  kvWindowSavesMemory: boolean;
  /**
   * Whether a sliding window the checkpoint sets on every layer (Mistral v0.1's sliding_window) is applied by
   * default. TRT-LLM applies the windows its model code sets per layer (gpt-oss, Llama 4's chunks) and others
   * only with max_attention_window: its Mistral-7B max-load runs measure full attention.
   */
  uniformWindow: boolean;
  /**
   * Whether shared experts run on a second CUDA stream beside the routed experts: in every step of decode size
   * (vLLM's shared-experts stream), only in steps replayed from a CUDA graph (TRT-LLM's maybe_execute_in_parallel:
   * a stream switch costs host time when eager), or never (SGLang fuses the shared expert of DeepSeek-style
   * models into the routed kernel, num_fused_shared_experts, which turns its dual stream off).
   */
  sharedExpertsAside: 'always' | 'graph' | 'never';
  /**
   * MoE formats whose kernel tables include the routing step (top-k selection over the router logits). The
   * vLLM and SGLang tables time the expert kernels from precomputed top-k ids (vLLM's MXFP4 layer routes
   * inside), so the engine adds the selection kernel itself; TRT-LLM's MoE module routes inside ('all').
   */
  moeRoutingInTable: Dtype[] | 'all';
  /**
   * Whether the rotary embedding, KV-cache write, post-attention norm and Q/K norms run as kernels of their own
   * beside the attention kernel the tables time (vLLM: decode measured 5-17 us per layer slower than priced on
   * Llama, 15-26 us on Qwen3 with its two Q/K norms). TRT-LLM fuses them into its attention and all-reduce
   * kernels; SGLang's runs show no such gap.
   */
  attentionKernelsApart: boolean;
  /**
   * Whether the tensor-parallel all-reduce runs through NCCL rather than the engine's custom one-/two-shot
   * kernels (whose measured tables price it otherwise). TRT-LLM's AUTO strategy before its 1.1 releases chose
   * NCCL on Hopper (its 1.0.0rc3 H100 runs measure TP8 decode 15-25% slower than the custom kernel prices);
   * its 1.0 tables on A100 and L40S measure the custom kernel that those runs match.
   */
  allReduceViaNccl?: boolean;
  /**
   * Attention-DP balancing in aggregated servers: steps a held prompt waits at most for every rank to have one
   * (TRT-LLM 1.1+'s attention_dp_config.timeout_iters, as its recipes set it and our engine config writes it).
   */
  adpBalanceTimeoutIters?: number;
}

function range(start: number, end: number, step: number): number[] {
  const out: number[] = [];
  for (let v = start; v <= end; v += step) out.push(v);
  return out;
}

const VLLM_GRAPH = [1, 2, 4, ...range(8, 512, 8)];
const SGLANG_GRAPH = [1, 2, 4, 8, 12, 16, 24, ...range(32, 256, 8), ...range(272, 512, 16)];
const TRTLLM_GRAPH = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048];

const BASE: Record<Backend, Omit<BackendProfile, 'version'>> = {
  vllm: {
    backend: 'vllm',
    maxNumTokens: 8192,
    maxBatchSize: 1024,
    kvBlockTokens: 16,
    memoryMode: 'of_total',
    memoryFraction: 0.9,
    reserveGiB: 1.5,
    cudaGraphMaxBatch: 512,
    cudaGraphSizes: VLLM_GRAPH,
    stepOverheadMs: 0,
    perSeqOverheadMs: 0,
    eagerLayerMs: 0.0,
    requestOverheadMs: 30,
    ttftMsPerStream: 0.5,
    mixesPrefill: true,
    kvOnDemand: true,
    expertSplit: 'all_or_nothing',
    tpWithAttentionDp: true,
    ppWithAttentionDp: true,
    moeDpWithMoeTp: false,
    disaggSameTp: false,
    kernelAsMeasured: ['nvfp4'],
    mxfp4ViaFp4Moe: false,
    kvWindowSavesMemory: true,
    uniformWindow: true,
    sharedExpertsAside: 'always',
    moeRoutingInTable: ['mxfp4'],
    attentionKernelsApart: true,
  },
  sglang: {
    backend: 'sglang',
    maxNumTokens: 8192,
    maxBatchSize: 1024,
    kvBlockTokens: 1,
    memoryMode: 'of_total',
    memoryFraction: 0.88,
    outsideFractionGiB: 10,
    reserveGiB: 1.0,
    cudaGraphMaxBatch: 512,
    cudaGraphSizes: SGLANG_GRAPH,
    stepOverheadMs: 0,
    // The Python scheduler and detokenizer handle every running request each step (fitted on high-concurrency runs).
    perSeqOverheadMs: 0.015,
    eagerLayerMs: 0.0,
    requestOverheadMs: 150,
    // Overlap scheduler: a step's tokens reach the client one step later.
    outputLagSteps: 1,
    mixesPrefill: false,
    kvOnDemand: true,
    expertSplit: 'any',
    tpWithAttentionDp: true,
    ppWithAttentionDp: true,
    moeDpWithMoeTp: true,
    disaggSameTp: true,
    kernelAsMeasured: ['nvfp4'],
    mxfp4ViaFp4Moe: false,
    kvWindowSavesMemory: true,
    uniformWindow: true,
    sharedExpertsAside: 'never',
    moeRoutingInTable: [],
    attentionKernelsApart: false,
  },
  trtllm: {
    backend: 'trtllm',
    maxNumTokens: 8192,
    maxBatchSize: 2048,
    kvBlockTokens: 32,
    memoryMode: 'of_free',
    memoryFraction: 0.9,
    reserveGiB: 3.0,
    cudaGraphMaxBatch: 2048,
    cudaGraphSizes: TRTLLM_GRAPH,
    stepOverheadMs: 0,
    perSeqOverheadMs: 0,
    eagerLayerMs: 0.0,
    requestOverheadMs: 70,
    ttftMsPerStream: 0.5,
    // PyTorch-backend overlap scheduler: a step's tokens reach the client one step later.
    outputLagSteps: 1,
    mixesPrefill: true,
    kvOnDemand: false,
    expertSplit: 'any',
    tpWithAttentionDp: false,
    ppWithAttentionDp: false,
    moeDpWithMoeTp: true,
    disaggSameTp: false,
    // The autotuner picks each quantized GEMM / MoE tactic per shape, and norms emit quantized activations.
    kernelAsMeasured: [],
    mxfp4ViaFp4Moe: true,
    kvWindowSavesMemory: false,
    uniformWindow: false,
    sharedExpertsAside: 'graph',
    moeRoutingInTable: 'all',
    attentionKernelsApart: false,
  },
};

const cache = new Map<string, BackendProfile>();

/**
 * SGLang's default chunked-prefill size: from 0.5.6 it follows the GPU's memory (server_args: 4k below 60 GiB,
 * 8k below 160 GiB such as H100 and H200, 16k on B200 / GB200); earlier releases used 8k.
 */
function sglangChunkedPrefill(version: string, gpuMemGiB: number): number {
  if (onLineBefore(version, '0.5.6')) return 8192;
  return gpuMemGiB < 60 ? 4096 : gpuMemGiB < 160 ? 8192 : 16384;
}

/** What the engines' defaults look at: the GPU's memory, for vLLM whether it is an A100, for TRT-LLM 1.0 whether it is a Hopper GPU. */
export type GpuFacts = Pick<SystemSpec['gpu'], 'memGiB' | 'name'>;

/**
 * vLLM's API-server defaults by GPU (EngineArgs): 8192 batched tokens and 1024 sequences on GPUs of 70 GiB or
 * more other than the A100 (H100, H200, B200), 2048 and 256 elsewhere (A100, L40S).
 */
function vllmLargeGpu(gpu: GpuFacts): boolean {
  return gpu.memGiB >= 70 && !/a100/i.test(gpu.name);
}

/** Defaults of one engine version on a GPU (later versions inherit and override where the engine changed). */
export function backendProfile(backend: Backend, version: string, gpu: GpuFacts): BackendProfile {
  const release = engineRelease(backend, version);
  const atLeast = (line: string) => onLineAtLeast(release, line);
  const chunk = backend === 'sglang' ? sglangChunkedPrefill(version, gpu.memGiB) : 0;
  const large = backend === 'vllm' && vllmLargeGpu(gpu);
  const hopper = /H100|H200/i.test(gpu.name);
  const key = `${backend}@${version}@${chunk}@${large}@${hopper}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const p: BackendProfile = { ...BASE[backend], version };
  if (backend === 'vllm') {
    if (!large) Object.assign(p, { maxNumTokens: 2048, maxBatchSize: 256 });
    // 0.22 raised the default gpu-memory-utilization handling; async scheduling (0.11+) hides most host time.
    if (atLeast('0.22')) p.memoryFraction = 0.92;
  }
  if (backend === 'trtllm' && atLeast('1.0') && !atLeast('1.1') && hopper) p.allReduceViaNccl = true;
  if (backend === 'trtllm' && atLeast('1.0')) p.trtllmGenMoe = true;
  if (backend === 'sglang' && atLeast('0.5.10')) p.flashinferTrtllmMoeArchs = SGLANG_TRTLLM_MOE_ARCHS;
  const balance = adpBalanceTimeoutIters(backend, version);
  if (balance !== undefined) p.adpBalanceTimeoutIters = balance;
  // trtllm-serve's request path by release, from its low-load runs: 1.2+ answers in about the prefill plus 15-35 ms
  // (gpt-oss and Llama-3.1-70B on B200 and H200), the 1.0 line in 80-135 ms (Llama, Qwen3, Qwen3-MoE on H100).
  if (backend === 'trtllm' && atLeast('1.2')) p.requestOverheadMs = 30;
  else if (backend === 'trtllm' && atLeast('1.0') && !atLeast('1.1')) p.requestOverheadMs = 100;
  if (backend === 'sglang') {
    p.maxNumTokens = chunk;
    // Measured runs of 0.5.1-0.5.5 keep the clients in lockstep (long TTFT, clean decode); later versions
    // (overlap scheduler) spread the prompts like the other engines, still in steps of their own.
    if (onLineBefore(version, '0.5.6')) p.lockstep = true;
    else p.ttftMsPerStream = 1.5;
  }
  cache.set(key, p);
  return p;
}

/** TTFT an engine adds for the streams its schedulers serve: `streams` running over `dp` attention-dp ranks. */
export function streamTtftMs(prof: BackendProfile, streams: number, dp: number): number {
  return ((prof.ttftMsPerStream ?? 0) * streams) / dp;
}

/**
 * Steps an aggregated server's attention-DP balancing holds a prompt at most: TRT-LLM's DeepSeek and wide-EP
 * recipes set attention_dp_config with a 60-step timeout, an option of its LLM API from 1.1.
 */
export function adpBalanceTimeoutIters(backend: Backend, version: string): number | undefined {
  return backend === 'trtllm' && onLineAtLeast(engineRelease(backend, version), '1.1') ? 60 : undefined;
}

/**
 * Architectures whose experts our SGLang workers run on FlashInfer's TRT-LLM-gen runner on Blackwell, from 0.5.10:
 * those SGLang 0.5.14's server selects it for (server_args model-specific adjustments, on SM100 with
 * --moe-runner-backend auto and no all-to-all backend; other models keep its Triton kernel). Our workers pass the
 * flag, so earlier releases run it too, as InferenceX's Blackwell recipes do. Its speed moved between releases: the
 * 0.5.10.post1 runs of Qwen3.5 on B300 (bf16, FP8) sit within 9% (median) of the runner as 0.5.14's tables time it,
 * where 0.5.9's FP8 runs on B200 are 20-36% slower than those tables, so 0.5.9 keeps the Triton kernel it timed.
 */
const SGLANG_TRTLLM_MOE_ARCHS = ['DeepseekV3ForCausalLM', 'GlmMoeDsaForCausalLM', 'Llama4ForConditionalGeneration', 'Qwen3MoeForCausalLM', 'Qwen3VLMoeForConditionalGeneration', 'Qwen3_5MoeForConditionalGeneration'] as const;

/** Whether an SGLang worker runs the model's experts on FlashInfer's TRT-LLM-gen runner (Blackwell: fp4 tensor cores). */
export function sglangTrtllmMoe(prof: BackendProfile, architecture: string, system: SystemSpec): boolean {
  return !!prof.flashinferTrtllmMoeArchs?.includes(architecture) && (system.gpu.tflops.nvfp4 ?? 0) > 0;
}

/**
 * Whether a TRT-LLM worker runs its experts on the trtllm-gen MoE backend (moe_config.backend: TRTLLM), as the
 * DeepSeek-R1 and gpt-oss recipes for Blackwell do and our engine config writes: a release that takes it
 * (`prof.trtllmGenMoe`), fp4 experts (NVFP4, or MXFP4 through the fp4 kernels) on a GPU with fp4 tensor cores,
 * without attention DP, whose recipes keep CUTLASS.
 */
export function trtllmGenMoe(prof: BackendProfile, moeDtype: Dtype, system: SystemSpec, layout: ParallelLayout): boolean {
  return !!prof.trtllmGenMoe && (moeDtype === 'nvfp4' || moeDtype === 'mxfp4') && (system.gpu.tflops.nvfp4 ?? 0) > 0 && layout.dp === 1;
}

/** Profiles by context: every step cost asks, and a context's engine and GPU never change. */
const byCtx = new WeakMap<EngineContext, BackendProfile>();

/** The profile of a context's engine on its GPU. */
export function profileOf(ctx: EngineContext): BackendProfile {
  let p = byCtx.get(ctx);
  if (!p) byCtx.set(ctx, (p = backendProfile(ctx.backend, ctx.version, ctx.system.gpu)));
  return p;
}

/** Fraction of GPU memory the engine lets weights, activations and KV use. */
export function memoryFractionOf(p: BackendProfile, capacityGiB: number): number {
  if (p.outsideFractionGiB === undefined) return p.memoryFraction;
  return Math.max(p.memoryFraction, 1 - p.outsideFractionGiB / capacityGiB);
}

/** Pad a decode batch to the CUDA-graph size that will be replayed (or leave it when run eagerly). */
export function graphPaddedBatch(p: BackendProfile, batch: number): number {
  if (batch > p.cudaGraphMaxBatch) return batch;
  for (const s of p.cudaGraphSizes) if (s >= batch) return s;
  return batch;
}
