// Weight and KV-cache formats: read from the checkpoint (never guessed from the GPU); flags override them.
import { InputError, UnsupportedError } from '../util/errors.js';
import { isObj, type JsonObject as Json } from '../util/json.js';
import type { Dtype, ModelSpec, QuantSpec } from './types.js';

export interface DtypeOverrides {
  weightDtype?: Dtype;
  kvDtype?: Dtype;
}

export interface EffectiveDtypes {
  gemmDtype: Dtype;
  moeDtype: Dtype;
  kvDtype: Dtype;
}

/** The formats a run uses: the checkpoint's own, unless --weight-dtype / --kv-cache-dtype say otherwise. */
export function effectiveDtypes(model: ModelSpec, overrides: DtypeOverrides = {}): EffectiveDtypes {
  return {
    gemmDtype: overrides.weightDtype ?? model.quant.gemmDtype,
    moeDtype: overrides.weightDtype ?? model.quant.moeDtype,
    kvDtype: overrides.kvDtype ?? model.kvDtype,
  };
}


/** What a checkpoint says about its formats. */
export interface CheckpointQuant {
  quant: QuantSpec;
  kvDtype: Dtype;
}

/** Map a ModelOpt `quant_algo` (hf_quant_config.json or quantization_config) to our dtype. */
function modeloptAlgo(algo: string): Dtype {
  const a = algo.toUpperCase();
  if (a === 'FP8' || a === 'FP8_PER_CHANNEL_PER_TOKEN') return 'fp8';
  if (a === 'FP8_BLOCK_SCALES') return 'fp8_block';
  if (a === 'NVFP4') return 'nvfp4';
  if (a === 'W4A16_AWQ' || a === 'W4A8_AWQ' || a === 'INT4_AWQ') return 'int4_wo';
  if (a === 'W8A16' || a === 'INT8_WEIGHT_ONLY') return 'int8_wo';
  if (a === 'MXFP4' || a === 'W4A16_MXFP4') return 'mxfp4';
  throw new UnsupportedError(`quantization "${algo}" is not supported; supported: FP8, FP8_BLOCK_SCALES, NVFP4, W4A16_AWQ, W8A16, MXFP4`);
}

function kvAlgo(algo: unknown): Dtype | undefined {
  if (typeof algo !== 'string' || algo === '') return undefined;
  const a = algo.toUpperCase();
  if (a === 'FP8') return 'fp8';
  if (a === 'NVFP4') return 'nvfp4';
  if (a === 'INT8') return 'int8_wo';
  return undefined;
}

/** Modules a checkpoint leaves unquantized: attention excluded means the attention GEMMs stay in 16 bits. */
function excludesAttention(modules: unknown): boolean {
  return Array.isArray(modules) && modules.some((m) => typeof m === 'string' && /self_attn|attention/.test(m));
}

/**
 * Read the formats from `config.json` (quantization_config) and `hf_quant_config.json` (ModelOpt).
 * `isMoe` decides whether a scheme that leaves attention unquantized still applies to the dense GEMMs.
 */
export function checkpointQuant(config: Json, hfQuant: Json | undefined, isMoe: boolean): CheckpointQuant {
  const torchDtype = config.torch_dtype ?? config.dtype;
  const base: Dtype = torchDtype === 'float16' ? 'float16' : 'bfloat16';
  const none: CheckpointQuant = { quant: { scheme: 'none', gemmDtype: base, moeDtype: base }, kvDtype: base };

  // ModelOpt checkpoints (NVIDIA's FP8 / NVFP4 releases) describe themselves in hf_quant_config.json.
  const mo = isObj(hfQuant) && isObj(hfQuant.quantization) ? hfQuant.quantization : undefined;
  if (mo && typeof mo.quant_algo === 'string') {
    const d = modeloptAlgo(mo.quant_algo);
    const attnExcluded = excludesAttention(mo.exclude_modules);
    return {
      quant: { scheme: d, gemmDtype: isMoe && attnExcluded ? base : d, moeDtype: d },
      kvDtype: kvAlgo(mo.kv_cache_quant_algo) ?? base,
    };
  }

  const qc = config.quantization_config;
  if (qc === undefined || qc === null) return none;
  if (!isObj(qc)) throw new InputError('config.json: quantization_config must be an object');
  const method = typeof qc.quant_method === 'string' ? qc.quant_method.toLowerCase() : undefined;

  if (method === 'fp8') {
    const d: Dtype = Array.isArray(qc.weight_block_size) ? 'fp8_block' : 'fp8';
    return { quant: { scheme: d, gemmDtype: d, moeDtype: d }, kvDtype: base };
  }
  if (method === 'mxfp4') {
    // gpt-oss: routed experts in MXFP4, attention and router left in bf16.
    const attnExcluded = excludesAttention(qc.modules_to_not_convert);
    return { quant: { scheme: 'mxfp4', gemmDtype: attnExcluded || isMoe ? base : 'mxfp4', moeDtype: 'mxfp4' }, kvDtype: base };
  }
  if (method === 'modelopt' || (method === undefined && typeof qc.quant_algo === 'string')) {
    const d = modeloptAlgo(String(qc.quant_algo ?? ''));
    const kv = kvAlgo(qc.kv_cache_quant_algo) ?? kvAlgo(qc.kv_cache_scheme);
    return { quant: { scheme: d, gemmDtype: d, moeDtype: d }, kvDtype: kv ?? base };
  }
  if (method === 'compressed-tensors') return compressedTensors(qc, base);
  if (method === 'awq' || method === 'gptq') {
    const bits = Number(qc.bits ?? qc.w_bit ?? 4);
    const d: Dtype = bits === 8 ? 'int8_wo' : 'int4_wo';
    return { quant: { scheme: method, gemmDtype: d, moeDtype: d }, kvDtype: base };
  }
  throw new UnsupportedError(
    `quantization_config.quant_method "${String(qc.quant_method)}" is not supported; supported: fp8, mxfp4, modelopt, compressed-tensors, awq, gptq`,
  );
}

function compressedTensors(qc: Json, base: Dtype): CheckpointQuant {
  const groups = isObj(qc.config_groups) ? Object.values(qc.config_groups).filter(isObj) : [];
  const weights = groups.map((g) => g.weights).find(isObj);
  let d: Dtype = base;
  if (weights) {
    const bits = Number(weights.num_bits);
    const type = String(weights.type ?? 'int');
    if (bits === 8 && type === 'float') d = Array.isArray(weights.block_structure) ? 'fp8_block' : 'fp8';
    else if (bits === 4 && type === 'float') d = 'nvfp4';
    else if (bits === 8) d = 'int8_wo'; // int8 weights; w8a8 kernels are not modelled separately
    else if (bits === 4) d = 'int4_wo';
  } else if (typeof qc.quant_algo === 'string') {
    d = modeloptAlgo(qc.quant_algo);
  }
  const kvScheme = qc.kv_cache_scheme;
  const kv = isObj(kvScheme) ? (Number(kvScheme.num_bits) === 8 && kvScheme.type === 'float' ? 'fp8' : undefined) : kvAlgo(kvScheme);
  return { quant: { scheme: d === base ? 'none' : d, gemmDtype: d, moeDtype: d }, kvDtype: kv ?? base };
}
