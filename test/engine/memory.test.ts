import { describe, expect, it } from 'vitest';
import { estimateAgg, estimateDisagg, kvBytesPerToken, memoryFor, modelRefusal, weightBytesPerGpu, isRefusal } from '../../src/engine/index.js';
import { testCtx } from './helpers.js';
import { gdnStateBytes, kdaStateBytes, mamba2StateBytes } from '../../src/engine/memory.js';
import { findBundled } from '../../src/inputs/registry.js';
import type { ModelSpec } from '../../src/inputs/types.js';
import { UnsupportedError } from '../../src/util/errors.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseHfConfig, parseJsonText } from '../../src/inputs/models.js';
import { referencePath } from '../../src/util/paths.js';

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

/** A Qwen3.5-like hybrid: three gated-delta-net layers to one full-attention layer, 8 layers in all. */
function hybridSpec(): ModelSpec {
  return {
    ...findBundled('Qwen/Qwen3-8B')!,
    id: 'x/qwen3.5-like',
    family: 'qwen3_5',
    architecture: 'Qwen3_5ForConditionalGeneration',
    numLayers: 8,
    numKvHeads: 2,
    headDim: 256,
    layerMix: [{ kind: 'gdn', count: 3 }, { kind: 'full', count: 1 }, { kind: 'gdn', count: 3 }, { kind: 'full', count: 1 }],
    gdn: { numKeyHeads: 16, numValueHeads: 64, keyHeadDim: 128, valueHeadDim: 128, convKernel: 4, stateBytes: 4 },
  };
}

describe('state per sequence by layer kind', () => {
  it('a gated-delta-net layer keeps numValueHeads x keyHeadDim x valueHeadDim state plus its convolution window', () => {
    const g = hybridSpec().gdn!;
    expect(gdnStateBytes(g)).toBe(64 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 64 * 128) * 2);
  });
  it('a Mamba-2 layer keeps nheads x head_dim x d_state plus the conv window over x, B and C', () => {
    const s = { numHeads: 128, headDim: 64, stateSize: 128, groups: 8, convKernel: 4, chunkSize: 128, stateBytes: 4 };
    expect(mamba2StateBytes(s)).toBe(128 * 64 * 128 * 4 + 3 * (128 * 64 + 2 * 8 * 128) * 2);
    expect(kdaStateBytes({ numHeads: 96, headDim: 128, convKernel: 4, stateBytes: 4 })).toBe(96 * 128 * 128 * 4 + 3 * 3 * 96 * 128 * 2);
  });
  // The cache pricing uses (kvBytesPerToken) on one GPU: bytes per token that grow with the sequence, and the fixed state.
  const cacheOf = (m: ModelSpec, kvDtype: 'bfloat16' | 'fp8' = 'bfloat16') => kvBytesPerToken({ ...testCtx('Qwen/Qwen3-8B'), model: m, kvDtype }, L(1));
  it('hybrid: KV grows with the full-attention layers only, the recurrent state is fixed', () => {
    const m = hybridSpec();
    const kvPerToken = 2 * (2 * 2 * 256 * 2); // two full layers x K and V x 2 kv heads x 256 x bf16
    const c = cacheOf(m);
    expect(c.full).toBe(kvPerToken);
    expect(c.fixed).toBe(6 * gdnStateBytes(m.gdn!));
    // The same shape with every layer full attention holds four times the KV and no state.
    const plain = cacheOf({ ...m, layerMix: undefined, gdn: undefined });
    expect(plain.full).toBe(4 * c.full);
    expect(plain.fixed).toBe(0);
  });
  it('sliding layers hold at most their window; the DSA indexer adds its keys per token', () => {
    const m: ModelSpec = { ...hybridSpec(), layerMix: [{ kind: 'sliding', count: 6, window: 512 }, { kind: 'full', count: 2 }], gdn: undefined };
    const c = cacheOf(m, 'fp8');
    expect([c.sliding, c.window]).toEqual([6 * 2 * 2 * 256, 512]);
    expect(c.full).toBe(2 * 2 * 2 * 256);
    const ds = findBundled('deepseek-ai/DeepSeek-V3')!;
    const dsa: ModelSpec = { ...ds, layerMix: [{ kind: 'dsa', count: 61 }], indexer: { topK: 2048, numHeads: 64, headDim: 128 } };
    // 61 layers x (MLA latent 512 + 64) + fp8 indexer keys with one fp32 scale per 128.
    expect(cacheOf(dsa, 'fp8').full).toBe(61 * (512 + 64) + 61 * (128 + 4));
  });
});

