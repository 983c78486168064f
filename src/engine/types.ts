// Values the inference model takes and returns. Search and output depend on these, never on engine internals.
import type { Backend, Dtype, ModelSpec, SystemSpec, Workload } from '../inputs/types.js';
import type { PerfSource } from '../perf/types.js';

/** A user's correction profile fitted by `configure calibrate` from measured AIPerf runs. */
export interface CorrectionProfile {
  /** Multiplies prefill (context) compute time. */
  prefillFactor: number;
  /** Multiplies decode step time. */
  decodeFactor: number;
  /** Added to every engine step, ms. */
  stepOverheadMs: number;
  /** Where it came from (file path), shown in reports as "calibrated". */
  source: string;
  /** The model, system and backend it was fitted for, when the profile says. */
  fittedFor?: { model?: string; system?: string; backend?: string };
}

export interface EngineContext {
  model: ModelSpec;
  system: SystemSpec;
  backend: Backend;
  version: string;
  perf: PerfSource;
  /** Effective dtypes after the checkpoint and the --weight-dtype / --kv-cache-dtype overrides. */
  gemmDtype: Dtype;
  moeDtype: Dtype;
  kvDtype: Dtype;
  workload: Workload;
  correction?: CorrectionProfile;
  /** For disagg on heterogeneous systems: the decode pool's system and perf source. */
  decodeSystem?: SystemSpec;
  decodePerf?: PerfSource;
  /**
   * Speculative decoding the deployment runs (the checkpoint's MTP layers, or an EAGLE-3 draft): draft tokens
   * proposed per step and the acceptance of each draft position. Absent: one token per step.
   */
  speculation?: Speculation;
  /** The engine's default MoE backend rather than the one our deployments set (trtllm-bench runs; see trtllmGenMoe). */
  engineDefaultMoe?: boolean;
  /**
   * SGLang's --scheduler-recv-interval: while it decodes, its scheduler takes in new requests every this many
   * steps (1, the default and what our deployments run: every step). Only rows that state it set it.
   */
  schedulerRecvInterval?: number;
  /**
   * The share of GPU memory the server was told it may take (SGLang --mem-fraction-static, vLLM
   * --gpu-memory-utilization, TRT-LLM free_gpu_memory_fraction), in the engine's own sense (of all memory or
   * of what is free). Absent: the engine's default, which our deployments run. Only rows that state it set it.
   */
  memoryFraction?: number;
}

export type SpeculativeMethod = 'mtp' | 'eagle3';

/** One speculative decode step of the running batch, ms: verify pass, draft passes, host; and tokens it emits. */
export interface SpeculativeStepParts {
  verifyMs: number;
  draftMs: number;
  hostMs: number;
  tokensPerStep: number;
}

/** Speculative decoding of a deployment (see src/engine/speculation.ts). */
export interface Speculation {
  method: SpeculativeMethod;
  /** Draft tokens proposed and verified per decode step (nextn). */
  draft: number;
  /** Acceptance of each draft position given the ones before it were accepted (draft of them). */
  acceptRates: number[];
  /** The rates are a default from published figures, not the user's (reports say "assumed"). */
  assumed: boolean;
  /** Where the rates come from ("given", or the published figure). */
  source: string;
  /** EAGLE-3: the draft checkpoint's Hub id. */
  draftModel?: string;
}

/** GPUs of one model instance = tp * pp * dp (attention data parallel); moeTp * moeEp = tp * dp. */
export interface ParallelLayout {
  tp: number;
  pp: number;
  dp: number;
  moeTp: number;
  moeEp: number;
}

export interface AggConfig extends ParallelLayout {
  /** Concurrency per replica = the engine's max running sequences (max-num-seqs). */
  batchSize: number;
  /** Token budget per engine step (chunked prefill), i.e. max-num-batched-tokens. */
  maxNumTokens: number;
}

export interface PoolConfig extends ParallelLayout {
  batchSize: number;
  maxNumTokens: number;
  workers: number;
}

export interface DisaggConfig {
  prefill: PoolConfig;
  decode: PoolConfig;
}

/** Where the mean TTFT goes, ms: the parts sum to it. */
export interface TtftParts {
  /** The request path outside the engine loop: front-end, tokenization, the scheduler's time per stream (disagg: and the handoff between workers). */
  request: number;
  /** Waiting for the step in flight when the prompt arrives (agg). */
  stepInFlight: number;
  /** Clients beyond the running slots waiting for one (closed loop). */
  slotQueue: number;
  /** A prefill-bound engine's queue (agg) or the prefill pool's queue (disagg). */
  engineQueue: number;
  /** Attention-DP balancing holding the prompt until every rank has one (TRT-LLM agg). */
  balance: number;
  /** Queueing behind a burst of prompts: the benchmark's first round, spread over its rounds (every round under lockstep). */
  burst: number;
  /** The prompt's own prefill step(s). */
  prefill: number;
  /** Moving the prompt's KV cache to the decode worker (disagg). */
  kvTransfer: number;
  /** From the last prefill step to the first token's hand-out: an overlap scheduler's one-step lag (agg), joining the decode batch (disagg). */
  handout: number;
}

export interface Band {
  low: number;
  high: number;
}

export interface ServingMetrics {
  ttftMs: number;
  tpotMs: number;
  requestLatencyMs: number;
  /** Output tokens per second of everything this estimate covers (all replicas / workers). */
  outputTokPerS: number;
  tokPerSPerGpu: number;
  tokPerSPerUser: number;
  requestsPerS: number;
  /** Total concurrency (clients) this estimate covers. */
  concurrency: number;
  gpus: number;
}

export interface MetricBands {
  ttftMs: Band;
  tpotMs: Band;
  requestLatencyMs: Band;
  tokPerSPerGpu: Band;
  tokPerSPerUser: Band;
}

export interface MemoryPicture {
  capacityGiB: number;
  weightsGiB: number;
  activationGiB: number;
  reserveGiB: number;
  kvCacheGiB: number;
  kvBytesPerTokenPerGpu: number;
  kvTokens: number;
  /** Largest number of sequences of length isl+osl that fit in the KV cache. */
  maxSequences: number;
}

export interface Refusal {
  refused: true;
  constraint: 'memory' | 'engine';
  reason: string;
}

export interface AggEstimate {
  refused: false;
  mode: 'agg';
  config: AggConfig;
  replicas: number;
  metrics: ServingMetrics;
  bands: MetricBands;
  memory: MemoryPicture;
  /** Time per op type (ms per step) for prefill and decode, when asked for. */
  breakdown?: { prefill: Record<string, number>; decode: Record<string, number>; speculative?: SpeculativeStepParts };
  /** The speculative decoding this estimate prices (absent: none). */
  speculation?: Speculation;
  /** Where the mean TTFT goes. */
  ttftParts: TtftParts;
}

export interface DisaggEstimate {
  refused: false;
  mode: 'disagg';
  config: DisaggConfig;
  /** Identical xPyD units the metrics cover. */
  replicas: number;
  metrics: ServingMetrics;
  bands: MetricBands;
  memory: { prefill: MemoryPicture; decode: MemoryPicture };
  kvTransferMs: number;
  /** Sequences one decode worker runs at this load (the batch its TPOT is priced at). */
  decodeRunning?: number;
  breakdown?: { prefill: Record<string, number>; decode: Record<string, number>; speculative?: SpeculativeStepParts };
  /** The speculative decoding this estimate prices (absent: none). */
  speculation?: Speculation;
  /** Where the mean TTFT goes. */
  ttftParts: TtftParts;
}

export type Estimate = AggEstimate | DisaggEstimate;
