// Turn a Hugging Face config.json (+ hf_quant_config.json) into a ModelSpec.
import { InputError, UnsupportedError } from '../util/errors.js';
import { isObj, type JsonObject as Json } from '../util/json.js';
import { checkpointQuant, type CheckpointQuant } from './dtypes.js';
import { nemotronBlockLayers, toRuns, type LayerOf } from './layers.js';
import type { Dtype, LayerOverride, MlaSpec, ModelSpec, MoeSpec } from './types.js';

/** Architectures whose attention RMS-normalizes every Q and K head (not flagged in their config.json). */
const PER_HEAD_QK_NORM = new Set([
  'Qwen3ForCausalLM', 'Qwen3MoeForCausalLM', 'Qwen3VLForConditionalGeneration', 'Qwen3VLMoeForConditionalGeneration',
  'Qwen3_5ForConditionalGeneration', 'Qwen3_5MoeForConditionalGeneration',
]);

/**
 * Multimodal checkpoints whose language model sits in `text_config`: the spec plans that language model alone
 * (`languageModelOnly`); the vision encoder and projector are neither priced nor counted.
 */
const LANGUAGE_MODEL_IN_TEXT_CONFIG = new Set([
  'Llama4ForConditionalGeneration', 'KimiK25ForConditionalGeneration', 'Qwen3VLForConditionalGeneration',
  'Qwen3VLMoeForConditionalGeneration', 'Qwen3_5ForConditionalGeneration', 'Qwen3_5MoeForConditionalGeneration',
  'KimiK3ForConditionalGeneration', 'MiniMaxM3SparseForConditionalGeneration', 'Gemma4ForConditionalGeneration',
]);

/** Architectures we can model, and the family each belongs to. */
export const SUPPORTED_ARCHITECTURES: Readonly<Record<string, string>> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'mistral',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
  Qwen2MoeForCausalLM: 'qwen2_moe',
  Qwen3MoeForCausalLM: 'qwen3_moe',
  MixtralForCausalLM: 'mixtral',
  MiniMaxM2ForCausalLM: 'minimax_m2',
  GptOssForCausalLM: 'gpt_oss',
  DeepseekV2ForCausalLM: 'deepseek_v2',
  DeepseekV3ForCausalLM: 'deepseek_v3',
  DeciLMForCausalLM: 'nemotron',
  Llama4ForConditionalGeneration: 'llama4',
  Llama4ForCausalLM: 'llama4',
  // Kimi K2.5 / K2.6 / K2.7: a DeepSeek-V3 language model (text_config) inside a vision-language wrapper.
  KimiK25ForConditionalGeneration: 'deepseek_v3',
  Qwen3VLForConditionalGeneration: 'qwen3',
  Qwen3VLMoeForConditionalGeneration: 'qwen3_moe',
  // MiMo-7B: the Qwen2 layer (GQA with QKV bias, SwiGLU) plus one multi-token-prediction layer.
  MiMoForCausalLM: 'mimo',
  // Step-3.7-Flash: GQA with sliding-window layers (layer_types), MoE with one shared expert after dense layers.
  Step3p7FlashForCausalLM: 'step3p7',
  // Hybrid and sparse models: parsed with their layer mix (ModelSpec.layerMix and the per-kind fields); the engine
  // refuses the layer kinds it cannot price yet (src/engine/index.ts modelRefusal), so they plan nothing yet.
  Qwen3_5ForConditionalGeneration: 'qwen3_5',
  Qwen3_5MoeForConditionalGeneration: 'qwen3_5_moe',
  NemotronHForCausalLM: 'nemotron_h',
  KimiK3ForConditionalGeneration: 'kimi_linear',
  DeepseekV32ForCausalLM: 'deepseek_v32',
  GlmMoeDsaForCausalLM: 'glm_moe_dsa',
  DeepseekV4ForCausalLM: 'deepseek_v4',
  MiniMaxM3ForCausalLM: 'minimax_m3',
  MiniMaxM3SparseForConditionalGeneration: 'minimax_m3',
  Gemma4ForConditionalGeneration: 'gemma4',
  MiMoV2FlashForCausalLM: 'mimo_v2',
};

class Reader {
  constructor(
    private readonly c: Json,
    private readonly where: string,
  ) {}
  /** A count of `min` (0) or more: a size or a count that must be positive passes `min` 1. */
  int(key: string, fallback?: number, min = 0): number {
    const v = this.c[key];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      throw new InputError(`${this.where}: missing field "${key}"`);
    }
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
      // (String, not JSON: NaN and Infinity, which a Python-written config may hold, are not null.)
      const got = typeof v === 'number' ? String(v) : JSON.stringify(v);
      throw new InputError(`${this.where}: field "${key}" must be a ${min > 0 ? 'positive' : 'non-negative'} integer, got ${got}`);
    }
    return v;
  }
  optInt(key: string, min = 0): number | undefined {
    const v = this.c[key];
    return v === undefined || v === null ? undefined : this.int(key, undefined, min);
  }
  raw(key: string): unknown {
    return this.c[key];
  }
}

