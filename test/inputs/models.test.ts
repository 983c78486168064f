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
      'Qwen/Qwen3-30B-A3B-FP8', 'Qwen/Qwen3-32B-FP8-Static-PerTensor',
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
    expect(ds.qkNorm).toBeUndefined();
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
 * Reference checkpoints the project does not plan yet, each naming the issue that removes it. The test prints
 * the list, fails on a listed checkpoint that is supported after all (so the list only shrinks), and fails on
 * any other checkpoint that does not resolve to a bundled entry agreeing with its config.json.
 */
const NOT_YET_SUPPORTED: Record<string, string> = Object.fromEntries(
  [
    'MiniMaxAI/MiniMax-M2.7', 'MiniMaxAI/MiniMax-M3', 'Qwen/Qwen3-Coder-480B-A35B-Instruct',
    'Qwen/Qwen3-VL-235B-A22B-Instruct', 'Qwen/Qwen3-VL-2B-Instruct', 'Qwen/Qwen3-VL-30B-A3B-Instruct',
    'Qwen/Qwen3-VL-32B-Instruct', 'Qwen/Qwen3-VL-32B-Thinking', 'Qwen/Qwen3-VL-4B-Instruct', 'Qwen/Qwen3-VL-8B-Instruct',
    'Qwen/Qwen3.5-122B-A10B', 'Qwen/Qwen3.5-27B', 'Qwen/Qwen3.5-35B-A3B', 'Qwen/Qwen3.5-397B-A17B',
    'XiaomiMiMo/MiMo-7B-Base', 'XiaomiMiMo/MiMo-V2-Flash',
    'deepseek-ai/DeepSeek-V3.2', 'deepseek-ai/DeepSeek-V4-Flash', 'deepseek-ai/DeepSeek-V4-Pro',
    'google/gemma-4-26B-A4B', 'meta-llama/Llama-4-Maverick-17B-128E-Instruct',
    'moonshotai/Kimi-K2.5', 'moonshotai/Kimi-K3',
    'nvidia/DeepSeek-V3.1-NVFP4', 'nvidia/DeepSeek-V3.2-NVFP4', 'nvidia/DeepSeek-V4-Flash-NVFP4', 'nvidia/DeepSeek-V4-Pro-NVFP4',
    'nvidia/GLM-5-NVFP4', 'nvidia/GLM-5.1-NVFP4', 'nvidia/GLM-5.2-NVFP4',
    'nvidia/Gemma-4-26B-A4B-NVFP4', 'nvidia/Gemma-4-31B-IT-NVFP4',
    'nvidia/Kimi-K2.5-NVFP4', 'nvidia/Kimi-K2.6-NVFP4', 'nvidia/Kimi-K2.7-Code-NVFP4',
    'nvidia/MiniMax-M2.5-NVFP4', 'nvidia/MiniMax-M2.7-NVFP4', 'nvidia/MiniMax-M3-NVFP4',
    'nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16', 'nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4',
    'nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8', 'nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4',
    'nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16', 'nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8',
    'nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4', 'nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4',
    'nvidia/Nemotron-H-56B-Base-8K',
    'nvidia/Qwen3.5-122B-A10B-NVFP4', 'nvidia/Qwen3.5-397B-A17B-NVFP4', 'nvidia/Qwen3.6-27B-NVFP4', 'nvidia/Qwen3.6-35B-A3B-NVFP4',
    'sgl-project/DeepSeek-V4-Flash-FP8', 'sgl-project/DeepSeek-V4-Pro-FP8',
    'stepfun-ai/Step-3.7-Flash-FP8', 'stepfun-ai/Step-3.7-Flash',
    'zai-org/GLM-5-FP8', 'zai-org/GLM-5.1-FP8', 'zai-org/GLM-5.1', 'zai-org/GLM-5.2-FP8', 'zai-org/GLM-5.2', 'zai-org/GLM-5',
  ].map((id) => [id, 'issue 34 (model families)']),
);

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

  it('lists what is not supported yet', () => {
    const listed = Object.entries(NOT_YET_SUPPORTED);
    if (listed.length) console.log(`not yet supported (${listed.length}):\n${listed.map(([id, why]) => `  ${id}: ${why}`).join('\n')}`);
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
    // Not yet supported (issue 34, model families): Qwen3.5 (hybrid linear attention), GLM-5 (sparse attention).
    const outside = /Qwen3\.5|GLM-5/;
    for (const n of names.filter((x) => !outside.test(x))) {
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
