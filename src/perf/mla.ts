// DeepSeek-style MLA decode modules of engines that measured only the attention kernel of one (TRT-LLM), or a
// module for some KV-cache formats only (GB200 TRT-LLM: bf16, not FP8): the module is that kernel plus the
// projections around it, each a GEMM of the engine's own. Checked where TRT-LLM measured both (GB200, 1.3.0rc10):
// the composition matches its measured decode module at median 1.00x (p10 0.75x, p90 1.20x over 4,343 shapes),
// while vLLM's module, which priced TRT-LLM before, runs about 0.04-0.1 ms per layer slower at decode batch sizes.
import { DEEPSEEK_MLA, type Row } from './tables.js';

/**
 * Engines whose decode modules are composed where they measured none, or none with that KV-cache format: TRT-LLM,
 * checked against its own measured module above. vLLM's decode kernel tables are host-bound (H200 0.14.0: 0.12-0.23 ms per call at any batch up to
 * 256) and its measured module is too (see hostBoundDecodeModules in calibration.ts: vLLM's tables, and SGLang's,
 * which measured no module and borrow vLLM's, take TRT-LLM's decode module instead).
 */
export const COMPOSED_MLA_ENGINES = ['trtllm'];

/** GEMM formats the measured MLA modules come in (their `gemm_type`). */
export const MLA_MODULE_DTYPES = ['bfloat16', 'fp8_block', 'nvfp4'] as const;

/** The GEMMs of one decode step of an MLA module beside its attention kernel, as (n, k); m is the batch. */
export function mlaDecodeGemms(heads: number): [n: number, k: number][] {
  const d = DEEPSEEK_MLA;
  return [
    [d.q_lora_rank + d.kv_lora_rank + d.qk_rope_head_dim, d.hidden], // fused q_a / kv_a down-projection (every GPU)
    [heads * (d.qk_nope_head_dim + d.qk_rope_head_dim), d.q_lora_rank], // q_b up-projection
    [heads * d.kv_lora_rank, d.qk_nope_head_dim], // absorbed k_b: queries into the latent space (a per-head BMM)
    [heads * d.v_head_dim, d.kv_lora_rank], // absorbed v_b: the latent output back to each head (a per-head BMM)
    [d.hidden, heads * d.v_head_dim], // o_proj
  ];
}

/**
 * Decode module rows from decode-kernel rows (phase generation, batch, seq, heads, kv_dtype, latency_ms): one
 * per GEMM format `gemmMs` prices (undefined: a format the engine's GEMM model does not hold).
 */
export function composeDecodeModules(kernelRows: Row[], gemmMs: (dtype: string, m: number, n: number, k: number) => number | undefined): Row[] {
  const out: Row[] = [];
  for (const r of kernelRows) {
    if (r.phase !== 'generation') continue;
    const b = r.batch as number;
    for (const dtype of MLA_MODULE_DTYPES) {
      const gemms = mlaDecodeGemms(r.heads as number).map(([n, k]) => gemmMs(dtype, b, n, k));
      if (gemms.some((g) => g === undefined)) continue;
      out.push({ ...r, dtype, latency_ms: gemms.reduce((a: number, g) => a + g!, r.latency_ms as number) });
    }
  }
  return out;
}
