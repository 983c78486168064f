// The model families of the end of 2026 are planned: hybrid linear attention (Qwen3.5 GDN, Nemotron-3 Mamba-2),
// sparse attention (DeepSeek-V3.2 / GLM-5 DSA, DeepSeek-V4 compressed attention), per-layer attention shapes
// (Gemma-4) and the MoE families beside them. Each is priced by the op of its layer kind, holds the memory its
// layers keep, and `support` / `default` answer for it.
import { describe, expect, it } from 'vitest';
import { registerDefault } from '../../src/cli/commands/default.js';
import { registerSupport } from '../../src/cli/commands/support.js';
import { estimateAgg, isRefusal, kvBytesPerToken, layerKinds, stepCost } from '../../src/engine/index.js';
import { listBundledModels } from '../../src/inputs/models.js';
import { familyRule } from '../../src/engine/rules.js';
import { runInProcess } from '../modes/cli.js';
import { testCtx } from './helpers.js';

const L = (tp: number, extra: Partial<{ pp: number; dp: number; moeTp: number; moeEp: number }> = {}) => ({ tp, pp: 1, dp: 1, moeTp: 1, moeEp: tp, ...extra });

/** Each family's representative, and a system and GPU budget it fits on with bf16 or its checkpoint's weights. */
const FAMILIES: readonly [id: string, system: string][] = [
  ['Qwen/Qwen3.5-397B-A17B', 'b200_sxm'],
  ['Qwen/Qwen3.5-27B', 'h200_sxm'],
  ['nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8', 'h200_sxm'],
  ['deepseek-ai/DeepSeek-V3.2', 'h200_sxm'],
  ['zai-org/GLM-5', 'b300_sxm'],
  ['zhipuai/GLM-5', 'b300_sxm'],
  ['MiniMaxAI/MiniMax-M2.7', 'h200_sxm'],
  ['deepseek-ai/DeepSeek-V4-Flash', 'h200_sxm'],
  ['google/gemma-4-26B-A4B', 'h200_sxm'],
  ['stepfun-ai/Step-3.7-Flash', 'h200_sxm'],
  ['moonshotai/Kimi-K2.5', 'h200_sxm'],
];

describe('support and default answer for each family', () => {
  it.each(FAMILIES)('%s on %s', async (id, system) => {
    const s = await runInProcess([registerSupport], ['support', '--hf-id', id, '--system', system, '--backend', 'sglang', '--json']);
    expect(s.code, s.stderr).toBe(0);
    expect((JSON.parse(s.stdout) as { supported: boolean }).supported, s.stdout).toBe(true);
    // A small search (short prompts, one backend) keeps the test fast; the families are what is under test.
    const d = await runInProcess([registerDefault], [
      'default', '--hf-id', id, '--system', system, '--total-gpus', '8', '--backend', 'sglang', '--isl', '1000', '--osl', '200',
      '--ttft', '5000', '--tpot', '200',
    ]);
    expect(d.code, d.stderr).toBe(0);
  }, 60_000);
});

describe('each layer kind is priced by its own op', () => {
  it('Qwen3.5: 45 gated-delta-net layers on the linear-attention op, 15 gated full-attention layers on attention', () => {
    const ctx = testCtx('Qwen/Qwen3.5-397B-A17B', { backend: 'sglang' });
    expect(layerKinds(ctx.model).map((k) => [k.attention, k.count])).toEqual([['gdn', 45], ['full', 15]]);
    const pf = stepCost(ctx, L(8), { pfBatch: 1, pfSeq: 4000, pfPrefix: 0, dcBatch: 0, dcKv: 0 }).byOp;
    const dc = stepCost(ctx, L(8), { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 64, dcKv: 4000 }).byOp;
    expect(pf.linear_attn_prefill).toBeGreaterThan(0);
    expect(dc.linear_attn_decode).toBeGreaterThan(0);
    // A GDN layer's decode reads a fixed state, not the context: a 16x longer context grows only the attention.
    const dcLong = stepCost(ctx, L(8), { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 64, dcKv: 64000 }).byOp;
    expect(dcLong.linear_attn_decode).toBeCloseTo(dc.linear_attn_decode!, 6);
    expect(dcLong.attention_decode!).toBeGreaterThan(2 * dc.attention_decode!);
  });
  it('DSA, DeepSeek-V4 compressed attention with hyper-connections, Mamba-2 with latent experts, Gemma-4 global layers', () => {
    const step = (id: string, tp: number) => {
      const ctx = testCtx(id, { backend: 'sglang' });
      const pf = stepCost(ctx, L(tp), { pfBatch: 1, pfSeq: 2000, pfPrefix: 0, dcBatch: 0, dcKv: 0 }).byOp;
      const dc = stepCost(ctx, L(tp), { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 32, dcKv: 2000 }).byOp;
      return { pf, dc };
    };
    const glm = step('zai-org/GLM-5', 8);
    expect(glm.pf.sparse_attn_prefill).toBeGreaterThan(0);
    expect(glm.dc.sparse_attn_decode).toBeGreaterThan(0);
    expect(glm.dc.attention_decode).toBeUndefined();
    const v4 = step('deepseek-ai/DeepSeek-V4-Flash', 4);
    expect(v4.dc.sparse_attn_decode).toBeGreaterThan(0);
    expect(v4.dc.attention_decode).toBeGreaterThan(0); // the two window-only layers
    expect(v4.dc.hyper_connection).toBeGreaterThan(0);
    const nemotron = step('nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8', 4);
    expect(nemotron.dc.linear_attn_decode).toBeGreaterThan(0);
    expect(nemotron.dc.moe_latent).toBeGreaterThan(0);
    const gemma = testCtx('google/gemma-4-26B-A4B', { backend: 'sglang' });
    expect(layerKinds(gemma.model).find((k) => k.window === 0)?.shape).toMatchObject({ headDim: 512, numKvHeads: 2, kEqV: true });
  });
});

