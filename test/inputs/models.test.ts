import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { countParams, listBundledModels, parseHfConfig, parseJsonText, resolveModel } from '../../src/inputs/models.js';
import { activeParams, isMoeLayer } from '../../src/inputs/params.js';
import { effectiveDtypes } from '../../src/inputs/dtypes.js';
import { deciFfnSize } from '../../src/inputs/hf-config.js';
import { InputError, UnsupportedError } from '../../src/util/errors.js';
import type { ModelSpec } from '../../src/inputs/types.js';
import { referencePath } from '../../src/util/paths.js';
import { modelRefusal } from '../../src/engine/index.js';
import { layerMixSummary } from '../../src/inputs/layers.js';

const REF = referencePath();
const CONFIGS = join(REF, 'model-configs');
if (!existsSync(REF)) console.log(`note: ${REF} absent; skipping the checks against reference configs`);

const OFFLINE = { env: { HF_HUB_OFFLINE: '1', HF_HUB_CACHE: '/nonexistent' } };

const llamaConfig = () => ({
  architectures: ['LlamaForCausalLM'],
  hidden_size: 4096,
  intermediate_size: 14336,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  vocab_size: 128256,
  max_position_embeddings: 131072,
  tie_word_embeddings: false,
  torch_dtype: 'bfloat16',
});

