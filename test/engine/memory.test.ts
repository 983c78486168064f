import { describe, expect, it } from 'vitest';
import { kvBytesPerToken, memoryFor, weightBytesPerGpu, isRefusal } from '../../src/engine/index.js';
import { testCtx } from './helpers.js';

const GB = 1e9;
const L = (tp: number, extra: Partial<{ pp: number; dp: number; moeTp: number; moeEp: number }> = {}) => ({ tp, pp: 1, dp: 1, moeTp: tp, moeEp: 1, ...extra });

describe('weights per GPU', () => {
  it('Llama-3.1-8B bf16 on one GPU is its published 8.03 B parameters x 2 bytes', () => {
    const w = weightBytesPerGpu(testCtx('meta-llama/Llama-3.1-8B'), L(1));
    expect(w / GB).toBeGreaterThan(8.03 * 2 * 0.98);
    expect(w / GB).toBeLessThan(8.03 * 2 * 1.02);
  });
  it('Llama-3.1-70B fp8 splits over tp (embeddings stay bf16)', () => {
    const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8' });
    const w1 = weightBytesPerGpu(ctx, L(1));
    const w4 = weightBytesPerGpu(ctx, L(4));
    expect(w1 / GB).toBeGreaterThan(70.6 * 0.98);
    expect(w1 / GB).toBeLessThan(70.6 * 1.04);
    expect(Math.abs(w4 / (w1 / 4) - 1)).toBeLessThan(0.001); // only the norms are replicated
  });
  it('DeepSeek-V3 fp8 experts spread over expert parallelism', () => {
    const ctx = testCtx('deepseek-ai/DeepSeek-V3');
    const total = weightBytesPerGpu(ctx, L(1));
    expect(total / GB).toBeGreaterThan(671 * 0.97);
    expect(total / GB).toBeLessThan(671 * 1.05);
    const ep8 = weightBytesPerGpu(ctx, { tp: 8, pp: 1, dp: 1, moeTp: 1, moeEp: 8 });
    expect(ep8 / GB).toBeGreaterThan(75);
    expect(ep8 / GB).toBeLessThan(95);
  });
});

describe('KV cache per token', () => {
  it('GQA: layers x 2 x kv heads / tp x head dim x bytes', () => {
    const ctx = testCtx('meta-llama/Llama-3.1-8B');
    expect(kvBytesPerToken(ctx, L(1)).full).toBe(32 * 2 * 8 * 128 * 2);
    expect(kvBytesPerToken(ctx, L(2)).full).toBe(32 * 2 * 4 * 128 * 2);
    // More GPUs than KV heads: heads are replicated, never below one per GPU.
    expect(kvBytesPerToken(ctx, L(16)).full).toBe(32 * 2 * 1 * 128 * 2);
  });
  it('MLA: one latent of kv_lora + rope per layer, not split by tp', () => {
    const ctx = testCtx('deepseek-ai/DeepSeek-V3', { kv: 'fp8' });
    const kv1 = kvBytesPerToken(ctx, L(1)).full;
    expect(kv1).toBe(61 * (512 + 64));
    expect(kvBytesPerToken(ctx, { tp: 8, pp: 1, dp: 1, moeTp: 1, moeEp: 8 }).full).toBe(kv1);
  });
  it('gpt-oss sliding-window layers are counted apart and capped at the window', () => {
    const ctx = testCtx('openai/gpt-oss-120b');
    const kv = kvBytesPerToken(ctx, L(1));
    expect(kv.sliding).toBeGreaterThan(0);
    expect(kv.full).toBeGreaterThan(0);
    expect(kv.window).toBe(128);
  });
});

describe('memory picture', () => {
  it('fits more sequences on more GPUs and shorter sequences', () => {
    const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8' });
    const m2 = memoryFor(ctx, L(2), 8192);
    const m4 = memoryFor(ctx, L(4), 8192);
    if (isRefusal(m2) || isRefusal(m4)) throw new Error('unexpected refusal');
    expect(m4.maxSequences).toBeGreaterThan(2 * m2.maxSequences);
    const short = memoryFor(testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8', workload: { isl: 500, osl: 100 } }), L(2), 8192);
    if (isRefusal(short)) throw new Error('unexpected refusal');
    expect(short.maxSequences).toBeGreaterThan(m2.maxSequences);
    expect(m2.weightsGiB + m2.activationGiB + m2.reserveGiB + m2.kvCacheGiB).toBeLessThanOrEqual(m2.capacityGiB);
  });
  it('sliding-window layers leave room for more sequences on vLLM, not in TRT-LLM\'s KV budget', () => {
    const seqs = (backend: 'vllm' | 'trtllm', version: string, windowed: boolean) => {
      const ctx = testCtx('openai/gpt-oss-120b', { backend, version, workload: { isl: 8000, osl: 1000 } });
      const c = windowed ? ctx : { ...ctx, model: { ...ctx.model, slidingWindow: undefined } };
      const m = memoryFor(c, L(1), 8192);
      if (isRefusal(m)) throw new Error('unexpected refusal');
      return m.maxSequences;
    };
    expect(seqs('vllm', '0.12.0', true)).toBeGreaterThan(1.5 * seqs('vllm', '0.12.0', false));
    expect(seqs('trtllm', '1.2.0rc5', true)).toBe(seqs('trtllm', '1.2.0rc5', false));
  });
  it('refuses weights that do not fit, with the reason', () => {
    const r = memoryFor(testCtx('meta-llama/Llama-3.1-405B', { system: 'h100_sxm' }), L(1), 8192);
    expect(isRefusal(r)).toBe(true);
    if (!isRefusal(r)) return;
    expect(r.constraint).toBe('memory');
    expect(r.reason).toMatch(/weights need \d+\.\d GiB per GPU/);
  });
});