/**
 * Build a ModelSpec from a parsed config.json. `quantConfig` is the parsed hf_quant_config.json when the checkpoint
 * has one. Unknown architecture: UnsupportedError (exit 4); missing or malformed fields: InputError naming the field.
 */
export function parseHfConfig(config: unknown, quantConfig: unknown, id: string, source: string): ModelSpec {
  if (!isObj(config)) throw new InputError(`${id}: config.json must be a JSON object`);
  const archs = config.architectures;
  const architecture = Array.isArray(archs) && typeof archs[0] === 'string' ? archs[0] : undefined;
  if (!architecture) throw new InputError(`${id}: config.json: missing field "architectures"`);
  const family = SUPPORTED_ARCHITECTURES[architecture];
  if (!family) {
    throw new UnsupportedError(
      `${id}: architecture ${architecture} is not supported; supported: ${Object.keys(SUPPORTED_ARCHITECTURES).join(', ')}`,
      { architecture, supported: Object.keys(SUPPORTED_ARCHITECTURES) },
    );
  }
  const text = LANGUAGE_MODEL_IN_TEXT_CONFIG.has(architecture) && isObj(config.text_config) ? config.text_config : config;
  const wrapped = text !== config;
  const r = new Reader(text, `${id}: config.json`);

  // Nemotron-3 Ultra states its depth only as the length of layers_block_type.
  const blockTypes = Array.isArray(text.layers_block_type) ? text.layers_block_type.length : undefined;
  // The shape of every layer: a zero here is a broken config, not a smaller model.
  const numLayers = r.int('num_hidden_layers', blockTypes, 1);
  const hiddenSize = r.int('hidden_size', undefined, 1);
  const numHeads = r.int('num_attention_heads', undefined, 1);
  const vocabSize = r.int('vocab_size', undefined, 1);
  const headDim = r.optInt('head_dim', 1) ?? Math.floor(hiddenSize / Math.max(1, numHeads));
  const maxPositionEmbeddings = r.int('max_position_embeddings', r.optInt('seq_length', 1) ?? 4096, 1);
  const tiedEmbeddings = (text.tie_word_embeddings ?? config.tie_word_embeddings) === true;

  let numKvHeads = r.optInt('num_key_value_heads', 1) ?? numHeads;
  // Grouped-query attention shares each KV head among a whole number of query heads.
  if (numHeads % numKvHeads !== 0) {
    throw new InputError(`${id}: config.json: num_attention_heads (${numHeads}) is not a multiple of num_key_value_heads (${numKvHeads})`);
  }
  // Hybrid families without a dense MLP (Qwen3.5-MoE, DeepSeek-V4) omit intermediate_size.
  let intermediateSize = family === 'nemotron' ? 0 : Object.hasOwn(HYBRID, family) ? r.int('intermediate_size', 0) : r.int('intermediate_size', undefined, 1);
  let moe: MoeSpec | undefined;
  let mla: MlaSpec | undefined;
  let layerOverrides: LayerOverride[] | undefined;
  let slidingWindow: ModelSpec['slidingWindow'];
  let mlaHeadDim: number | undefined;

  switch (family) {
    case 'mixtral':
    case 'minimax_m2':
      moe = { numExperts: r.int('num_local_experts'), topK: r.int('num_experts_per_tok'), expertIntermediateSize: intermediateSize, sharedExperts: 0, sharedIntermediateSize: 0, firstDenseLayers: 0 };
      break;
    case 'qwen3_moe':
    case 'qwen2_moe': {
      const shared = family === 'qwen2_moe' ? r.int('shared_expert_intermediate_size', 0) : 0;
      const dense = text.mlp_only_layers;
      moe = {
        numExperts: r.int('num_experts'),
        topK: r.int('num_experts_per_tok'),
        expertIntermediateSize: r.int('moe_intermediate_size'),
        sharedExperts: shared > 0 ? 1 : 0,
        sharedIntermediateSize: shared,
        firstDenseLayers: Array.isArray(dense) ? dense.length : 0,
      };
      if ((r.optInt('decoder_sparse_step') ?? 1) !== 1) throw new UnsupportedError(`${id}: decoder_sparse_step other than 1 is not supported`);
      break;
    }
    case 'gpt_oss':
      moe = {
        numExperts: r.int('num_local_experts'),
        topK: r.optInt('num_experts_per_tok') ?? r.int('experts_per_token'),
        expertIntermediateSize: intermediateSize,
        sharedExperts: 0,
        sharedIntermediateSize: 0,
        firstDenseLayers: 0,
      };
      break;
    case 'deepseek_v2':
    case 'deepseek_v3':
    case 'deepseek_v32':
    case 'glm_moe_dsa': {
      const routedInter = r.int('moe_intermediate_size');
      moe = {
        numExperts: r.int('n_routed_experts'),
        topK: r.int('num_experts_per_tok'),
        expertIntermediateSize: routedInter,
        sharedExperts: r.int('n_shared_experts', 0),
        sharedIntermediateSize: routedInter,
        firstDenseLayers: r.int('first_k_dense_replace', 0),
      };
      mla = {
        qLoraRank: r.optInt('q_lora_rank') ?? 0,
        kvLoraRank: r.int('kv_lora_rank'),
        qkNopeHeadDim: r.int('qk_nope_head_dim'),
        qkRopeHeadDim: r.int('qk_rope_head_dim'),
        vHeadDim: r.int('v_head_dim'),
      };
      mlaHeadDim = mla.qkNopeHeadDim + mla.qkRopeHeadDim;
      break;
    }
    case 'step3p7': {
      const routedInter = r.int('moe_intermediate_size');
      const shared = r.int('n_shared_experts', 0);
      moe = {
        numExperts: r.int('num_experts'),
        topK: r.int('num_experts_per_tok'),
        expertIntermediateSize: routedInter,
        sharedExperts: shared,
        sharedIntermediateSize: shared > 0 ? r.int('share_expert_dim', routedInter) : 0,
        firstDenseLayers: r.int('first_k_dense_replace', 0),
      };
      break;
    }
    case 'llama4': {
      // Maverick interleaves dense MLPs (intermediate_size_mlp) with MoE layers; Scout is MoE throughout.
      const step = r.int('interleave_moe_layer_step', 1);
      moe = { numExperts: r.int('num_local_experts'), topK: r.int('num_experts_per_tok'), expertIntermediateSize: intermediateSize, sharedExperts: 1, sharedIntermediateSize: intermediateSize, firstDenseLayers: 0 };
      if (step > 1) moe.layerStep = step;
      intermediateSize = r.int('intermediate_size_mlp', intermediateSize);
      const chunk = r.optInt('attention_chunk_size');
      if (chunk) {
        // Chunked local attention on the RoPE layers; every fourth layer (NoPE) attends globally.
        const noRope = text.no_rope_layers;
        const layers = Array.from({ length: numLayers }, (_, i) => (Array.isArray(noRope) && noRope.length === numLayers ? noRope[i] === 1 : (i + 1) % 4 !== 0));
        slidingWindow = { window: chunk, layers };
      }
      break;
    }
    case 'nemotron': {
      const d = deciBlocks(text, id, numHeads, hiddenSize, numLayers);
      numKvHeads = d.numKvHeads;
      intermediateSize = d.intermediateSize;
      layerOverrides = d.overrides.length > 0 ? d.overrides : undefined;
      break;
    }
    default:
      break;
  }
  const hybrid = Object.hasOwn(HYBRID, family) ? hybridParts(family, text, r, id, numLayers) : undefined;
  if (hybrid?.moe) moe = hybrid.moe;
  if (hybrid?.mla) mla = hybrid.mla;
  if (hybrid?.intermediateSize !== undefined) intermediateSize = hybrid.intermediateSize;
  if (hybrid?.layerOverrides) layerOverrides = hybrid.layerOverrides;
  if (hybrid?.slidingWindow) slidingWindow = hybrid.slidingWindow;
  if (mla) mlaHeadDim = mla.qkNopeHeadDim + mla.qkRopeHeadDim;

  // DeepSeek-V4's sliding_window is the window beside every layer's compressed KV (in layerMix), not a window layer.
  if (family !== 'deepseek_v4') slidingWindow ??= slidingFromConfig(text, numLayers, family);
  // Multi-token-prediction layers as the checkpoint declares them (DeepSeek, GLM, MiMo, Step: num_nextn_predict_layers;
  // Qwen3.5: mtp_num_hidden_layers). MiniMax-M2's num_mtp_modules is not read yet: mtpLayers turns on MTP in the
  // pricing of measured runs (src/engine/speculation.ts rowSpeculation), and MiniMax's runs are priced without it.
  const mtpLayers = r.optInt('num_nextn_predict_layers') ?? r.optInt('mtp_num_hidden_layers');
  const ckpt = checkpointFormats(config, text, quantConfig, moe !== undefined);

  const spec: ModelSpec = {
    id,
    family,
    architecture,
    numLayers,
    hiddenSize,
    numHeads,
    numKvHeads,
    headDim: mlaHeadDim ?? headDim,
    intermediateSize,
    vocabSize,
    tiedEmbeddings,
    maxPositionEmbeddings,
    quant: ckpt.quant,
    kvDtype: ckpt.kvDtype,
    source,
  };
  if (slidingWindow) spec.slidingWindow = slidingWindow;
  if (moe) spec.moe = moe;
  if (mla) spec.mla = mla;
  if (layerOverrides) spec.layerOverrides = layerOverrides;
  if (mtpLayers) spec.mtpLayers = mtpLayers;
  if (hybrid && (text.attn_output_gate === true || text.attention_output_gate === true || text.mla_use_output_gate === true)) spec.attentionOutputGate = true;
  if (hybrid) {
    const { moe: _m, mla: _a, intermediateSize: _i, layerOverrides: _o, slidingWindow: _w, layers, ...parts } = hybrid;
    if (layers && layers.some((l) => l.kind !== 'full' && l.kind !== 'sliding')) spec.layerMix = toRuns(layers);
    Object.assign(spec, parts);
  }
  if (wrapped) spec.languageModelOnly = true;
  if (text.use_qk_norm === true && text.qk_norm_type === 'per_layer') spec.qkNorm = 'across_heads';
  // Qwen3's attention always normalizes each Q and K head (q_norm / k_norm); its config has no flag for it.
  else if (PER_HEAD_QK_NORM.has(architecture)) spec.qkNorm = 'per_head';
  return spec;
}