describe('bundled registry', () => {
  const models = listBundledModels();
  it('holds the models the planner promises', () => {
    const ids = models.map((m) => m.id);
    for (const id of [
      'meta-llama/Llama-3.1-8B', 'meta-llama/Llama-3.1-70B', 'meta-llama/Llama-3.1-405B', 'meta-llama/Llama-3.3-70B-Instruct',
      'nvidia/Llama-3.1-Nemotron-Nano-4B-v1.1', 'nvidia/Llama-3_3-Nemotron-Super-49B-v1', 'Qwen/Qwen3-0.6B', 'Qwen/Qwen3-1.7B',
      'Qwen/Qwen3-4B', 'Qwen/Qwen3-8B', 'Qwen/Qwen3-14B', 'Qwen/Qwen3-32B', 'Qwen/Qwen3-32B-FP8', 'Qwen/Qwen2.5-7B-Instruct',
      'Qwen/Qwen2.5-72B-Instruct', 'mistralai/Mistral-7B-Instruct-v0.3', 'mistralai/Mixtral-8x7B-v0.1', 'mistralai/Mixtral-8x22B-v0.1',
      'Qwen/Qwen3-30B-A3B', 'Qwen/Qwen3-235B-A22B', 'Qwen/Qwen3-235B-A22B-FP8', 'openai/gpt-oss-20b', 'openai/gpt-oss-120b',
      'deepseek-ai/DeepSeek-V3', 'deepseek-ai/DeepSeek-R1', 'nvidia/Llama-3.1-70B-Instruct-FP8', 'nvidia/Qwen3-235B-A22B-NVFP4',
      'Qwen/Qwen3-30B-A3B-FP8', 'Qwen/Qwen3-32B-FP8-Static-PerTensor', 'Qwen/Qwen3-Coder-480B-A35B-Instruct',
      'Qwen/Qwen3-VL-8B-Instruct', 'Qwen/Qwen3-VL-235B-A22B-Instruct', 'MiniMaxAI/MiniMax-M2.7', 'nvidia/MiniMax-M2.7-NVFP4',
      'nvidia/Kimi-K2.5-NVFP4', 'XiaomiMiMo/MiMo-7B-Base', 'stepfun-ai/Step-3.7-Flash',
    ]) {
      expect(ids).toContain(id);
    }
  });

  it.each(models.map((m) => [m.id, m] as const))('%s: parameter count within 2%% of the published size', (_id, m) => {
    expect(m.publishedParamsB, 'publishedParamsB').toBeDefined();
    const billions = countParams(m) / 1e9;
    expect(Math.abs(billions / m.publishedParamsB! - 1)).toBeLessThan(0.02);
  });

  it('resolves ids and aliases case-insensitively', async () => {
    expect((await resolveModel('qwen/qwen3-32b', OFFLINE)).id).toBe('Qwen/Qwen3-32B');
    expect((await resolveModel('meta-llama/Llama-3.1-8B-Instruct', OFFLINE)).id).toBe('meta-llama/Llama-3.1-8B');
    expect((await resolveModel('mistralai/Mixtral-8x7B-Instruct-v0.1', OFFLINE)).id).toBe('mistralai/Mixtral-8x7B-v0.1');
    expect((await resolveModel('nvidia/Llama-3.1-8B-Instruct-FP8', OFFLINE)).quant.gemmDtype).toBe('fp8');
    expect((await resolveModel('Qwen/Qwen3-32B', OFFLINE)).source).toBe('bundled');
    expect((await resolveModel('gpt-oss-120b', OFFLINE)).id).toBe('openai/gpt-oss-120b'); // bare name, unique
  });

  it('models the special shapes: sliding windows, heterogeneous blocks, MLA, MTP', async () => {
    const oss = await resolveModel('openai/gpt-oss-120b', OFFLINE);
    expect(oss.slidingWindow!.window).toBe(128);
    expect(oss.slidingWindow!.layers.slice(0, 4)).toEqual([true, false, true, false]);
    expect(oss.slidingWindow!.layers).toHaveLength(36);
    expect(oss.quant).toEqual({ scheme: 'mxfp4', gemmDtype: 'bfloat16', moeDtype: 'mxfp4' });
    const nano = await resolveModel('nvidia/Llama-3.1-Nemotron-Nano-4B-v1.1', OFFLINE);
    expect(nano.headDim).toBe(128);
    const sup = await resolveModel('nvidia/Llama-3_3-Nemotron-Super-49B-v1', OFFLINE);
    const noAttn = sup.layerOverrides!.filter((o) => o.attention === 'none').length;
    expect(noAttn).toBe(31); // 49 of the 80 layers keep attention
    const ds = await resolveModel('deepseek-ai/DeepSeek-R1', OFFLINE);
    expect(ds.mla!.kvLoraRank).toBe(512);
    expect(ds.mtpLayers).toBe(1);
    expect(ds.quant.gemmDtype).toBe('fp8_block');
    expect((await resolveModel('MiniMaxAI/MiniMax-M2.5', OFFLINE)).qkNorm).toBe('across_heads');
    expect((await resolveModel('Qwen/Qwen3-235B-A22B-FP8', OFFLINE)).qkNorm).toBe('per_head');
    // Llama 4 Maverick: experts on every second layer (1, 3, ...), dense MLPs of 16384 in between.
    const mav = await resolveModel('meta-llama/Llama-4-Maverick-17B-128E-Instruct', OFFLINE);
    expect(Array.from({ length: 4 }, (_, i) => isMoeLayer(mav, i))).toEqual([false, true, false, true]);
    expect(mav.intermediateSize).toBe(16384);
    expect(mav.maxPositionEmbeddings).toBe(1048576); // Scout's is 10M
    expect(ds.qkNorm).toBeUndefined();
    // Step-3.7-Flash: global attention on layers 0, 4, 8, ..., a 512-token window elsewhere; experts from layer 3.
    const step = await resolveModel('stepfun-ai/Step-3.7-Flash', OFFLINE);
    expect(step.slidingWindow!.window).toBe(512);
    expect(step.slidingWindow!.layers.slice(0, 5)).toEqual([false, true, true, true, false]);
    expect(step.slidingWindow!.layers.at(-1)).toBe(false);
    expect(Array.from({ length: 4 }, (_, i) => isMoeLayer(step, i))).toEqual([false, false, false, true]);
    expect(step.mtpLayers).toBe(3);
    // Vision-language checkpoints are planned as their language model.
    expect((await resolveModel('Qwen/Qwen3-VL-32B-Thinking', OFFLINE)).languageModelOnly).toBe(true);
    expect((await resolveModel('Qwen/Qwen3-32B', OFFLINE)).languageModelOnly).toBeUndefined();
  });

  it('active parameters per token within 10% of the cards (DeepSeek 37B, gpt-oss 5.1B / 3.6B, Mixtral 12.9B / 39B, Qwen3 22B / 3.3B, Kimi 32B)', async () => {
    const card: Record<string, number> = {
      'deepseek-ai/DeepSeek-V3': 37, 'openai/gpt-oss-120b': 5.1, 'openai/gpt-oss-20b': 3.6, 'mistralai/Mixtral-8x7B-v0.1': 12.9,
      'mistralai/Mixtral-8x22B-v0.1': 39, 'Qwen/Qwen3-235B-A22B': 22, 'Qwen/Qwen3-30B-A3B': 3.3, 'moonshotai/Kimi-K2-Instruct': 32,
      'meta-llama/Llama-4-Scout-17B-16E-Instruct': 17, 'meta-llama/Llama-4-Maverick-17B-128E-Instruct': 17,
    };
    for (const [id, b] of Object.entries(card)) {
      const active = activeParams(await resolveModel(id, OFFLINE)) / 1e9;
      expect(Math.abs(active / b - 1), id).toBeLessThan(0.1);
    }
    // dense: everything but the input embedding (32.76B - 0.78B)
    expect(activeParams(await resolveModel('Qwen/Qwen3-32B', OFFLINE)) / 1e9).toBeCloseTo(31.98, 2);
  });

  it('returns copies, so callers cannot corrupt the registry', async () => {
    (await resolveModel('Qwen/Qwen3-8B', OFFLINE)).numLayers = 1;
    expect((await resolveModel('Qwen/Qwen3-8B', OFFLINE)).numLayers).toBe(36);
  });
});

