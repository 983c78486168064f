import { describe, expect, it } from 'vitest';
import { estimateAgg, estimateDisagg, isRefusal, kvTransferMs, stepCost, layerKinds } from '../../src/engine/index.js';
import { randomRouting } from '../../src/engine/ops.js';
import { hostOverheadMs } from '../../src/engine/steps.js';
import { backendProfile } from '../../src/engine/backends.js';
import { loadSystem } from '../../src/inputs/systems.js';
import type { AggEstimate, DisaggEstimate, EngineContext, ParallelLayout } from '../../src/engine/types.js';
import type { MoeQuery, PerfSource } from '../../src/perf/types.js';
import { agg, pool, testCtx } from './helpers.js';

function ok<T>(e: T | { refused: true; reason: string }): T {
  if (isRefusal(e)) throw new Error(`unexpected refusal: ${e.reason}`);
  return e as T;
}

describe('step latencies', () => {
  const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8' });
  const L = { tp: 4, pp: 1, dp: 1, moeTp: 4, moeEp: 1 };
  it('more prompt tokens take more time', () => {
    let prev = 0;
    for (const seq of [128, 512, 2048, 8192]) {
      const t = stepCost(ctx, L, { pfBatch: 1, pfSeq: seq, pfPrefix: 0, dcBatch: 0, dcKv: 0 }).ms;
      expect(t).toBeGreaterThan(prev);
      prev = t;
    }
  });
  it('decode steps grow with batch and KV length; TP adds two all-reduces per layer', () => {
    const a = stepCost(ctx, L, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 8, dcKv: 2000 });
    const b = stepCost(ctx, L, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 64, dcKv: 2000 });
    const c = stepCost(ctx, L, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 64, dcKv: 8000 });
    expect(b.ms).toBeGreaterThan(a.ms);
    expect(c.ms).toBeGreaterThan(b.ms);
    expect(a.byOp.allreduce).toBeGreaterThan(0);
    const single = stepCost(ctx, { ...L, tp: 1, moeTp: 1 }, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 8, dcKv: 2000 });
    expect(single.byOp.allreduce ?? 0).toBe(0);
  });
  it("with attention data parallelism the experts serve the step's tokens, not dp x the busiest rank's", () => {
    const ds = testCtx('deepseek-ai/DeepSeek-V3', { backend: 'trtllm', version: '1.2.0rc5', kv: 'fp8' });
    const dep = { tp: 1, pp: 1, dp: 4, moeTp: 1, moeEp: 4 };
    const tep = { tp: 4, pp: 1, dp: 1, moeTp: 1, moeEp: 4 };
    const shape = (pfBatch: number) => ({ pfBatch, pfSeq: 4096, pfPrefix: 0, dcBatch: 0, dcKv: 0 });
    // One prompt on one of four ranks: as much expert work as the same prompt under tensor parallelism.
    const one = stepCost(ds, dep, shape(1)).byOp.moe_experts!;
    expect(one).toBeCloseTo(stepCost(ds, tep, shape(1)).byOp.moe_experts!, 6);
    // Four prompts, one per rank, are four prompts of expert work.
    expect(stepCost(ds, dep, shape(4)).byOp.moe_experts!).toBeCloseTo(stepCost(ds, tep, shape(4)).byOp.moe_experts!, 6);
    expect(stepCost(ds, dep, shape(4)).byOp.moe_experts!).toBeGreaterThan(2 * one);
  });
  it("TRT-LLM's fp4 experts on Blackwell ask for the trtllm-gen kernels, except with attention DP, on Hopper or as trtllm-bench runs", () => {
    const asked = (c: EngineContext, layout: ParallelLayout): boolean[] => {
      const seen: boolean[] = [];
      const perf = c.perf;
      const spy = Object.create(perf) as PerfSource;
      spy.moe = (q: MoeQuery) => (seen.push(q.trtllmGen === true), perf.moe(q));
      stepCost({ ...c, perf: spy }, layout, { pfBatch: 1, pfSeq: 4096, pfPrefix: 0, dcBatch: 8, dcKv: 2000 });
      return [...new Set(seen)];
    };
    const tep = { tp: 8, pp: 1, dp: 1, moeTp: 1, moeEp: 8 };
    const dep = { tp: 1, pp: 1, dp: 8, moeTp: 1, moeEp: 8 };
    const b200 = testCtx('deepseek-ai/DeepSeek-V3', { system: 'b200_sxm', backend: 'trtllm', version: '1.2.0rc5', moe: 'nvfp4', kv: 'fp8' });
    expect(asked(b200, tep)).toEqual([true]);
    expect(asked(b200, dep)).toEqual([false]);
    expect(asked({ ...b200, engineDefaultMoe: true }, tep)).toEqual([false]);
    expect(asked({ ...b200, moeDtype: 'fp8_block' }, tep)).toEqual([false]);
    expect(asked({ ...b200, backend: 'vllm', version: '0.12.0' }, tep)).toEqual([false]);
    const h200 = testCtx('deepseek-ai/DeepSeek-V3', { system: 'h200_sxm', backend: 'trtllm', version: '1.2.0rc5', moe: 'nvfp4', kv: 'fp8' });
    expect(asked(h200, tep)).toEqual([false]);
  });
  it('TRT-LLM 1.0 on Hopper all-reduces through NCCL; later versions and other GPUs use the custom kernels', () => {
    const gpu = (s: string) => loadSystem(s).gpu;
    expect(backendProfile('trtllm', '1.0.0rc3', gpu('h100_sxm')).allReduceViaNccl).toBe(true);
    expect(backendProfile('trtllm', '1.2.0rc5', gpu('h100_sxm')).allReduceViaNccl).toBeFalsy();
    expect(backendProfile('trtllm', '1.0.0', gpu('a100_sxm')).allReduceViaNccl).toBeFalsy();
    expect(backendProfile('vllm', '0.12.0', gpu('h100_sxm')).allReduceViaNccl).toBeFalsy();
    // A perf source whose NCCL all-reduce is ten times its custom one shows which one a step paid.
    const price = (version: string) => {
      const base = testCtx('meta-llama/Llama-3.1-8B', { system: 'h100_sxm', backend: 'trtllm', version });
      const perf = Object.create(base.perf) as typeof base.perf;
      perf.nccl = (c, q) => (c === 'all_reduce' ? 10 * base.perf.allReduce(q) : base.perf.nccl(c, q));
      const step = { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 16, dcKv: 2000 };
      return stepCost({ ...base, perf }, { tp: 8, pp: 1, dp: 1, moeTp: 8, moeEp: 1 }, step).byOp.allreduce!;
    };
    expect(price('1.0.0rc3')).toBeCloseTo(10 * price('1.2.0rc5'), 6);
  });
  it("with tp inside each dp group, each tp rank dispatches a share of its group's tokens to the experts", () => {
    const ctx = testCtx('MiniMaxAI/MiniMax-M2.5', { system: 'b200_sxm' });
    const shape = (prompts: number) => ({ pfBatch: prompts, pfSeq: 1024, pfPrefix: 0, dcBatch: 0, dcKv: 0 });
    // 16 GPUs both ways, one 1024-token prompt per dp group: four tp ranks split a group's dispatch.
    const tpGroups = stepCost(ctx, { tp: 4, pp: 1, dp: 4, moeTp: 1, moeEp: 16 }, shape(4)).byOp.moe_comm!;
    const singles = stepCost(ctx, { tp: 1, pp: 1, dp: 16, moeTp: 1, moeEp: 16 }, shape(16)).byOp.moe_comm!;
    expect(tpGroups).toBeLessThan(0.5 * singles);
  });
  it('engines that free the KV behind a sliding window read only the window in decode', () => {
    // A kernel table that reads the whole cache whatever the window (as vLLM's measured decode kernel did).
    const base = testCtx('openai/gpt-oss-120b');
    const perf = Object.create(base.perf) as typeof base.perf;
    perf.generationAttention = (q) => base.perf.generationAttention({ ...q, window: 0 });
    const decode = (backend: 'vllm' | 'trtllm', kv: number) => {
      const ctx = { ...testCtx('openai/gpt-oss-120b', { backend, version: backend === 'vllm' ? '0.12.0' : '1.2.0rc5' }), perf };
      return stepCost(ctx, { tp: 4, pp: 1, dp: 1, moeTp: 4, moeEp: 1 }, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 8, dcKv: kv }).byOp.attention_decode!;
    };
    // Half of gpt-oss's layers have a 128-token window: vLLM holds 128 tokens there, so only the full layers grow.
    const growth = (b: 'vllm' | 'trtllm') => decode(b, 16384) - decode(b, 8192);
    expect(growth('vllm')).toBeGreaterThan(0);
    expect(growth('vllm')).toBeLessThan(0.6 * growth('trtllm'));
  });
  it('a cached prefix makes the prefill cheaper', () => {
    const full = stepCost(ctx, L, { pfBatch: 1, pfSeq: 4000, pfPrefix: 0, dcBatch: 0, dcKv: 0 }).ms;
    const reuse = stepCost(ctx, L, { pfBatch: 1, pfSeq: 1000, pfPrefix: 3000, dcBatch: 0, dcKv: 0 }).ms;
    expect(reuse).toBeLessThan(full);
  });
  it('Q/K norms over all heads add one small all-reduce per layer under TP, none on one GPU', () => {
    const mm = testCtx('MiniMaxAI/MiniMax-M2.5');
    const plain = { ...mm, model: { ...mm.model, qkNorm: undefined } };
    const decode = { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 16, dcKv: 2000 };
    const at = (c: typeof mm, tp: number) => stepCost(c, { tp, pp: 1, dp: 1, moeTp: tp, moeEp: 1 }, decode).byOp.allreduce ?? 0;
    expect(at(mm, 4)).toBeGreaterThan(at(plain, 4));
    expect(at(mm, 4)).toBeLessThan(2 * at(plain, 4));
    expect(at(mm, 1)).toBe(0);
  });
  it('vLLM pays the kernels it runs beside each attention (rotary, cache write, norms), more with per-head Q/K norms', () => {
    const decode = { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 8, dcKv: 2000 };
    const L1 = { tp: 1, pp: 1, dp: 1, moeTp: 1, moeEp: 1 };
    const norm = (id: string, backend: 'vllm' | 'trtllm') => stepCost(testCtx(id, { backend }), L1, decode).byOp.norm ?? 0;
    const qwen = testCtx('Qwen/Qwen3-32B');
    expect(qwen.model.qkNorm).toBe('per_head');
    // Five launch-bound kernels per layer on vLLM, none of them on TRT-LLM (fused into its attention and all-reduce).
    const perLayer = (norm('Qwen/Qwen3-32B', 'vllm') - norm('Qwen/Qwen3-32B', 'trtllm')) / qwen.model.numLayers;
    expect(perLayer).toBeGreaterThan(0.01);
    expect(perLayer).toBeLessThan(0.03);
    const plain = { ...qwen, model: { ...qwen.model, qkNorm: undefined } };
    expect(stepCost(qwen, L1, decode).byOp.norm!).toBeGreaterThan(stepCost(plain, L1, decode).byOp.norm!);
  });
  it('adds the top-k selection kernel where the MoE table starts from chosen experts (vLLM, SGLang), not on TRT-LLM', () => {
    const L = { tp: 4, pp: 1, dp: 1, moeTp: 4, moeEp: 1 };
    const decode = { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 8, dcKv: 2000 };
    const router = (backend: 'vllm' | 'trtllm', version: string) =>
      stepCost(testCtx('Qwen/Qwen3-30B-A3B', { backend, version }), L, decode).byOp.moe_router!;
    const gate = router('trtllm', '1.2.0rc5');
    // 48 MoE layers, one launch-bound kernel each (about 3 us).
    expect(router('vllm', '0.12.0') - gate).toBeGreaterThan(48 * 0.001);
    expect(router('vllm', '0.12.0') - gate).toBeLessThan(48 * 0.01);
  });
  it('host time per running sequence is paid by each attention-dp rank scheduler over its own share', () => {
    const ctx = testCtx('deepseek-ai/DeepSeek-V3', { backend: 'sglang', version: '0.5.9' });
    const one = hostOverheadMs(ctx, { pp: 1, dp: 1 }, 4096);
    expect(one).toBeGreaterThan(0);
    expect(hostOverheadMs(ctx, { pp: 1, dp: 64 }, 4096)).toBeCloseTo(one / 64, 9);
  });
  it('randomly routed tokens touch fewer distinct experts than the balanced tables assume', () => {
    // 32 tokens x top-4 of 128 experts: 81.7 distinct experts, as many as 20.4 tokens routed one copy per expert.
    expect(randomRouting(32, 4, 128)).toEqual({ tokens: expect.closeTo(20.4, 1), share: 1 });
    expect(randomRouting(1, 8, 256)).toEqual({ tokens: 1, share: 1 });
    // Past one copy per expert the table reads every expert: 48 tokens x top-8 of 256 touch 78% of them.
    expect(randomRouting(48, 8, 256)).toEqual({ tokens: 48, share: expect.closeTo(0.782, 3) });
    // The priced work (tokens x share) rises with the batch, never above it, and converges to it.
    let prev = 0;
    for (const t of [1, 2, 4, 8, 16, 32, 33, 64, 128, 512, 4096]) {
      const r = randomRouting(t, 8, 256);
      expect(r.tokens * r.share).toBeGreaterThan(prev);
      expect(r.tokens * r.share).toBeLessThanOrEqual(t);
      prev = r.tokens * r.share;
    }
    expect(randomRouting(4096, 8, 256).share).toBeCloseTo(1, 6);
  });
  it('shared experts hide beside the routed experts in decode-sized steps on engines that run them on a second stream', () => {
    const L8 = { tp: 8, pp: 1, dp: 1, moeTp: 8, moeEp: 1 };
    const at = (backend: 'vllm' | 'sglang' | 'trtllm', version: string, dcBatch: number, pfBatch = 0) =>
      stepCost(testCtx('deepseek-ai/DeepSeek-V3', { backend, version }), L8, { pfBatch, pfSeq: pfBatch ? 2000 : 0, pfPrefix: 0, dcBatch, dcKv: 2000 }).byOp;
    // A decode step of 16: the shared expert's time is hidden (vLLM, TRT-LLM graphs), paid on SGLang (fused kernel).
    expect(at('vllm', '0.12.0', 16).moe_shared ?? 0).toBe(0);
    expect(at('trtllm', '1.2.0rc5', 16).moe_shared ?? 0).toBe(0);
    expect(at('sglang', '0.5.6', 16).moe_shared).toBeGreaterThan(0);
    // Large steps saturate the GPU, and TRT-LLM's eager (prefill-carrying) steps stay on one stream.
    expect(at('vllm', '0.12.0', 512).moe_shared).toBeGreaterThan(0);
    expect(at('trtllm', '1.2.0rc5', 16, 1).moe_shared).toBeGreaterThan(0);
  });
  it('a window on every layer (Mistral v0.1) applies on vLLM; TRT-LLM runs such checkpoints with full attention', () => {
    const decode = { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 16, dcKv: 16000 };
    const attn = (backend: 'vllm' | 'trtllm', version: string, id: string) =>
      stepCost(testCtx(id, { backend, version, workload: { isl: 16000, osl: 1000 } }), { tp: 1, pp: 1, dp: 1, moeTp: 1, moeEp: 1 }, decode).byOp.attention_decode!;
    expect(attn('vllm', '0.12.0', 'mistralai/Mistral-7B-v0.1')).toBeLessThan(0.5 * attn('vllm', '0.12.0', 'mistralai/Mistral-7B-Instruct-v0.3'));
    expect(attn('trtllm', '1.2.0rc5', 'mistralai/Mistral-7B-v0.1')).toBeCloseTo(attn('trtllm', '1.2.0rc5', 'mistralai/Mistral-7B-Instruct-v0.3'), 9);
    // Per-layer windows its model code sets (gpt-oss) stay.
    const oss = testCtx('openai/gpt-oss-120b').model;
    expect(layerKinds(oss, false).some((k) => k.window > 0)).toBe(true);
  });
  it('groups heterogeneous and sliding-window layers', () => {
    const nem = layerKinds(testCtx('nvidia/Llama-3_3-Nemotron-Super-49B-v1').model);
    expect(nem.length).toBeGreaterThan(2);
    expect(nem.reduce((a, k) => a + k.count, 0)).toBe(80);
    const oss = layerKinds(testCtx('openai/gpt-oss-120b').model);
    expect(oss.some((k) => k.window > 0) && oss.some((k) => k.window === 0)).toBe(true);
    const ds = layerKinds(testCtx('deepseek-ai/DeepSeek-V3').model);
    expect(ds.find((k) => k.ffn === 'dense')?.count).toBe(3);
    expect(ds.find((k) => k.ffn === 'moe')?.count).toBe(58);
  });
});