/**
 * The checkpoint's weight and KV formats. A multimodal wrapper may keep quantization_config in text_config (Kimi
 * K2.5). A ModelOpt quantization_config inside config.json with no hf_quant_config.json beside it
 * (nvidia/Kimi-K2.5-NVFP4) says what that file would: `ignore` is its exclude_modules, `kv_cache_scheme` its KV
 * format. A compressed-tensors MoE checkpoint whose `ignore` list leaves attention out (Kimi K2.5's INT4 experts)
 * runs its dense GEMMs in 16 bits, as a ModelOpt one does.
 */
function checkpointFormats(config: Json, text: Json, quantConfig: unknown, isMoe: boolean): CheckpointQuant {
  const qc = config.quantization_config ?? text.quantization_config;
  const withQc: Json = qc === config.quantization_config ? config : { ...config, quantization_config: qc };
  let hfQuant = isObj(quantConfig) ? quantConfig : undefined;
  if (!hfQuant && isObj(qc) && qc.quant_method === 'modelopt' && typeof qc.quant_algo === 'string') {
    const kv = qc.kv_cache_scheme;
    const kvAlgo = isObj(kv) ? (Number(kv.num_bits) === 8 && kv.type === 'float' ? 'FP8' : undefined) : qc.kv_cache_quant_algo;
    hfQuant = { quantization: { quant_algo: qc.quant_algo, kv_cache_quant_algo: kvAlgo ?? null, exclude_modules: qc.ignore ?? [] } };
  }
  const mixed = isObj(hfQuant?.quantization) && hfQuant.quantization.quant_algo === 'MIXED_PRECISION' ? hfQuant.quantization : undefined;
  if (mixed) return mixedPrecision(mixed, config.torch_dtype ?? config.dtype ?? text.torch_dtype ?? text.dtype, isMoe);
  const ckpt = checkpointQuant(withQc, hfQuant, isMoe);
  if (isMoe && !hfQuant && isObj(qc) && qc.quant_method === 'compressed-tensors' && ignoresAttention(qc.ignore)) {
    const dtype = config.torch_dtype ?? config.dtype ?? text.torch_dtype ?? text.dtype;
    ckpt.quant.gemmDtype = dtype === 'float16' ? 'float16' : 'bfloat16';
  }
  return ckpt;
}