/**
 * Reference checkpoints the project does not plan yet, each with its reason (none today: every text model and the
 * vision-language ones, as their language model, are bundled and priced). The test prints each one's reason, fails
 * on a listed checkpoint that is supported after all (so the list only shrinks), and fails on any other checkpoint
 * that does not resolve to a bundled entry agreeing with its config.json.
 */
const NOT_YET_SUPPORTED: Record<string, string> = {};

describe.skipIf(!existsSync(CONFIGS))('bundled entries agree with the reference checkpoints', () => {
  const files = existsSync(CONFIGS) ? readdirSync(CONFIGS).filter((f) => f.endsWith('_config.json') && !f.endsWith('_hf_quant_config.json')) : [];
  const strip = (m: ModelSpec) => {
    const { id: _i, source: _s, aliases: _a, publishedParamsB: _p, ...rest } = m;
    return rest;
  };
  const read = (file: string) => (existsSync(join(CONFIGS, file)) ? parseJsonText(readFileSync(join(CONFIGS, file), 'utf8'), file) : undefined);
  const idOf = (file: string) => file.replace(/_config\.json$/, '').replace('--', '/');
  /** Why a checkpoint is not planned as its config says, or undefined when it is. */
  const problem = async (file: string): Promise<string | undefined> => {
    const id = idOf(file);
    let parsed: ModelSpec;
    try {
      parsed = parseHfConfig(read(file), read(file.replace(/_config\.json$/, '_hf_quant_config.json')), id, 'test');
    } catch (e) {
      if (e instanceof UnsupportedError) return e.message;
      throw e;
    }
    // Parsed, but the engine cannot price a layer kind of it.
    const refused = modelRefusal(parsed);
    if (refused) return refused;
    let bundled: ModelSpec;
    try {
      bundled = await resolveModel(id.replace('Meta-Llama-3.1', 'Llama-3.1'), OFFLINE);
    } catch (e) {
      if (e instanceof InputError) return 'not bundled';
      throw e;
    }
    try {
      expect(strip(bundled)).toEqual(strip(parsed));
    } catch (e) {
      return `bundled entry disagrees with config.json: ${(e as Error).message.split('\n')[0]}`;
    }
    return undefined;
  };

  it('lists what is not supported yet, with the reason the planner gives', async () => {
    const listed = Object.entries(NOT_YET_SUPPORTED);
    const fileOf = new Map(files.map((f) => [idOf(f), f]));
    const given = await Promise.all(listed.map(async ([id]) => (fileOf.has(id) ? await problem(fileOf.get(id)!) : undefined)));
    if (listed.length) console.log(`not yet supported (${listed.length}):\n${listed.map(([id, why], i) => `  ${id}: ${why}\n    ${given[i] ?? '-'}`).join('\n')}`);
    const ids = new Set(files.map(idOf));
    expect(listed.map(([id]) => id).filter((id) => !ids.has(id)), 'listed but not in the reference configs').toEqual([]);
  });

  it.each(files)('%s', async (file) => {
    const why = await problem(file);
    if (idOf(file) in NOT_YET_SUPPORTED) expect(why, 'supported now: remove it from NOT_YET_SUPPORTED').toBeDefined();
    else expect(why).toBeUndefined();
  });

  it('every model family in the end-to-end measurements resolves by the spelling used there', async () => {
    const csv = readFileSync(join(REF, 'aic-silicon/e2e/dev.csv'), 'utf8').trim().split('\n');
    const col = csv[0]!.split(',').indexOf('model_path');
    const names = [...new Set(csv.slice(1).map((l) => l.split(',')[col]!))];
    for (const n of names) {
      expect((await resolveModel(n, OFFLINE)).source, n).toBe('bundled');
    }
  });
});