describe('aggregated serving', () => {
  const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8', kv: 'fp8' });
  it('more batch: higher TPOT, more throughput per GPU, fewer tokens/s per user', () => {
    const small = ok(estimateAgg(ctx, agg(4, 8))) as AggEstimate;
    const big = ok(estimateAgg(ctx, agg(4, 64))) as AggEstimate;
    expect(big.metrics.tpotMs).toBeGreaterThan(small.metrics.tpotMs);
    expect(big.metrics.tokPerSPerGpu).toBeGreaterThan(small.metrics.tokPerSPerGpu);
    expect(big.metrics.tokPerSPerUser).toBeLessThan(small.metrics.tokPerSPerUser);
    expect(big.metrics.gpus).toBe(4);
    expect(big.bands.tpotMs.low).toBeLessThanOrEqual(big.metrics.tpotMs);
    expect(big.bands.tpotMs.high).toBeGreaterThanOrEqual(big.metrics.tpotMs);
  });
  it('longer prompts take longer to the first token', () => {
    const a = ok(estimateAgg(testCtx('meta-llama/Llama-3.1-8B', { workload: { isl: 1000 } }), agg(1, 16))) as AggEstimate;
    const b = ok(estimateAgg(testCtx('meta-llama/Llama-3.1-8B', { workload: { isl: 8000 } }), agg(1, 16))) as AggEstimate;
    expect(b.metrics.ttftMs).toBeGreaterThan(a.metrics.ttftMs);
  });
  it('clients beyond the batch cap queue: TTFT grows, throughput does not', () => {
    const fit = ok(estimateAgg(ctx, agg(4, 32), { concurrency: 32 })) as AggEstimate;
    const over = ok(estimateAgg(ctx, agg(4, 32), { concurrency: 128 })) as AggEstimate;
    expect(over.metrics.ttftMs).toBeGreaterThan(fit.metrics.ttftMs * 2);
    // Queued clients keep every slot busy (a little more throughput), but 4x clients cannot give 4x output.
    expect(over.metrics.tokPerSPerGpu).toBeLessThan(fit.metrics.tokPerSPerGpu * 1.1);
  });
  it('replicas multiply throughput and GPUs', () => {
    const one = ok(estimateAgg(ctx, agg(2, 16))) as AggEstimate;
    const three = ok(estimateAgg(ctx, agg(2, 16), { replicas: 3 })) as AggEstimate;
    expect(three.metrics.gpus).toBe(6);
    expect(three.metrics.concurrency).toBe(48);
    expect(three.metrics.outputTokPerS).toBeCloseTo(3 * one.metrics.outputTokPerS, 6);
  });
  it('breakdown lists op types of both phases', () => {
    const e = ok(estimateAgg(ctx, agg(4, 16), { breakdown: true })) as AggEstimate;
    expect(Object.keys(e.breakdown!.prefill)).toContain('attention_prefill');
    expect(Object.keys(e.breakdown!.decode)).toContain('attention_decode');
  });
  it('MoE and MLA models run', () => {
    const ds = ok(estimateAgg(testCtx('deepseek-ai/DeepSeek-V3', { kv: 'fp8' }), { tp: 8, pp: 1, dp: 1, moeTp: 1, moeEp: 8, batchSize: 64, maxNumTokens: 8192 })) as AggEstimate;
    expect(ds.metrics.tpotMs).toBeGreaterThan(0);
    const oss = ok(estimateAgg(testCtx('openai/gpt-oss-120b'), agg(1, 64))) as AggEstimate;
    expect(oss.metrics.tokPerSPerGpu).toBeGreaterThan(0);
  });
});

