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
  /**
   * Experts compute in a smaller latent width than hidden_size, with a down and an up projection around them
   * (Nemotron-3 moe_latent_size, Kimi-K3 routed_expert_hidden_size).
   */
  latentSize?: number;
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

/**
 * What mixes tokens in one layer. 'full' and 'sliding' are softmax attention (GQA, or MLA when the spec has `mla`);
 * the others are the kinds of hybrid and sparse models:
 * - 'gdn': gated delta net, a linear attention with a fixed-size state (Qwen3.5 / 3.6 `linear_attention`);
 * - 'mamba2': a Mamba-2 mixer (Nemotron-H `M`);
 * - 'kda': Kimi delta attention, a linear attention (Kimi-K3 `kda_layers`);
 * - 'dsa': DeepSeek sparse attention, MLA whose indexer picks `indexer.topK` cached tokens (DeepSeek-V3.2, GLM-5);
 * - 'minimax_sparse': MiniMax-M3 block-sparse attention over GQA (`sparse_attention_freq`);
 * - 'compressed': DeepSeek-V4 attention over a sliding window plus a compressed KV (`ratio` tokens per entry; 0:
 *   the window only);
 * - 'none': no token mixer, the block is an FFN alone (Nemotron-H `E` and `-`).
 */
export type LayerKind = 'full' | 'sliding' | 'gdn' | 'mamba2' | 'kda' | 'dsa' | 'minimax_sparse' | 'compressed' | 'none';

export const LAYER_KINDS = ['full', 'sliding', 'gdn', 'mamba2', 'kda', 'dsa', 'minimax_sparse', 'compressed', 'none'] as const satisfies readonly LayerKind[];

/** `count` consecutive layers of one kind (a run-length form of the per-layer list). */
export interface LayerRun {
  kind: LayerKind;
  count: number;
  /** 'sliding': the window in tokens; 'compressed': the sliding window beside the compressed KV. */
  window?: number;
  /** 'compressed': tokens per compressed KV entry (DeepSeek-V4: 4 or 128; 0 when the layer keeps the window only). */
  ratio?: number;
}

/** Gated delta net (Qwen3.5 `linear_*`): per sequence a numValueHeads x keyHeadDim x valueHeadDim state per layer. */
export interface GdnSpec {
  numKeyHeads: number;
  numValueHeads: number;
  keyHeadDim: number;
  valueHeadDim: number;
  /** Causal depthwise convolution width over q, k and v (linear_conv_kernel_dim). */
  convKernel: number;
  /** Bytes per element of the recurrent state (4 when the checkpoint keeps it in float32, mamba_ssm_dtype). */
  stateBytes: number;
}

/** Mamba-2 mixer (Nemotron-H): per sequence a numHeads x headDim x stateSize SSM state per layer. */
export interface Mamba2Spec {
  numHeads: number;
  headDim: number;
  /** d_state (ssm_state_size). */
  stateSize: number;
  /** B and C projection groups (n_groups). */
  groups: number;
  /** d_conv (conv_kernel). */
  convKernel: number;
  /** Chunk length of the chunked scan in prefill (chunk_size). */
  chunkSize: number;
  /** Bytes per element of the SSM state (mamba_ssm_cache_dtype; 4 for float32). */
  stateBytes: number;
}

/** Kimi delta attention (linear_attn_config): per sequence a numHeads x headDim x headDim state per layer. */
export interface KdaSpec {
  numHeads: number;
  headDim: number;
  /** Short causal convolution over q, k and v (short_conv_kernel_size). */
  convKernel: number;
  stateBytes: number;
}

/**
 * The indexer of a sparse attention: it scores every cached token (or block) with `numHeads` small heads of
 * `headDim` and attends to the best `topK`. DeepSeek-V3.2 / GLM-5 (index_topk, index_n_heads, index_head_dim),
 * DeepSeek-V4's ratio-4 layers, MiniMax-M3 (sparse_topk_blocks blocks of `blockSize` tokens).
 */