describe('parseHfConfig', () => {
  it('reads a Llama config', () => {
    const m = parseHfConfig(llamaConfig(), undefined, 'x/llama', 'test');
    expect(m).toMatchObject({ family: 'llama', numLayers: 32, headDim: 128, numKvHeads: 8, kvDtype: 'bfloat16' });
    expect(countParams(m) / 1e9).toBeCloseTo(8.03, 2);
  });
  it('Llama 4 with interleaved MoE layers (Maverick) reads the step and the dense width', () => {
    const c = {
      architectures: ['Llama4ForConditionalGeneration'],
      text_config: { ...llamaConfig(), num_hidden_layers: 48, num_local_experts: 128, num_experts_per_tok: 1, intermediate_size: 8192, intermediate_size_mlp: 16384, interleave_moe_layer_step: 2 },
    };
    const m = parseHfConfig(c, undefined, 'x/maverick', 'test');
    expect(m.moe).toMatchObject({ numExperts: 128, expertIntermediateSize: 8192, layerStep: 2 });
    expect(m.intermediateSize).toBe(16384);
  });
  it('Q/K norms over all heads (MiniMax-M2 per_layer) are read from the config, Qwen3\'s per-head ones from its architecture', () => {
    const c = { ...llamaConfig(), use_qk_norm: true, qk_norm_type: 'per_layer' };
    expect(parseHfConfig(c, undefined, 'x/mm', 'test').qkNorm).toBe('across_heads');
    expect(parseHfConfig({ ...c, qk_norm_type: 'per_head' }, undefined, 'x/mm', 'test').qkNorm).toBeUndefined();
    expect(parseHfConfig({ ...llamaConfig(), architectures: ['Qwen3ForCausalLM'] }, undefined, 'x/q3', 'test').qkNorm).toBe('per_head');
  });
  it('defaults kv heads to heads and head_dim to hidden/heads', () => {
    const c: Record<string, unknown> = llamaConfig();
    delete c.num_key_value_heads;
    const m = parseHfConfig(c, undefined, 'x/mha', 'test');
    expect(m.numKvHeads).toBe(32);
    expect(m.headDim).toBe(128);
  });
  it('names a missing field (exit 2)', () => {
    const c: Record<string, unknown> = llamaConfig();
    delete c.hidden_size;
    expect(() => parseHfConfig(c, undefined, 'x/broken', 'test')).toThrow('x/broken: config.json: missing field "hidden_size"');
    expect(() => parseHfConfig({ ...llamaConfig(), num_hidden_layers: 'many' }, undefined, 'x/b', 'test')).toThrow(InputError);
    expect(() => parseHfConfig([], undefined, 'x/b', 'test')).toThrow(InputError);
  });
  it('rejects an unknown architecture with exit 4 and the supported list', () => {
    let err: unknown;
    try {
      parseHfConfig({ ...llamaConfig(), architectures: ['MambaForCausalLM'] }, undefined, 'x/mamba', 'test');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UnsupportedError);
    expect((err as UnsupportedError).exitCode).toBe(4);
    expect((err as Error).message).toMatch(/architecture MambaForCausalLM is not supported; supported: LlamaForCausalLM, .*DeepseekV3ForCausalLM/);
  });
  it('plans a vision-language checkpoint as the language model in its text_config', () => {
    const vl = parseHfConfig({ architectures: ['Qwen3VLForConditionalGeneration'], text_config: { ...llamaConfig(), head_dim: 128 }, vision_config: { depth: 27 } }, undefined, 'x/vl', 'test');
    expect(vl).toMatchObject({ family: 'qwen3', architecture: 'Qwen3VLForConditionalGeneration', numLayers: 32, qkNorm: 'per_head', languageModelOnly: true });
    expect(parseHfConfig(llamaConfig(), undefined, 'x/llama', 'test').languageModelOnly).toBeUndefined();
  });
  it('Kimi K2.5: a DeepSeek-V3 text_config, INT4 experts with attention left out of the quantization', () => {
    const text = {
      ...llamaConfig(), architectures: ['DeepseekV3ForCausalLM'], n_routed_experts: 384, num_experts_per_tok: 8, moe_intermediate_size: 2048,
      n_shared_experts: 1, first_k_dense_replace: 1, q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64,
      v_head_dim: 128, num_nextn_predict_layers: 0,
      quantization_config: {
        quant_method: 'compressed-tensors', config_groups: { g: { weights: { num_bits: 4, type: 'int' } } }, ignore: ['lm_head', 're:.*self_attn.*'],
      },
    };
    const k = parseHfConfig({ architectures: ['KimiK25ForConditionalGeneration'], text_config: text }, undefined, 'x/kimi', 'test');
    expect(k).toMatchObject({ family: 'deepseek_v3', languageModelOnly: true, kvDtype: 'bfloat16' });
    expect(k.quant).toEqual({ scheme: 'int4_wo', gemmDtype: 'bfloat16', moeDtype: 'int4_wo' });
    expect(k.mtpLayers).toBeUndefined();
    // A ModelOpt quantization_config inside config.json, without hf_quant_config.json: ignore = exclude_modules.
    const { quantization_config: _q, ...plain } = text;
    const modelopt = {
      quant_method: 'modelopt', quant_algo: 'NVFP4', ignore: ['language_model.model.layers.0.self_attn*'], kv_cache_scheme: { num_bits: 8, type: 'float' },
    };
    const fp4 = parseHfConfig({ architectures: ['KimiK25ForConditionalGeneration'], text_config: plain, quantization_config: modelopt }, undefined, 'x/kimi-fp4', 'test');
    expect(fp4.quant).toEqual({ scheme: 'nvfp4', gemmDtype: 'bfloat16', moeDtype: 'nvfp4' });
    expect(fp4.kvDtype).toBe('fp8');
  });
  it('MiMo: a window the config does not use is ignored; the MTP layer is recorded', () => {
    const m = parseHfConfig({ ...llamaConfig(), architectures: ['MiMoForCausalLM'], sliding_window: 32768, use_sliding_window: false, num_nextn_predict_layers: 1 }, undefined, 'x/mimo', 'test');
    expect(m).toMatchObject({ family: 'mimo', mtpLayers: 1 });
    expect(m.slidingWindow).toBeUndefined();
  });
  it('Step-3.7-Flash: sliding layers from layer_types, a shared expert of share_expert_dim, dense first layers, MTP layers', () => {
    const layer_types = Array.from({ length: 8 }, (_, i) => (i % 4 === 0 ? 'full_attention' : 'sliding_attention'));
    const m = parseHfConfig({
      ...llamaConfig(), architectures: ['Step3p7FlashForCausalLM'], num_hidden_layers: 8, sliding_window: 512, layer_types,
      num_experts: 288, num_experts_per_tok: 8, moe_intermediate_size: 1280, n_shared_experts: 1, share_expert_dim: 1024,
      first_k_dense_replace: 3, num_nextn_predict_layers: 3,
    }, undefined, 'x/step', 'test');
    expect(m.moe).toEqual({ numExperts: 288, topK: 8, expertIntermediateSize: 1280, sharedExperts: 1, sharedIntermediateSize: 1024, firstDenseLayers: 3 });
    expect(m.slidingWindow).toEqual({ window: 512, layers: layer_types.map((t) => t === 'sliding_attention') });
    expect(m.mtpLayers).toBe(3);
  });
  it('computes DeciLM FFN widths as the reference implementation does', () => {
    expect(deciFfnSize(5.25, 8192)).toBe(28672);
    expect(deciFfnSize(2.625, 8192)).toBe(14336);
    expect(deciFfnSize(1.0, 8192)).toBe(5632);
    expect(deciFfnSize(0.5, 8192)).toBe(2816);
  });
});

