// Turn a Hugging Face config.json (+ hf_quant_config.json) into a ModelSpec.
import { InputError, UnsupportedError } from '../util/errors.js';
import { isObj, type JsonObject as Json } from '../util/json.js';
import { checkpointQuant } from './dtypes.js';
import type { LayerOverride, MlaSpec, ModelSpec, MoeSpec } from './types.js';

/** Architectures whose attention RMS-normalizes every Q and K head (not flagged in their config.json). */
const PER_HEAD_QK_NORM = new Set(['Qwen3ForCausalLM', 'Qwen3MoeForCausalLM']);

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
};

class Reader {
  constructor(
    private readonly c: Json,
    private readonly where: string,
  ) {}
  int(key: string, fallback?: number): number {
    const v = this.c[key];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      throw new InputError(`${this.where}: missing field "${key}"`);
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new InputError(`${this.where}: field "${key}" must be a non-negative integer, got ${JSON.stringify(v)}`);
    return v;
  }
  optInt(key: string): number | undefined {
    const v = this.c[key];
    return v === undefined || v === null ? undefined : this.int(key);
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
  // Llama 4 keeps the language model in text_config.
  const text = family === 'llama4' && isObj(config.text_config) ? config.text_config : config;
  const r = new Reader(text, `${id}: config.json`);

  const numLayers = r.int('num_hidden_layers');
  const hiddenSize = r.int('hidden_size');
  const numHeads = r.int('num_attention_heads');
  const vocabSize = r.int('vocab_size');
  const headDim = r.optInt('head_dim') ?? Math.floor(hiddenSize / Math.max(1, numHeads));
  const maxPositionEmbeddings = r.int('max_position_embeddings', r.optInt('seq_length') ?? 4096);
  const tiedEmbeddings = (text.tie_word_embeddings ?? config.tie_word_embeddings) === true;

  let numKvHeads = r.optInt('num_key_value_heads') ?? numHeads;
  let intermediateSize = family === 'nemotron' ? 0 : r.int('intermediate_size');
  let moe: MoeSpec | undefined;
  let mla: MlaSpec | undefined;
  let layerOverrides: LayerOverride[] | undefined;
  let slidingWindow: ModelSpec['slidingWindow'];
  let mtpLayers: number | undefined;
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
    case 'deepseek_v3': {
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
      const mtp = r.optInt('num_nextn_predict_layers');
      if (mtp) mtpLayers = mtp;
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

  slidingWindow ??= slidingFromConfig(text, numLayers, family);
  const ckpt = checkpointQuant(config, isObj(quantConfig) ? quantConfig : undefined, moe !== undefined);

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
  if (text.use_qk_norm === true && text.qk_norm_type === 'per_layer') spec.qkNorm = 'across_heads';
  // Qwen3's attention always normalizes each Q and K head (q_norm / k_norm); its config has no flag for it.
  else if (PER_HEAD_QK_NORM.has(architecture)) spec.qkNorm = 'per_head';
  return spec;
}

function slidingFromConfig(c: Json, numLayers: number, family: string): ModelSpec['slidingWindow'] {
  const window = typeof c.sliding_window === 'number' && c.sliding_window > 0 ? c.sliding_window : undefined;
  if (!window) return undefined;
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