/** ModelOpt per-layer formats of a MIXED_PRECISION checkpoint, as our dtypes (weight-only NVFP4 runs as NVFP4 weights). */
const MIXED_ALGOS: Readonly<Record<string, Dtype>> = {
  FP8: 'fp8', FP8_BLOCK_SCALES: 'fp8_block', MXFP8: 'fp8_block', NVFP4: 'nvfp4', W4A16_NVFP4: 'nvfp4', MXFP4: 'mxfp4', W4A16_AWQ: 'int4_wo', W8A16: 'int8_wo',
};

/**
 * A ModelOpt MIXED_PRECISION checkpoint names a format per layer (quantized_layers): the experts' format is the MoE
 * weights' (a dense model's MLP format its GEMMs'), the most common format of the other layers the dense GEMMs'; layers
 * it does not list stay in the checkpoint's 16-bit type.
 */
function mixedPrecision(q: Json, torchDtype: unknown, isMoe: boolean): CheckpointQuant {
  const base: Dtype = torchDtype === 'float16' ? 'float16' : 'bfloat16';
  const layers = isObj(q.quantized_layers) ? Object.entries(q.quantized_layers) : [];
  const count = (pick: (name: string) => boolean): Dtype | undefined => {
    const n = new Map<Dtype, number>();
    for (const [name, v] of layers) {
      if (!pick(name) || !isObj(v)) continue;
      const algo = String(v.quant_algo ?? '').toUpperCase();
      const d = MIXED_ALGOS[algo];
      if (!d) throw new UnsupportedError(`quantization "${algo}" of ${name} is not supported; supported: ${Object.keys(MIXED_ALGOS).join(', ')}`);
      n.set(d, (n.get(d) ?? 0) + 1);
    }
    return [...n.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
  };
  const ffn = (name: string) => (isMoe ? /experts/.test(name) && !/shared_expert/.test(name) : /mlp|ffn/.test(name));
  const ffnDtype = count(ffn) ?? base;
  const otherDtype = count((name) => !ffn(name)) ?? base;
  const kv = typeof q.kv_cache_quant_algo === 'string' && q.kv_cache_quant_algo.toUpperCase() === 'FP8' ? 'fp8' : base;
  const gemmDtype = isMoe ? otherDtype : ffnDtype;
  return { quant: { scheme: 'mixed_precision', gemmDtype, moeDtype: isMoe ? ffnDtype : gemmDtype }, kvDtype: kv };
}

/** Whether a compressed-tensors `ignore` list (names or "re:" patterns) leaves the attention modules out. */
function ignoresAttention(ignore: unknown): boolean {
  return Array.isArray(ignore) && ignore.some((m) => typeof m === 'string' && /self_attn|attention/.test(m));
}

function slidingFromConfig(c: Json, numLayers: number, family: string): ModelSpec['slidingWindow'] {
  const window = typeof c.sliding_window === 'number' && c.sliding_window > 0 ? c.sliding_window : undefined;
  if (!window) return undefined;
  // Qwen2-style configs (Qwen, MiMo) carry a window they do not use unless use_sliding_window is set.
  if (c.use_sliding_window === false) return undefined;
  if (Array.isArray(c.layer_types) && c.layer_types.length === numLayers) {
    const layers = c.layer_types.map((t) => t === 'sliding_attention');
    return layers.some(Boolean) ? { window, layers } : undefined;
  }
  // Qwen configs carry a window they do not use unless use_sliding_window is set.
  if (family.startsWith('qwen') && c.use_sliding_window !== true) return undefined;
  if (family.startsWith('qwen')) {
    const from = typeof c.max_window_layers === 'number' ? c.max_window_layers : 0;
    const layers = Array.from({ length: numLayers }, (_, i) => i >= from);
    return layers.some(Boolean) ? { window, layers } : undefined;
  }
  return { window, layers: Array.from({ length: numLayers }, () => true) };
}

/** DeciLM (Nemotron NAS) FFN width from its multiplier, as the reference implementation computes it. */
export function deciFfnSize(ffnMult: number, hidden: number): number {
  const raw = Math.floor((2 * ffnMult * hidden) / 3);
  return Math.ceil(raw / 256) * 256;
}

function deciBlocks(c: Json, id: string, numHeads: number, hidden: number, numLayers: number) {
  const blocks = c.block_configs;
  if (!Array.isArray(blocks) || blocks.length !== numLayers) {
    throw new InputError(`${id}: config.json: field "block_configs" must list ${numLayers} blocks`);
  }
  interface Block { attention: 'full' | 'none' | 'linear'; kv: number; ffn: 'full' | 'none' | 'linear'; inter: number }
  const parsed: Block[] = blocks.map((b, i) => {
    if (!isObj(b) || !isObj(b.attention) || !isObj(b.ffn)) throw new InputError(`${id}: config.json: block_configs[${i}] needs "attention" and "ffn"`);
    const a = b.attention;
    const f = b.ffn;
    const attention = a.no_op === true ? 'none' : a.replace_with_linear === true ? 'linear' : 'full';
    const group = typeof a.n_heads_in_group === 'number' && a.n_heads_in_group > 0 ? a.n_heads_in_group : 1;
    const ffn = f.no_op === true ? 'none' : f.replace_with_linear === true ? 'linear' : 'full';
    if (ffn === 'full' && typeof f.ffn_mult !== 'number') throw new InputError(`${id}: config.json: block_configs[${i}].ffn.ffn_mult missing`);
    return { attention, kv: Math.floor(numHeads / group), ffn, inter: ffn === 'full' ? deciFfnSize(f.ffn_mult as number, hidden) : 0 };
  });
  const mode = (xs: number[]) => {
    const counts = new Map<number, number>();
    for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
    return [...counts.entries()].sort((a, b) => b[1] - a[1] || b[0] - a[0])[0]?.[0] ?? 0;
  };
  const numKvHeads = mode(parsed.filter((p) => p.attention === 'full').map((p) => p.kv)) || numHeads;
  const intermediateSize = mode(parsed.filter((p) => p.ffn === 'full').map((p) => p.inter));
  const overrides: LayerOverride[] = [];
  parsed.forEach((p, layer) => {
    const o: LayerOverride = { layer };
    if (p.attention !== 'full') o.attention = p.attention;
    else if (p.kv !== numKvHeads) o.numKvHeads = p.kv;
    if (p.ffn !== 'full') o.ffn = p.ffn;
    else if (p.inter !== intermediateSize) o.intermediateSize = p.inter;
    if (Object.keys(o).length > 1) overrides.push(o);
  });
  return { numKvHeads, intermediateSize, overrides };
}


/** What a hybrid or sparse family adds to (or replaces in) the common fields. */
type HybridParts = Partial<Pick<ModelSpec, 'moe' | 'mla' | 'intermediateSize' | 'layerOverrides' | 'slidingWindow' | 'gdn' | 'mamba2' | 'kda' | 'indexer' | 'compressed' | 'attentionShapes' | 'ungatedMlp'>> & {
  /** Every layer's mixer; becomes `layerMix` when some layer is neither full nor sliding attention. */
  layers?: LayerOf[];
};

/** Bytes per element of a recurrent state from its dtype name (mamba_ssm_dtype); 16 bits unless float32. */
function stateBytesOf(v: unknown): number {
  return v === 'float32' || v === 'fp32' ? 4 : 2;
}

/** A per-layer 0/1 list (moe_layer_freq) that must be dense first, then MoE: the number of dense first layers. */
function denseFirst(v: unknown, numLayers: number, field: string, id: string): number {
  if (typeof v === 'number' || v === undefined || v === null) return 0;
  if (!Array.isArray(v) || v.length < numLayers) throw new InputError(`${id}: config.json: field "${field}" must list ${numLayers} layers`);
  const first = v.findIndex((x) => x === 1);
  const k = first < 0 ? numLayers : first;
  if (v.slice(k, numLayers).some((x) => x !== 1)) throw new UnsupportedError(`${id}: ${field} with dense layers after the first MoE layer is not supported`);
  return k;
}

function mlaOf(r: Reader): MlaSpec {
  return {
    qLoraRank: r.optInt('q_lora_rank') ?? 0,
    kvLoraRank: r.int('kv_lora_rank'),
    qkNopeHeadDim: r.int('qk_nope_head_dim'),
    qkRopeHeadDim: r.int('qk_rope_head_dim'),
    vHeadDim: r.int('v_head_dim'),
  };
}

/** What a family's reader gets: the (text) config, its reader, and a reader of per-layer lists. */
interface HybridInput {
  family: string;
  c: Json;
  r: Reader;
  id: string;
  numLayers: number;
  where: string;
  /** The first numLayers entries of a per-layer list (some lists also cover the MTP layers). */
  perLayer(key: string, v?: unknown): unknown[];
}

function gdnParts({ family, c, r, id, numLayers, perLayer }: HybridInput): HybridParts {
  // Gated delta net on `linear_attention` layers, gated full attention on the others (every full_attention_interval-th).
  const interval = r.optInt('full_attention_interval') ?? 4;
  const types = Array.isArray(c.layer_types) ? perLayer('layer_types') : Array.from({ length: numLayers }, (_, i) => ((i + 1) % interval === 0 ? 'full_attention' : 'linear_attention'));
  const layers = types.map((t): LayerOf => {
    if (t === 'linear_attention') return { kind: 'gdn' };
    if (t === 'full_attention') return { kind: 'full' };
    throw new UnsupportedError(`${id}: layer type ${JSON.stringify(t)} is not supported`);
  });
  const parts: HybridParts = {
    layers,
    gdn: {
      numKeyHeads: r.int('linear_num_key_heads'),
      numValueHeads: r.int('linear_num_value_heads'),
      keyHeadDim: r.int('linear_key_head_dim'),
      valueHeadDim: r.int('linear_value_head_dim'),
      convKernel: r.int('linear_conv_kernel_dim', 4),
      stateBytes: stateBytesOf(c.mamba_ssm_dtype),
    },
  };
  if (family === 'qwen3_5_moe') {
    const shared = r.int('shared_expert_intermediate_size', 0);
    parts.moe = {
      numExperts: r.int('num_experts'),
      topK: r.int('num_experts_per_tok'),
      expertIntermediateSize: r.int('moe_intermediate_size'),
      sharedExperts: shared > 0 ? 1 : 0,
      sharedIntermediateSize: shared,
      firstDenseLayers: Array.isArray(c.mlp_only_layers) ? c.mlp_only_layers.length : 0,
    };
  }
  return parts;
}

function nemotronHParts({ c, r, id, numLayers, where, perLayer }: HybridInput): HybridParts {
  // One block per layer: M = Mamba-2 mixer, * = attention, E = MoE FFN, - = dense MLP (hybrid_override_pattern,
  // or the names in layers_block_type). A block is a mixer or an FFN, never both.
  const NAMES: Record<string, string> = { mamba: 'M', attention: '*', moe: 'E', mlp: '-' };
  const blocks = typeof c.hybrid_override_pattern === 'string'
    ? [...c.hybrid_override_pattern]
    : perLayer('layers_block_type').map((b) => NAMES[String(b)] ?? String(b));
  if (blocks.length !== numLayers) throw new InputError(`${where}: hybrid_override_pattern has ${blocks.length} blocks for ${numLayers} layers`);
  const hasMoe = blocks.includes('E');
  if (hasMoe && blocks.includes('-')) throw new UnsupportedError(`${id}: dense MLP blocks beside MoE blocks are not supported`);
  const parsed = nemotronBlockLayers(blocks);
  if ('unknown' in parsed) throw new UnsupportedError(`${id}: Nemotron-H block ${JSON.stringify(parsed.unknown)} is not supported`);
  const { layers, overrides } = parsed;
  const parts: HybridParts = {
    layers,
    layerOverrides: overrides,
    ...(c.mlp_hidden_act === 'relu2' ? { ungatedMlp: true } : {}),
    mamba2: {
      numHeads: r.int('mamba_num_heads'),
      headDim: r.int('mamba_head_dim'),
      stateSize: r.int('ssm_state_size'),
      groups: r.int('n_groups', 1),
      convKernel: r.int('conv_kernel', 4),
      chunkSize: r.int('chunk_size', 256),
      stateBytes: stateBytesOf(c.mamba_ssm_cache_dtype),
    },
  };
  if (hasMoe) {
    const shared = r.int('n_shared_experts', 0);
    parts.moe = {
      numExperts: r.int('n_routed_experts'),
      topK: r.int('num_experts_per_tok'),
      expertIntermediateSize: r.int('moe_intermediate_size'),
      sharedExperts: shared,
      sharedIntermediateSize: shared > 0 ? r.int('moe_shared_expert_intermediate_size') : 0,
      firstDenseLayers: 0,
    };
    const latent = r.optInt('moe_latent_size');
    if (latent) parts.moe.latentSize = latent;
  }
  return parts;
}

function kimiLinearParts({ c, r, numLayers, where }: HybridInput): HybridParts {
  // Kimi delta attention on kda_layers, MLA on full_attn_layers (both numbered from 1).
  const lin = c.linear_attn_config;
  if (!isObj(lin)) throw new InputError(`${where}: missing field "linear_attn_config"`);
  const lr = new Reader(lin, `${where}: linear_attn_config`);
  const full = new Set(Array.isArray(lin.full_attn_layers) ? lin.full_attn_layers : []);
  const kda = new Set(Array.isArray(lin.kda_layers) ? lin.kda_layers : []);
  const layers = Array.from({ length: numLayers }, (_, i): LayerOf => {
    if (kda.has(i + 1)) return { kind: 'kda' };
    if (full.has(i + 1)) return { kind: 'full' };
    throw new InputError(`${where}: layer ${i + 1} is in neither linear_attn_config.kda_layers nor full_attn_layers`);
  });
  const shared = r.int('num_shared_experts', 0);
  const inter = r.int('moe_intermediate_size');
  const moe: MoeSpec = {
    numExperts: r.int('num_experts'),
    topK: r.optInt('num_experts_per_token') ?? r.int('num_experts_per_tok'),
    expertIntermediateSize: inter,
    sharedExperts: shared,
    sharedIntermediateSize: shared > 0 ? inter : 0,
    firstDenseLayers: r.int('first_k_dense_replace', 0),
  };
  const latent = r.optInt('routed_expert_hidden_size');
  if (latent && latent !== r.int('hidden_size')) moe.latentSize = latent;
  return {
    layers,
    moe,
    mla: mlaOf(r),
    kda: { numHeads: lr.int('num_heads'), headDim: lr.int('head_dim'), convKernel: lr.int('short_conv_kernel_size', 4), stateBytes: 4 },
  };
}

function dsaParts({ r, numLayers }: HybridInput): HybridParts {
  // MLA on every layer, with an indexer choosing index_topk cached tokens.
  return {
    layers: Array.from({ length: numLayers }, () => ({ kind: 'dsa' })),
    indexer: { topK: r.int('index_topk'), numHeads: r.int('index_n_heads'), headDim: r.int('index_head_dim') },
  };
}

/** The fields of `o` that are set. */
function optional<T extends Record<string, number | undefined>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function deepseekV4Parts({ r, where, perLayer }: HybridInput): HybridParts {
  // A sliding window on every layer plus a compressed KV of 1/ratio entries per token (0: the window only);
  // the ratio-4 layers pick index_topk compressed entries with an indexer. compress_ratios also lists the MTP layer.
  const window = r.int('sliding_window');
  const ratios = perLayer('compress_ratios');
  const layers = ratios.map((x, i): LayerOf => {
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) throw new InputError(`${where}: compress_ratios[${i}] must be a non-negative integer`);
    return { kind: 'compressed', window, ratio: x };
  });
  const shared = r.int('n_shared_experts', 0);
  const inter = r.int('moe_intermediate_size');
  return {
    layers,
    moe: { numExperts: r.int('n_routed_experts'), topK: r.int('num_experts_per_tok'), expertIntermediateSize: inter, sharedExperts: shared, sharedIntermediateSize: shared > 0 ? inter : 0, firstDenseLayers: 0 },
    indexer: { topK: r.int('index_topk'), numHeads: r.int('index_n_heads'), headDim: r.int('index_head_dim') },
    compressed: {
      hcMult: r.int('hc_mult'), oLoraRank: r.int('o_lora_rank'), oGroups: r.int('o_groups'), hashLayers: r.int('num_hash_layers', 0),
      ...optional({ qLoraRank: r.optInt('q_lora_rank'), sinkhornIters: r.optInt('hc_sinkhorn_iters') }),
    },
  };
}