describe('quantization read from the checkpoint', () => {
  const q = (quantization_config: unknown, hfQuant?: unknown) => parseHfConfig({ ...llamaConfig(), quantization_config }, hfQuant, 'x/q', 'test');
  it('fp8 with weight blocks is fp8_block; without, per-tensor fp8', () => {
    expect(q({ quant_method: 'fp8', weight_block_size: [128, 128] }).quant.gemmDtype).toBe('fp8_block');
    expect(q({ quant_method: 'fp8', activation_scheme: 'dynamic' }).quant.gemmDtype).toBe('fp8');
  });
  it('ModelOpt hf_quant_config.json: FP8 / NVFP4 and the KV-cache format', () => {
    const fp8 = q(undefined, { quantization: { quant_algo: 'FP8', kv_cache_quant_algo: 'FP8' } });
    expect(fp8.quant.gemmDtype).toBe('fp8');
    expect(fp8.kvDtype).toBe('fp8');
    const fp4 = q(undefined, { quantization: { quant_algo: 'NVFP4', kv_cache_quant_algo: null } });
    expect(fp4.quant).toEqual({ scheme: 'nvfp4', gemmDtype: 'nvfp4', moeDtype: 'nvfp4' });
    expect(fp4.kvDtype).toBe('bfloat16');
  });
  it('compressed-tensors fp8 weights with an fp8 KV scheme', () => {
    const m = q({
      quant_method: 'compressed-tensors',
      config_groups: { g: { weights: { num_bits: 8, type: 'float' }, input_activations: { num_bits: 8, type: 'float' } } },
      kv_cache_scheme: { num_bits: 8, type: 'float' },
    });
    expect(m.quant.gemmDtype).toBe('fp8');
    expect(m.kvDtype).toBe('fp8');
  });
  it('an unknown scheme is unsupported (exit 4)', () => {
    expect(() => q({ quant_method: 'bitsandbytes' })).toThrow(UnsupportedError);
  });
  it('flags override the checkpoint', () => {
    const m = q({ quant_method: 'fp8', weight_block_size: [128, 128] });
    expect(effectiveDtypes(m)).toEqual({ gemmDtype: 'fp8_block', moeDtype: 'fp8_block', kvDtype: 'bfloat16' });
    expect(effectiveDtypes(m, { weightDtype: 'nvfp4', kvDtype: 'fp8' })).toEqual({ gemmDtype: 'nvfp4', moeDtype: 'nvfp4', kvDtype: 'fp8' });
  });
});

