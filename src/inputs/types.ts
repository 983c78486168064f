// Plain typed values every later stage receives. Nothing here reads flags or files.

/** Numeric formats, named as in the reference kernel tables. */
export type Dtype =
  | 'bfloat16'
  | 'float16'
  | 'fp8' // per-tensor fp8 (e4m3)
  | 'fp8_block' // block-scaled fp8 (DeepSeek style, 128x128)
  | 'nvfp4'
  | 'mxfp4'
  | 'int8_wo'
  | 'int4_wo';

/** Every format, in the order help texts and schema errors list them. */
export const DTYPES = ['bfloat16', 'float16', 'fp8', 'fp8_block', 'nvfp4', 'mxfp4', 'int8_wo', 'int4_wo'] as const satisfies readonly Dtype[];

export const DTYPE_BYTES: Record<Dtype, number> = {
  bfloat16: 2,
  float16: 2,
  fp8: 1,
  fp8_block: 1,
  nvfp4: 0.5625, // 4 bits + one fp8 scale per 16 values
  mxfp4: 0.53125, // 4 bits + one e8m0 scale per 32 values
  int8_wo: 1,
  int4_wo: 0.5,
};

/** How a checkpoint is quantized, as read from the checkpoint (never guessed from the GPU). */
export interface QuantSpec {
  /** Scheme name as the checkpoint states it (e.g. "fp8", "fp8_block", "nvfp4", "mxfp4"); "none" for bf16. */
  scheme: string;
  /** Dtype of the dense linear weights (attention projections, dense MLP). */
  gemmDtype: Dtype;
  /** Dtype of the routed-expert weights (MoE); equals gemmDtype unless the checkpoint says otherwise. */
  moeDtype: Dtype;
}

export interface MoeSpec {
  numExperts: number;
  topK: number;
  /** Intermediate size of one routed expert. */
  expertIntermediateSize: number;
  /** Number of shared experts (DeepSeek: 1, Qwen3-MoE: 0). */
  sharedExperts: number;
  /** Intermediate size of one shared expert (0 when none). */
  sharedIntermediateSize: number;
  /** The first N layers are dense MLPs (DeepSeek: 3) using `intermediateSize`. */
  firstDenseLayers: number;
  /**
   * MoE on every `layerStep`-th layer only (layers step-1, 2*step-1, ...; Llama 4 Maverick: 2), dense MLPs of
   * `intermediateSize` in between. Absent: every layer from `firstDenseLayers` on is MoE.
   */
  layerStep?: number;
}

export interface MlaSpec {
  qLoraRank: number; // 0 when q is not low-rank (DeepSeek-V2-Lite)
  kvLoraRank: number;
  qkNopeHeadDim: number;
  qkRopeHeadDim: number;
  vHeadDim: number;
}

/** Per-layer deviation from the global shape (heterogeneous models such as Nemotron Super). */
export interface LayerOverride {
  /** 0-based layer index. */
  layer: number;
  /** 'none': the attention block is skipped; 'linear': replaced by a single hidden x hidden linear. */
  attention?: 'full' | 'none' | 'linear';
  numKvHeads?: number;
  /** 0 means the FFN block is skipped; otherwise the dense intermediate size of this layer. */
  intermediateSize?: number;
  /** 'linear': the FFN is replaced by a single hidden x hidden linear. */
  ffn?: 'full' | 'none' | 'linear';
}

export interface ModelSpec {
  /** Canonical id, e.g. "Qwen/Qwen3-32B". */
  id: string;
  /** Family for error bands and reports: llama, qwen3, qwen2, mistral, mixtral, qwen3_moe, gpt_oss, deepseek_v3, nemotron. */
  family: string;
  /** HF architecture name, e.g. "LlamaForCausalLM". */
  architecture: string;
  numLayers: number;
  hiddenSize: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  /** Dense MLP intermediate size. */
  intermediateSize: number;
  vocabSize: number;
  tiedEmbeddings: boolean;
  maxPositionEmbeddings: number;
  /** Sliding-window attention: window size in tokens and which layers use it (true = sliding). */
  slidingWindow?: { window: number; layers: boolean[] };
  moe?: MoeSpec;
  mla?: MlaSpec;
  layerOverrides?: LayerOverride[];
  quant: QuantSpec;
  /** KV-cache dtype the checkpoint asks for by default. */
  kvDtype: Dtype;
  /** Published total parameter count in billions, when known (for the 2% check). */
  publishedParamsB?: number;
  /** Where the spec came from: "bundled", a path, "hf-cache", "hub". */
  source: string;
  /** Other ids that name the same checkpoint architecture (bundled models only). */
  aliases?: string[];
  /** Multi-token-prediction layers shipped with the checkpoint (DeepSeek-V3/R1: 1); not counted in numLayers. */
  mtpLayers?: number;
  /**
   * RMS norms on Q and K before the rotary embedding: per head (Qwen3), or over all heads at once (MiniMax-M2
   * `qk_norm_type: per_layer`), which under tensor parallelism all-reduces every token's partial variances.
   */
  qkNorm?: 'per_head' | 'across_heads';
}

export const BACKENDS = ['vllm', 'sglang', 'trtllm'] as const;
export type Backend = (typeof BACKENDS)[number];

export interface BackendSupport {
  versions: string[];
  default: string;
}

export interface SystemSpec {
  /** Canonical name, e.g. "h200_sxm". */
  name: string;
  aliases: string[];
  gpu: {
    name: string;
    /** HBM capacity per GPU, GiB. */
    memGiB: number;
    /** HBM bandwidth per GPU, GB/s (1e9 bytes). */
    memBwGBs: number;
    /** Peak dense tensor throughput per GPU in TFLOPS, by dtype (absent when unsupported). */
    tflops: Partial<Record<'bfloat16' | 'fp8' | 'nvfp4' | 'int8' | 'int4', number>>;
    numSms: number;
    l2MiB: number;
  };
  /** GPUs in one scale-up (NVLink) domain: 8 for HGX, 72 for NVL72, 1-8 over PCIe for L40S. */
  gpusPerNode: number;
  /** Unidirectional per-GPU bandwidth inside the node (NVLink or PCIe), GB/s. */
  intraNodeBwGBs: number;
  /** Unidirectional per-GPU bandwidth across nodes (InfiniBand / RoCE), GB/s. */
  interNodeBwGBs: number;
  /** Whether the scale-up link is NVLink (custom all-reduce) or PCIe. */
  intraNodeLink: 'nvlink' | 'pcie';
  backends: Partial<Record<Backend, BackendSupport>>;
}

export interface Workload {
  isl: number;
  osl: number;
  /** Tokens of each prompt already in the prefix cache. */
  prefix: number;
}

export interface Sla {
  ttftMs: number;
  tpotMs: number;
  requestLatencyMs?: number;
}