describe('models whose layers the engine cannot price', () => {
  it('are refused with exit 4 and a reason naming the kind and what it lacks, wherever they meet the engine', () => {
    const ctx = { ...testCtx('Qwen/Qwen3-8B'), model: { ...hybridSpec(), gdn: undefined } };
    const why = 'x/qwen3.5-like: 6 gated-delta-net layers without gated-delta-net dimensions (linear_num_key_heads, linear_key_head_dim, ...): cannot be priced';
    expect(modelRefusal(ctx.model)).toBe(why);
    for (const call of [
      () => memoryFor(ctx, L(1), 8192),
      () => estimateAgg(ctx, { ...L(1), batchSize: 8, maxNumTokens: 8192 }),
      () => estimateDisagg(ctx, { prefill: { ...L(1), batchSize: 1, maxNumTokens: 8192, workers: 1 }, decode: { ...L(1), batchSize: 8, maxNumTokens: 8192, workers: 1 } }),
    ]) {
      let err: unknown;
      try {
        call();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UnsupportedError);
      expect((err as UnsupportedError).exitCode).toBe(4);
      expect((err as Error).message).toBe(why);
    }
  });
  it('today\'s models, hybrids with their dimensions and new attention shapes are priced; several missing kinds are all named', () => {
    for (const id of ['Qwen/Qwen3-32B', 'deepseek-ai/DeepSeek-V3', 'openai/gpt-oss-120b', 'nvidia/Llama-3_3-Nemotron-Super-49B-v1']) {
      expect(modelRefusal(findBundled(id)!), id).toBeUndefined();
    }
    expect(modelRefusal(hybridSpec())).toBeUndefined();
    const gemma: ModelSpec = { ...hybridSpec(), layerMix: undefined, gdn: undefined, attentionShapes: { full: { numHeads: 16, numKvHeads: 2, headDim: 512, kEqV: true } } };
    expect(modelRefusal(gemma)).toBeUndefined();
    const mixed: ModelSpec = { ...hybridSpec(), layerMix: [{ kind: 'mamba2', count: 4 }, { kind: 'dsa', count: 3 }, { kind: 'full', count: 1 }], ungatedMlp: true };
    expect(modelRefusal(mixed)).toMatch(/^x\/qwen3\.5-like: 4 Mamba-2 layers without .*; 3 DeepSeek-sparse-attention \(DSA\) layers without .*: cannot be priced$/);
  });
});

describe.skipIf(!existsSync(join(referencePath(), 'model-configs')))('a hybrid checkpoint at 32k tokens', () => {
  it('Qwen3.5-397B-A17B holds the KV of its 15 full-attention layers and a fixed GDN state: a quarter of a plain model\'s KV', () => {
    const file = join(referencePath(), 'model-configs', 'Qwen--Qwen3.5-397B-A17B_config.json');
    const m = parseHfConfig(parseJsonText(readFileSync(file, 'utf8'), file), undefined, 'Qwen/Qwen3.5-397B-A17B', 'test');
    const MiB = 2 ** 20;
    const cache = (spec: ModelSpec) => kvBytesPerToken({ ...testCtx('Qwen/Qwen3-8B'), model: spec, kvDtype: 'bfloat16' }, L(1));
    expect((cache(m).full * 32768) / MiB).toBe(960); // 15 x 2 x 2 kv heads x 256 x 2 bytes x 32768
    expect(cache(m).fixed).toBe(45 * (64 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 64 * 128) * 2)); // 183.2 MiB
    expect((cache({ ...m, layerMix: undefined }).full * 32768) / MiB).toBe(3840);
  });
});