describe('hybrid and sparse architectures: the layer mix and its dimensions', () => {
  const qwen35 = (layers = 8) => ({
    architectures: ['Qwen3_5MoeForConditionalGeneration'],
    text_config: {
      ...llamaConfig(), num_hidden_layers: layers, head_dim: 256, num_key_value_heads: 2, intermediate_size: undefined,
      layer_types: Array.from({ length: layers }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention')),
      linear_num_key_heads: 16, linear_num_value_heads: 64, linear_key_head_dim: 128, linear_value_head_dim: 128, linear_conv_kernel_dim: 4,
      mamba_ssm_dtype: 'float32', num_experts: 512, num_experts_per_tok: 10, moe_intermediate_size: 1024, shared_expert_intermediate_size: 1024,
      mtp_num_hidden_layers: 1,
    },
  });
  it('Qwen3.5: gated-delta-net layers from layer_types, with their heads, dims and conv kernel', () => {
    const m = parseHfConfig(qwen35(), undefined, 'x/q35', 'test');
    expect(m.layerMix).toEqual([{ kind: 'gdn', count: 3 }, { kind: 'full', count: 1 }, { kind: 'gdn', count: 3 }, { kind: 'full', count: 1 }]);
    expect(m.gdn).toEqual({ numKeyHeads: 16, numValueHeads: 64, keyHeadDim: 128, valueHeadDim: 128, convKernel: 4, stateBytes: 4 });
    expect(m.moe).toMatchObject({ numExperts: 512, topK: 10, sharedExperts: 1, sharedIntermediateSize: 1024 });
    expect(m).toMatchObject({ family: 'qwen3_5_moe', languageModelOnly: true, mtpLayers: 1, intermediateSize: 0 });
    expect(parseHfConfig({ ...qwen35(), text_config: { ...qwen35().text_config, attn_output_gate: true } }, undefined, 'x/q35', 'test').attentionOutputGate).toBe(true);
    expect(layerMixSummary(m)).toBe('6 GDN + 2 full');
    expect(modelRefusal(m)).toBeUndefined();
    // A hand-written config that names the kind without its dimensions cannot be priced (exit 4).
    expect(modelRefusal({ ...m, gdn: undefined })).toBe('x/q35: 6 gated-delta-net layers without gated-delta-net dimensions (linear_num_key_heads, linear_key_head_dim, ...): cannot be priced');
  });
  it('Nemotron-H: Mamba-2, attention and FFN blocks from hybrid_override_pattern', () => {
    const m = parseHfConfig({
      ...llamaConfig(), architectures: ['NemotronHForCausalLM'], num_hidden_layers: 6, hybrid_override_pattern: 'MEM*EE', head_dim: 128,
      mamba_num_heads: 128, mamba_head_dim: 64, ssm_state_size: 128, n_groups: 8, conv_kernel: 4, chunk_size: 128, mamba_ssm_cache_dtype: 'float32',
      mlp_hidden_act: 'relu2', n_routed_experts: 512, num_experts_per_tok: 22, moe_intermediate_size: 2688, n_shared_experts: 1,
      moe_shared_expert_intermediate_size: 5376, moe_latent_size: 1024,
    }, undefined, 'x/nh', 'test');
    expect(m.layerMix).toEqual([
      { kind: 'mamba2', count: 1 }, { kind: 'none', count: 1 }, { kind: 'mamba2', count: 1 }, { kind: 'full', count: 1 }, { kind: 'none', count: 2 },
    ]);
    expect(m.mamba2).toEqual({ numHeads: 128, headDim: 64, stateSize: 128, groups: 8, convKernel: 4, chunkSize: 128, stateBytes: 4 });
    expect(m.layerOverrides).toEqual([
      { layer: 0, ffn: 'none' }, { layer: 1, attention: 'none' }, { layer: 2, ffn: 'none' }, { layer: 3, ffn: 'none' }, { layer: 4, attention: 'none' }, { layer: 5, attention: 'none' },
    ]);
    expect(m.moe).toMatchObject({ numExperts: 512, topK: 22, latentSize: 1024, sharedIntermediateSize: 5376 });
    expect(m.ungatedMlp).toBe(true);
    expect(layerMixSummary(m)).toBe('3 FFN-only + 2 Mamba-2 + 1 full');
  });

  it('Gemma-4 and MiMo-V2-Flash: attention shapes per layer kind; DeepSeek-V3.2: MLA with an indexer on every layer', () => {
    const layer_types = Array.from({ length: 6 }, (_, i) => (i % 6 === 5 ? 'full_attention' : 'sliding_attention'));
    const gemma = parseHfConfig({
      architectures: ['Gemma4ForConditionalGeneration'],
      text_config: { ...llamaConfig(), num_hidden_layers: 6, head_dim: 256, global_head_dim: 512, num_global_key_value_heads: 2, attention_k_eq_v: true, sliding_window: 1024, layer_types },
    }, undefined, 'x/g4', 'test');
    expect(gemma.slidingWindow).toEqual({ window: 1024, layers: [true, true, true, true, true, false] });
    expect(gemma.attentionShapes).toEqual({ full: { numHeads: 32, numKvHeads: 2, headDim: 512, kEqV: true } });
    expect(gemma.layerMix).toBeUndefined();
    expect(modelRefusal(gemma)).toBeUndefined();
    const mimo = parseHfConfig({
      ...llamaConfig(), architectures: ['MiMoV2FlashForCausalLM'], num_hidden_layers: 4, num_attention_heads: 64, num_key_value_heads: 4, head_dim: 192,
      v_head_dim: 128, sliding_window: 128, swa_num_key_value_heads: 8, swa_v_head_dim: 128, hybrid_layer_pattern: [0, 1, 1, 1],
      moe_layer_freq: [0, 1, 1, 1], n_routed_experts: 256, num_experts_per_tok: 8, moe_intermediate_size: 2048, n_shared_experts: null,
    }, undefined, 'x/mimo2', 'test');
    expect(mimo.attentionShapes).toEqual({
      full: { numHeads: 64, numKvHeads: 4, headDim: 192, vHeadDim: 128 }, sliding: { numHeads: 64, numKvHeads: 8, headDim: 192, vHeadDim: 128 },
    });
    expect(mimo.moe).toMatchObject({ firstDenseLayers: 1, sharedExperts: 0 });
    expect(layerMixSummary(mimo)).toBe('3 sliding(128)[hd 192/128, kv 8] + 1 full[hd 192/128, kv 4]');
    const dsa = parseHfConfig({
      ...llamaConfig(), architectures: ['DeepseekV32ForCausalLM'], num_hidden_layers: 4, n_routed_experts: 16, num_experts_per_tok: 2,
      moe_intermediate_size: 256, n_shared_experts: 1, first_k_dense_replace: 1, q_lora_rank: 256, kv_lora_rank: 512, qk_nope_head_dim: 128,
      qk_rope_head_dim: 64, v_head_dim: 128, index_topk: 2048, index_n_heads: 64, index_head_dim: 128,
    }, undefined, 'x/v32', 'test');
    expect(dsa).toMatchObject({ layerMix: [{ kind: 'dsa', count: 4 }], indexer: { topK: 2048, numHeads: 64, headDim: 128 }, headDim: 192 });
    expect(modelRefusal(dsa)).toBeUndefined();
    expect(modelRefusal({ ...dsa, indexer: undefined })).toMatch(/^x\/v32: 4 DeepSeek-sparse-attention \(DSA\) layers without MLA ranks and an indexer .*: cannot be priced$/);
  });

  // What the reference checkpoints parse to: the layer mix, a dimension of each new kind, and the total size.
  const expected: Record<string, { mix: string; paramsB?: number; check?: (m: ModelSpec) => void }> = {
    'Qwen/Qwen3.5-397B-A17B': { mix: '45 GDN + 15 full', paramsB: 397, check: (m) => expect(m.gdn).toMatchObject({ numValueHeads: 64, keyHeadDim: 128 }) },
    'Qwen/Qwen3.5-122B-A10B': { mix: '36 GDN + 12 full', paramsB: 122 },
    'Qwen/Qwen3.5-27B': { mix: '48 GDN + 16 full' },
    'nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16': { mix: '23 Mamba-2 + 23 FFN-only + 6 full', paramsB: 31.6 },
    'nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8': { mix: '40 Mamba-2 + 40 FFN-only + 8 full', check: (m) => expect(m.mamba2).toMatchObject({ numHeads: 128, stateSize: 128, groups: 8 }) },
    'nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16': { mix: '48 Mamba-2 + 48 FFN-only + 12 full', paramsB: 550 },
    'nvidia/Nemotron-H-56B-Base-8K': { mix: '54 Mamba-2 + 54 FFN-only + 10 full', paramsB: 56 },
    'deepseek-ai/DeepSeek-V3.2': { mix: '61 DSA', paramsB: 671, check: (m) => expect(m.indexer).toEqual({ topK: 2048, numHeads: 64, headDim: 128 }) },
    'zai-org/GLM-5': { mix: '78 DSA', paramsB: 744, check: (m) => expect(m.indexer).toEqual({ topK: 2048, numHeads: 32, headDim: 128 }) },
    'MiniMaxAI/MiniMax-M3': { mix: '57 sparse + 3 full', check: (m) => expect(m.indexer).toMatchObject({ topK: 16, blockSize: 128 }) },
    'deepseek-ai/DeepSeek-V4-Flash': { mix: '21 compressed(1/4) + 20 compressed(1/128) + 2 window(128)', paramsB: 284, check: (m) => expect(m.compressed).toMatchObject({ hcMult: 4 }) },
    'deepseek-ai/DeepSeek-V4-Pro': { mix: '31 compressed(1/128) + 30 compressed(1/4)', paramsB: 1600 },
    'moonshotai/Kimi-K3': { mix: '69 KDA + 24 full', check: (m) => expect(m.kda).toMatchObject({ numHeads: 96, headDim: 128, convKernel: 4 }) },
    'google/gemma-4-26B-A4B': { mix: '25 sliding(1024) + 5 full[hd 512, kv 2, K=V]' },
    'XiaomiMiMo/MiMo-V2-Flash': { mix: '39 sliding(128)[hd 192/128, kv 8] + 9 full[hd 192/128, kv 4]', paramsB: 309 },
  };
  it.skipIf(!existsSync(CONFIGS)).each(Object.keys(expected))('%s', (id) => {
    const file = join(CONFIGS, `${id.replace('/', '--')}_config.json`);
    const m = parseHfConfig(parseJsonText(readFileSync(file, 'utf8'), file), undefined, id, 'test');
    const e = expected[id]!;
    expect(layerMixSummary(m)).toBe(e.mix);
    if (e.paramsB) expect(Math.abs(countParams(m) / 1e9 / e.paramsB - 1)).toBeLessThan(0.03);
    e.check?.(m);
    expect(modelRefusal(m)).toBeUndefined();
  });
});