describe('kernels as the engines choose them', () => {
  const base = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8' });
  const L = { tp: 4, pp: 1, dp: 1, moeTp: 4, moeEp: 1 };
  // An fp8 kernel with a fixed cost per call, as quantized GEMMs measured in isolation show.
  const slow = Object.create(base.perf) as typeof base.perf;
  slow.gemm = (q) => base.perf.gemm(q) + (q.dtype === 'fp8' ? 0.05 : 0);
  const ctx = { ...base, perf: slow };
  const ffn = (c: typeof ctx, shape: { pfBatch: number; pfSeq: number; dcBatch: number }) =>
    stepCost(c, L, { pfPrefix: 0, dcKv: 2000, ...shape }).byOp.ffn_gemm;
  it('a weight-streaming quantized GEMM costs no more than the 16-bit kernel moving fewer bytes', () => {
    const decode = { pfBatch: 0, pfSeq: 0, dcBatch: 8 };
    const own = ffn(base, decode) + 80 * 2 * 0.05;
    const bf16 = ffn({ ...base, gemmDtype: 'bfloat16' }, decode);
    expect(ffn(ctx, decode)).toBeLessThan(own);
    expect(ffn(ctx, decode)).toBeLessThan(bf16);
    expect(ffn(ctx, decode)).toBeGreaterThanOrEqual(ffn(base, decode) * 0.999);
  });
  it('NVFP4 layers keep the measured kernel on vLLM and SGLang, and are tuned per shape on TRT-LLM', () => {
    const decode = { pfBatch: 0, pfSeq: 0, dcBatch: 8 };
    const fp4 = (backend: 'vllm' | 'sglang' | 'trtllm', version: string) => {
      const c = testCtx('meta-llama/Llama-3.1-70B', { system: 'b200_sxm', backend, version, gemm: 'nvfp4' });
      const p = Object.create(c.perf) as typeof c.perf;
      p.gemm = (q) => c.perf.gemm(q) + (q.dtype === 'nvfp4' ? 0.05 : 0);
      return { own: ffn({ ...c, perf: c.perf }, decode) + 80 * 2 * 0.05, served: ffn({ ...c, perf: p }, decode) };
    };
    for (const [b, v] of [['vllm', '0.12.0'], ['sglang', '0.5.9']] as const) {
      const { own, served } = fp4(b, v);
      expect(served).toBeCloseTo(own, 6);
    }
    const trt = fp4('trtllm', '1.2.0rc5');
    expect(trt.served).toBeLessThan(trt.own);
  });
  it('a compute-bound quantized GEMM keeps its own kernel', () => {
    const prefill = { pfBatch: 1, pfSeq: 8192, dcBatch: 0 };
    expect(ffn(ctx, prefill)).toBeCloseTo(ffn(base, prefill) + 80 * 2 * 0.05, 6);
  });
  it('expert parallelism wider than a board routes tokens all-to-all and may use redundant expert slots', () => {
    const ds = testCtx('deepseek-ai/DeepSeek-V3', { system: 'gb200_sxm', backend: 'sglang', version: '0.5.9', workload: { isl: 1024, osl: 1024 } });
    const step = (ranks: number) => stepCost(ds, { tp: 1, pp: 1, dp: ranks, moeTp: 1, moeEp: ranks }, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 32 * ranks, dcKv: 1536 });
    // All-gathering every rank's tokens would double the traffic from 36 to 72 ranks; routed copies do not.
    expect(step(72).byOp.moe_comm).toBeLessThan(1.5 * step(36).byOp.moe_comm);
    // 256 experts over 72 GPUs: 4 slots each (the expert work of 64-way EP, on 72 GPUs' share of tokens).
    expect(isRefusal(estimateAgg(ds, { tp: 1, pp: 1, dp: 72, moeTp: 1, moeEp: 72, batchSize: 2048, maxNumTokens: 8192 }))).toBe(false);
    const tooWide = estimateAgg(testCtx('Qwen/Qwen3-30B-A3B', { backend: 'trtllm', version: '1.2.0rc5' }), { tp: 1, pp: 1, dp: 256, moeTp: 1, moeEp: 256, batchSize: 16, maxNumTokens: 8192 });
    expect(isRefusal(tooWide) && /exceeds the 128 experts/.test(tooWide.reason)).toBe(true);
  });
  it('TRT-LLM dispatches NVFP4 experts\' tokens quantized (post-quant all-to-all); the combine returns bf16', () => {
    const comm = (backend: 'trtllm' | 'sglang', version: string, moe: 'nvfp4' | 'fp8_block') => stepCost(
      testCtx('deepseek-ai/DeepSeek-V3', { system: 'gb200_sxm', backend, version, moe, workload: { isl: 1024, osl: 1024 } }),
      { tp: 1, pp: 1, dp: 32, moeTp: 1, moeEp: 32 }, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: 32 * 256, dcKv: 1536 }).byOp.moe_comm!;
    const bf16Both = comm('trtllm', '1.2.0rc5', 'fp8_block');
    const fp4Dispatch = comm('trtllm', '1.2.0rc5', 'nvfp4');
    // Bulk messages: dispatch at 0.5625 of bf16's bytes, combine unchanged, so about (1 + 0.28) / 2 of the traffic.
    expect(fp4Dispatch / bf16Both).toBeGreaterThan(0.55);
    expect(fp4Dispatch / bf16Both).toBeLessThan(0.75);
    expect(comm('sglang', '0.5.9', 'nvfp4')).toBeCloseTo(bf16Both, 9);
  });
});