describe('every bundled model of every family is priced', () => {
  it.each(listBundledModels().filter((m) => m.layerMix || m.attentionShapes).map((m) => [m.id]))('%s', (id) => {
    const ctx = testCtx(id, { backend: 'sglang', system: 'b300_sxm' });
    const moe = ctx.model.moe ? { moeTp: 1, moeEp: 8 } : { moeTp: 8, moeEp: 1 };
    const est = estimateAgg(ctx, { tp: 8, pp: 1, dp: 1, ...moe, batchSize: 16, maxNumTokens: 8192 }, { breakdown: true });
    // Too large for 8 GPUs is a memory refusal, never an unpriced layer.
    if (isRefusal(est)) expect(est.constraint, est.reason).toBe('memory');
    else {
      expect(Number.isFinite(est.metrics.ttftMs) && Number.isFinite(est.metrics.tpotMs)).toBe(true);
      expect(Object.values(est.breakdown!.decode).every((v) => Number.isFinite(v) && v >= 0)).toBe(true);
    }
  });
});

describe('memory follows the layer mix', () => {
  it('Qwen3.5 holds KV for its full-attention layers only and a fixed state per sequence', () => {
    const ctx = testCtx('Qwen/Qwen3.5-397B-A17B', { backend: 'sglang' });
    const kv = kvBytesPerToken(ctx, L(8));
    expect(kv.full).toBe(15 * 2 * 1 * 256 * 2); // 15 layers x K and V x 2 KV heads over 8 GPUs (one each) x 256 x bf16
    // 45 layers x (8 of 64 value heads x 128 x 128 fp32 state + the convolution window of 2 + 8 heads)
    expect(kv.fixed).toBe(45 * (8 * 128 * 128 * 4 + 3 * (2 * 2 * 128 + 8 * 128) * 2));
  });
  it('Gemma-4 global layers cache one K=V vector per KV head of their own head dim; sliding layers their window', () => {
    const ctx = testCtx('google/gemma-4-26B-A4B', { backend: 'sglang' });
    const kv = kvBytesPerToken(ctx, L(1));
    expect(kv.full).toBe(5 * 2 * 512 * 2);
    expect(kv.sliding).toBe(25 * 2 * 8 * 256 * 2);
    expect(kv.window).toBe(1024);
  });
  it('DSA layers add the indexer keys to the MLA latent; DeepSeek-V4 spreads a compressed entry over its ratio', () => {
    const glm = testCtx('zai-org/GLM-5', { backend: 'sglang' });
    expect(kvBytesPerToken(glm, L(8)).full).toBe(78 * ((512 + 64) * 2 + 128 + 4));
    const v4 = testCtx('deepseek-ai/DeepSeek-V4-Flash', { backend: 'sglang' });
    const kv = kvBytesPerToken(v4, L(4));
    const entry = 512 * 2;
    expect(kv.full).toBeCloseTo(21 * (entry + 132) / 4 + 20 * entry / 128, 6);
    expect(kv.sliding).toBe(43 * entry);
    expect(kv.window).toBe(128);
  });
  it('the longer the context, the more sequences a hybrid fits compared with all layers attending', () => {
    const ctx = testCtx('Qwen/Qwen3.5-397B-A17B', { backend: 'sglang', workload: { isl: 32000, osl: 1000 } });
    const est = estimateAgg(ctx, { ...L(8), batchSize: 64, maxNumTokens: 8192 });
    expect(isRefusal(est)).toBe(false);
    const plain = { ...ctx, model: { ...ctx.model, layerMix: undefined, gdn: undefined } };
    const fit = (c: typeof ctx) => {
      const e = estimateAgg(c, { ...L(8), batchSize: 64, maxNumTokens: 8192 });
      return isRefusal(e) ? 0 : e.memory.maxSequences;
    };
    expect(fit(ctx)).toBeGreaterThan(2 * fit(plain));
  });
});

describe('engine rules for the families', () => {
  it('vLLM before 0.16 does not serve Qwen3.5; DSA needs fp8 tensor cores; TRT-LLM has no KDA', () => {
    expect(familyRule(testCtx('Qwen/Qwen3.5-27B', { backend: 'vllm', version: '0.14.0' }))).toMatch(/vLLM 0\.15 rejects the Qwen3\.5 architectures/);
    expect(familyRule(testCtx('Qwen/Qwen3.5-27B', { backend: 'sglang' }))).toBeNull();
    expect(familyRule(testCtx('deepseek-ai/DeepSeek-V3.2', { backend: 'sglang', system: 'a100_sxm' }))).toMatch(/a100_sxm cannot serve .*DeepGEMM fp8 kernels/);
    expect(familyRule(testCtx('deepseek-ai/DeepSeek-V3.2', { backend: 'sglang', system: 'h200_sxm' }))).toBeNull();
  });
});