function minimaxM3Parts({ c, r, id, numLayers, where, perLayer }: HybridInput): HybridParts {
  // GQA on every layer; block-sparse attention where sparse_attention_freq is 1. Dense MLPs (dense_intermediate_size)
  // before the first MoE layer (moe_layer_freq).
  const sac = c.sparse_attention_config;
  const sparse = isObj(sac) && sac.use_sparse_attention !== false ? perLayer('sparse_attention_config.sparse_attention_freq', sac.sparse_attention_freq) : [];
  const layers = Array.from({ length: numLayers }, (_, i): LayerOf => ({ kind: sparse[i] === 1 ? 'minimax_sparse' : 'full' }));
  const shared = r.int('n_shared_experts', 0);
  const parts: HybridParts = {
    layers,
    intermediateSize: r.int('dense_intermediate_size', r.int('intermediate_size')),
    moe: {
      numExperts: r.int('num_local_experts'),
      topK: r.int('num_experts_per_tok'),
      expertIntermediateSize: r.int('moe_intermediate_size', r.int('intermediate_size')),
      sharedExperts: shared,
      sharedIntermediateSize: shared > 0 ? r.int('shared_intermediate_size') : 0,
      firstDenseLayers: denseFirst(c.moe_layer_freq, numLayers, 'moe_layer_freq', id) || r.int('first_k_dense_replace', 0),
    },
  };
  if (isObj(sac) && sparse.includes(1)) {
    const sr = new Reader(sac, `${where}: sparse_attention_config`);
    parts.indexer = { topK: sr.int('sparse_topk_blocks'), numHeads: sr.int('sparse_num_index_heads'), headDim: sr.int('sparse_index_dim'), blockSize: sr.int('sparse_block_size') };
  }
  return parts;
}