describe('MXFP4 experts on fp4 tensor cores', () => {
  it('TRT-LLM on Blackwell runs them through its fp4 MoE kernels; vLLM keeps its own MXFP4 kernel', () => {
    const experts = (backend: 'trtllm' | 'vllm', version: string) =>
      stepCost(testCtx('openai/gpt-oss-120b', { system: 'b200_sxm', backend, version }), { tp: 1, pp: 1, dp: 1, moeTp: 1, moeEp: 1 },
        { pfBatch: 1, pfSeq: 8192, pfPrefix: 0, dcBatch: 0, dcKv: 0 }).byOp.moe_experts;
    expect(experts('trtllm', '1.2.0rc5')).toBeLessThan(0.8 * experts('vllm', '0.12.0'));
  });
});

describe('refusals', () => {
  it('vLLM cannot combine attention DP with expert TP', () => {
    const r = estimateAgg(testCtx('Qwen/Qwen3-30B-A3B'), { tp: 1, pp: 1, dp: 4, moeTp: 4, moeEp: 1, batchSize: 16, maxNumTokens: 8192 });
    expect(isRefusal(r) && r.constraint === 'engine').toBe(true);
  });
  it('tp must split the query heads evenly and the KV heads evenly or into whole replicas (MLA excepted)', () => {
    const reason = (model: string, tp: number) => {
      const r = estimateAgg(testCtx(model), agg(tp, 8));
      return isRefusal(r) ? r.reason : '';
    };
    expect(reason('Qwen/Qwen3-32B', 3)).toMatch(/does not divide the 64 attention heads/); // 64 heads, 8 KV heads
    expect(reason('Qwen/Qwen3-32B', 16)).toBe(''); // two ranks per KV head
    expect(reason('Qwen/Qwen3-14B', 16)).toMatch(/does not divide the 40 attention heads/);
    const ds = estimateAgg(testCtx('deepseek-ai/DeepSeek-V3', { system: 'gb200_sxm', backend: 'sglang', version: '0.5.9' }), { tp: 72, pp: 1, dp: 1, moeTp: 1, moeEp: 72, batchSize: 64, maxNumTokens: 8192 });
    expect(isRefusal(ds) && /heads/.test(ds.reason)).toBe(false);
  });
  it('the same layout runs on TRT-LLM', () => {
    const r = estimateAgg(testCtx('Qwen/Qwen3-30B-A3B', { backend: 'trtllm', version: '1.2.0rc5' }), { tp: 1, pp: 1, dp: 4, moeTp: 4, moeEp: 1, batchSize: 16, maxNumTokens: 8192 });
    expect(isRefusal(r)).toBe(false);
  });
  it('moe_tp x moe_ep must cover tp x dp', () => {
    const r = estimateAgg(testCtx('Qwen/Qwen3-30B-A3B'), { tp: 4, pp: 1, dp: 1, moeTp: 1, moeEp: 2, batchSize: 16, maxNumTokens: 8192 });
    expect(isRefusal(r) && /moe_tp x moe_ep/.test(r.reason)).toBe(true);
  });
  it('SGLang disagg needs the same TP on both sides for GQA models', () => {
    const ctx = testCtx('Qwen/Qwen3-32B', { backend: 'sglang', version: '0.5.6.post2' });
    const r = estimateDisagg(ctx, { prefill: pool(2, 1, 1), decode: pool(4, 32, 1) });
    expect(isRefusal(r) && r.constraint === 'engine').toBe(true);
    expect(isRefusal(estimateDisagg(ctx, { prefill: pool(4, 1, 1), decode: pool(4, 32, 1) }))).toBe(false);
  });
  it('a layout whose weights do not fit is refused for memory', () => {
    const r = estimateAgg(testCtx('meta-llama/Llama-3.1-405B', { system: 'h100_sxm' }), agg(2, 8));
    expect(isRefusal(r) && r.constraint === 'memory').toBe(true);
  });
});