export interface IndexerSpec {
  topK: number;
  numHeads: number;
  headDim: number;
  /** Tokens per scored block (MiniMax-M3 sparse_block_size); absent when single tokens are scored. */
  blockSize?: number;
}

/** DeepSeek-V4 compressed attention and hyper-connections. */
export interface CompressedAttentionSpec {
  /** Residual streams of the hyper-connections (hc_mult). */
  hcMult: number;
  /** Low-rank grouped output projection (o_lora_rank, o_groups). */
  oLoraRank: number;
  oGroups: number;
  /** The first layers route experts by token hash (num_hash_layers). */
  hashLayers: number;
  /** Low-rank query projection (q_lora_rank); absent: the query is projected directly. */
  qLoraRank?: number;
  /** Sinkhorn iterations normalizing the hyper-connection weights (hc_sinkhorn_iters). */
  sinkhornIters?: number;
}

/** Attention shape of the layers of one kind where it differs from the spec's numHeads / numKvHeads / headDim. */
export interface AttentionShape {
  numHeads: number;
  numKvHeads: number;
  /** Query and key head dim. */
  headDim: number;
  /** Value head dim, when it differs from headDim (MiMo-V2-Flash: 128 vs 192). */
  vHeadDim?: number;
  /** One projection serves as both K and V, so the cache holds one vector per KV head (Gemma-4 attention_k_eq_v). */
  kEqV?: boolean;
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
  /**
   * Multi-token-prediction layers the checkpoint declares (DeepSeek-V3/R1, MiMo: 1; Step-3.7-Flash: 3; read from
   * num_nextn_predict_layers or mtp_num_hidden_layers); not counted in numLayers.
   */
  mtpLayers?: number;
  /**
   * The checkpoint is multimodal (Llama 4, Kimi K2.5, Qwen3-VL) and the spec is its language model, planned alone:
   * the vision encoder and projector are neither priced nor counted.
   */
  languageModelOnly?: boolean;
  /**
   * RMS norms on Q and K before the rotary embedding: per head (Qwen3), or over all heads at once (MiniMax-M2
   * `qk_norm_type: per_layer`), which under tensor parallelism all-reduces every token's partial variances.
   */
  qkNorm?: 'per_head' | 'across_heads';
  /**
   * Layer kinds in layer order, run-length encoded, when some layer is neither full nor sliding attention (hybrid
   * and sparse models). Absent: every layer is full attention, or sliding where `slidingWindow` says so.
   */
  layerMix?: LayerRun[];
  gdn?: GdnSpec;
  mamba2?: Mamba2Spec;
  kda?: KdaSpec;
  /** Indexer of the 'dsa', 'minimax_sparse' and ratio-4 'compressed' layers. */
  indexer?: IndexerSpec;
  compressed?: CompressedAttentionSpec;
  /** Shapes of the 'full' or 'sliding' layers where they differ from the global one (Gemma-4, MiMo-V2-Flash). */
  attentionShapes?: Partial<Record<'full' | 'sliding', AttentionShape>>;
  /**
   * Attention output multiplied by a sigmoid gate projected from the input (Qwen3.5 attn_output_gate, Kimi-K3
   * mla_use_output_gate): the query projection is twice as wide.
   */
  attentionOutputGate?: boolean;
  /** MLPs and experts are up + down projections with no gate (Nemotron-H relu2), two matrices instead of three. */
  ungatedMlp?: boolean;
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
  /**
   * A GPU of the same architecture (same tensor-core generation and engine kernels) whose measured kernels price
   * those this GPU's tables never timed, by their efficiency there (see resolvedModel's `kinGpu`).
   */
  kernelsLike?: string;
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
  /** --sla-confidence: each target is judged against this quantile of its metric's error band (absent: 0.5, the prediction). */
  confidence?: number;
}