function gemma4Parts({ c, r, id }: HybridInput): HybridParts {
  // Sliding layers have the global shape; the full-attention layers their own head dim, KV heads and K = V.
  const parts: HybridParts = {};
  const globalHd = r.optInt('global_head_dim');
  if (globalHd !== undefined) {
    parts.attentionShapes = {
      full: {
        numHeads: r.int('num_attention_heads'),
        numKvHeads: r.optInt('num_global_key_value_heads') ?? r.int('num_key_value_heads'),
        headDim: globalHd,
        ...(c.attention_k_eq_v === true ? { kEqV: true } : {}),
      },
    };
  }
  if (c.enable_moe_block === true) {
    // Each layer runs a dense MLP and the experts side by side: the MLP is counted as a shared expert.
    const inter = r.int('intermediate_size');
    parts.moe = { numExperts: r.int('num_experts'), topK: r.int('top_k_experts'), expertIntermediateSize: r.int('moe_intermediate_size'), sharedExperts: 1, sharedIntermediateSize: inter, firstDenseLayers: 0 };
  }
  if ((r.optInt('num_kv_shared_layers') ?? 0) > 0) throw new UnsupportedError(`${id}: KV shared across layers (num_kv_shared_layers) is not supported`);
  return parts;
}

function mimoV2Parts({ c, r, id, numLayers, perLayer }: HybridInput): HybridParts {
  // hybrid_layer_pattern: 1 = sliding window (swa_* shape), 0 = full attention; values of v_head_dim.
  const pattern = perLayer('hybrid_layer_pattern');
  const window = r.int('sliding_window');
  const v = r.int('v_head_dim');
  const full = { numHeads: r.int('num_attention_heads'), numKvHeads: r.int('num_key_value_heads'), headDim: r.int('head_dim'), vHeadDim: v };
  const sliding = {
    numHeads: r.int('swa_num_attention_heads', full.numHeads),
    numKvHeads: r.int('swa_num_key_value_heads', full.numKvHeads),
    headDim: r.int('swa_head_dim', full.headDim),
    vHeadDim: r.int('swa_v_head_dim', v),
  };
  const shared = r.optInt('n_shared_experts') ?? 0;
  const inter = r.int('moe_intermediate_size');
  return {
    slidingWindow: { window, layers: pattern.map((x) => x === 1) },
    attentionShapes: { full, sliding },
    moe: {
      numExperts: r.int('n_routed_experts'),
      topK: r.int('num_experts_per_tok'),
      expertIntermediateSize: inter,
      sharedExperts: shared,
      sharedIntermediateSize: shared > 0 ? inter : 0,
      firstDenseLayers: denseFirst(c.moe_layer_freq, numLayers, 'moe_layer_freq', id),
    },
  };
}

/** Hybrid and sparse families, each read by its own function. */
const HYBRID: Readonly<Record<string, (h: HybridInput) => HybridParts>> = {
  qwen3_5: gdnParts,
  qwen3_5_moe: gdnParts,
  nemotron_h: nemotronHParts,
  kimi_linear: kimiLinearParts,
  deepseek_v32: dsaParts,
  glm_moe_dsa: dsaParts,
  deepseek_v4: deepseekV4Parts,
  minimax_m3: minimaxM3Parts,
  gemma4: gemma4Parts,
  mimo_v2: mimoV2Parts,
};

function hybridParts(family: string, c: Json, r: Reader, id: string, numLayers: number): HybridParts {
  const where = `${id}: config.json`;
  const perLayer = (key: string, v: unknown = c[key]): unknown[] => {
    if (!Array.isArray(v) || v.length < numLayers) throw new InputError(`${where}: field "${key}" must list ${numLayers} layers`);
    return v.slice(0, numLayers);
  };
  return HYBRID[family]?.({ family, c, r, id, numLayers, where, perLayer }) ?? {};
}