describe('disaggregated serving', () => {
  const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8', kv: 'fp8', workload: { isl: 8000, osl: 500 } });
  it('prices the KV transfer: longer prompts and cross-node hops cost more', () => {
    const near = kvTransferMs(ctx, { prefill: pool(2, 1, 1), decode: pool(4, 32, 1) });
    const far = kvTransferMs(ctx, { prefill: pool(2, 1, 2), decode: pool(4, 32, 2) }); // 12 GPUs: beyond one node
    const short = kvTransferMs({ ...ctx, workload: { isl: 1000, osl: 500, prefix: 0 } }, { prefill: pool(2, 1, 1), decode: pool(4, 32, 1) });
    expect(near).toBeGreaterThan(0);
    expect(far).toBeGreaterThan(near);
    expect(short).toBeLessThan(near);
    const e = ok(estimateDisagg(ctx, { prefill: pool(2, 1, 1), decode: pool(4, 32, 1) })) as DisaggEstimate;
    expect(e.kvTransferMs).toBeCloseTo(near, 9);
    expect(e.metrics.ttftMs).toBeGreaterThan(near);
    expect(e.metrics.gpus).toBe(6);
  });
  it('throughput is bounded by the slower pool', () => {
    const one = ok(estimateDisagg(ctx, { prefill: pool(2, 1, 1), decode: pool(4, 128, 1) }, { concurrency: 128 })) as DisaggEstimate;
    const two = ok(estimateDisagg(ctx, { prefill: pool(2, 1, 2), decode: pool(4, 128, 1) }, { concurrency: 128 })) as DisaggEstimate;
    // A second prefill worker relieves a prefill-bound pair: more output per second, shorter TTFT.
    expect(two.metrics.outputTokPerS).toBeGreaterThan(one.metrics.outputTokPerS);
    expect(two.metrics.ttftMs).toBeLessThan(one.metrics.ttftMs);
  });
});
