import { describe, expect, it } from 'vitest';
import { estimateAgg, estimateDisagg, isRefusal } from '../../src/engine/index.js';
import { adpBalanceWaitMs, aggMemory, aggPoint, burstMeanSteps } from '../../src/engine/agg.js';
import { speculationOf } from '../../src/engine/speculation.js';
import { checkRowNumbers, estimateRow, rowAggConfig, rowAggReplicas } from '../../src/engine/rows.js';
import { backendProfile } from '../../src/engine/backends.js';
import { trtllmReleaseOf } from '../../src/inputs/dynamo-runtime.js';
import { loadSystem } from '../../src/inputs/systems.js';
import type { AggEstimate, DisaggEstimate, MemoryPicture } from '../../src/engine/types.js';
import { agg, pool, testCtx } from './helpers.js';

function ok<T>(e: T | { refused: true; reason: string }): T {
  if (isRefusal(e)) throw new Error(`unexpected refusal: ${e.reason}`);
  return e as T;
}

describe('scheduler details of aggregated serving', () => {
  it("SGLang's default chunked prefill follows the GPU's memory from 0.5.6 (8k on H100 / H200, 16k on B200, 4k on L40S)", () => {
    const chunk = (system: string, version: string) => backendProfile('sglang', version, loadSystem(system).gpu).maxNumTokens;
    expect(chunk('h100_sxm', '0.5.9')).toBe(8192);
    expect(chunk('h200_sxm', '0.5.9')).toBe(8192);
    expect(chunk('b200_sxm', '0.5.9')).toBe(16384);
    expect(chunk('gb200_sxm', '0.5.9')).toBe(16384);
    expect(chunk('l40s', '0.5.9')).toBe(4096);
    expect(chunk('b200_sxm', '0.5.1')).toBe(8192);
    // TRT-LLM does not depend on the GPU.
    expect(backendProfile('trtllm', '1.2.0rc5', loadSystem('l40s').gpu).maxNumTokens).toBe(backendProfile('trtllm', '1.2.0rc5', loadSystem('b200_sxm').gpu).maxNumTokens);
  });
  it("TRT-LLM's request overhead by release: 30 ms from 1.2 (Dynamo image tags run the release they ship), 100 on 1.0, 70 between", () => {
    const gpu = loadSystem('b200_sxm').gpu;
    const overhead = (version: string) => backendProfile('trtllm', version, gpu).requestOverheadMs;
    expect(overhead('1.2.0rc5')).toBe(30);
    expect(overhead('0.8.1.post2')).toBe(30); // Dynamo 0.8.1 ships TRT-LLM 1.2.0rc6.post1
    expect(overhead('1.0.0rc3')).toBe(100);
    expect(overhead('1.1.0rc2.post2')).toBe(70);
    expect(overhead('0.5.1-rc0.pre3')).toBe(70); // an image we have no record of runs as named
    expect(trtllmReleaseOf('0.7.0.post2')).toBe('1.2.0rc2');
    expect(trtllmReleaseOf('1.3.0rc5')).toBe('1.3.0rc5');
  });
  it("vLLM's server defaults: 8k tokens and 1024 sequences on large GPUs, 2k and 256 on the A100 and smaller ones", () => {
    const prof = (system: string) => backendProfile('vllm', '0.19.0', loadSystem(system).gpu);
    for (const s of ['h100_sxm', 'h200_sxm', 'b200_sxm']) expect(prof(s)).toMatchObject({ maxNumTokens: 8192, maxBatchSize: 1024 });
    for (const s of ['a100_sxm', 'l40s']) expect(prof(s)).toMatchObject({ maxNumTokens: 2048, maxBatchSize: 256 });
  });

  it("SGLang's --scheduler-recv-interval: a new prompt waits (R - 1) / 2 more steps to be taken in; decode is unchanged", () => {
    const ctx = testCtx('meta-llama/Llama-3.1-70B', { system: 'b200_sxm', backend: 'sglang', version: '0.5.9', gemm: 'fp8', kv: 'fp8', workload: { isl: 1024, osl: 1024 } });
    const cfg = agg(4, 64);
    const at = (r: number | undefined) => {
      const c = r === undefined ? ctx : { ...ctx, schedulerRecvInterval: r };
      return aggPoint(c, cfg, 64, aggMemory(c, cfg) as MemoryPicture);
    };
    const every = at(undefined);
    const thirty = at(30);
    expect(at(1)).toEqual(every);
    const tpot = every.tpotMs;
    expect(thirty.ttftParts.stepInFlight - every.ttftParts.stepInFlight).toBeGreaterThan(13 * tpot);
    expect(thirty.ttftParts.stepInFlight - every.ttftParts.stepInFlight).toBeLessThan(16 * tpot);
    expect(Math.abs(thirty.tpotMs / tpot - 1)).toBeLessThan(0.05);
  });

  it('a prompt just over the token budget costs about one prompt of prefill, not two full chunks', () => {
    const at = (isl: number) => {
      const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8', kv: 'fp8', workload: { isl, osl: 256 } });
      const cfg = agg(8, 1);
      return aggPoint(ctx, cfg, 1, aggMemory(ctx, cfg) as MemoryPicture).ttftParts.prefill;
    };
    const below = at(8000);
    const over = at(8300); // 2 chunks under an 8192 budget
    expect(over).toBeGreaterThan(below);
    expect(over).toBeLessThan(below * 1.3);
  });

  it('a burst of prompts is done, on average, at the mean of each prompt\'s completion step', () => {
    // Four prompts to a step: five prompts finish at steps 1, 1, 1, 1, 2; eight at four 1s and four 2s.
    expect(burstMeanSteps(5, 1 / 4)).toBeCloseTo(1.2, 9);
    // Whole prompts to a step take a closed form; it agrees with prompt-by-prompt counting.
    for (const [n, g] of [[1, 1], [7, 3], [4096, 8], [1000, 7], [15, 16]]) {
      let sum = 0;
      for (let i = 1; i <= n; i++) sum += Math.ceil(i / g);
      expect(burstMeanSteps(n, 1 / g)).toBeCloseTo(sum / n, 9);
    }
    expect(burstMeanSteps(8, 1 / 4)).toBeCloseTo(1.5, 9);
    expect(burstMeanSteps(3, 1 / 3)).toBe(1);
    // One prompt just over the budget takes two steps; two of them three steps (packed), not four.
    expect(burstMeanSteps(1, 8300 / 8192)).toBe(2);
    expect(burstMeanSteps(2, 8300 / 8192)).toBe(2.5);
  });
  it("the first round's burst of prompts longer than the budget runs full-budget steps, not steps of one chunk", () => {
    const at = (isl: number) => {
      const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8', kv: 'fp8', workload: { isl, osl: 1024 } });
      const cfg = agg(8, 32);
      return aggPoint(ctx, cfg, 32, aggMemory(ctx, cfg) as MemoryPicture).ttftMs;
    };
    // 8300 tokens are two chunks under an 8192 budget; the burst packs 32 x 8300 tokens into full steps, so the
    // TTFT grows with the prompt rather than dropping to a burst of half-budget steps.
    const below = at(8000);
    const over = at(8300);
    expect(over).toBeGreaterThan(below);
    expect(over).toBeLessThan(below * 1.3);
  });

  it('prefill-first lockstep (SGLang < 0.5.6): the burst lengthens TPOT, and TTFT is the mean position in the burst', () => {
    const ctx = testCtx('Qwen/Qwen3-32B', { backend: 'sglang', version: '0.5.1', workload: { isl: 4096, osl: 128 } });
    const cfg = agg(8, 128);
    const mem = aggMemory(ctx, cfg) as MemoryPicture;
    const p = aggPoint(ctx, cfg, 128, mem);
    // 128 prompts of 4096 tokens at 8192 per step: 64 prefill steps per round.
    expect(p.tpotMs).toBeGreaterThan(p.decodeStepMs * 1.5);
    const burst = 64 * p.mixedStepMs;
    expect(p.ttftMs).toBeGreaterThan(0.4 * burst);
    expect(p.ttftMs).toBeLessThan(0.7 * burst);
    // The round (burst + decode) is the request latency.
    expect(p.requestLatencyMs).toBeGreaterThan(burst);
  });

  it('in steady state each prompt rides on a decode step of its own: TPOT pays one mixed step per prompt', () => {
    // 16 clients with 1024 output tokens: about one prompt arrives per step, so a mixed step carries one
    // prompt and its fixed costs (every expert's weights at prefill sizes) are not shared by eight prompts.
    const ctx = testCtx('Qwen/Qwen3-30B-A3B', { backend: 'trtllm', version: '1.2.0rc5', workload: { isl: 1024, osl: 1024 } });
    const cfg = { tp: 1, pp: 1, dp: 1, moeTp: 1, moeEp: 1, batchSize: 16, maxNumTokens: 8192 };
    const p = aggPoint(ctx, cfg, 16, aggMemory(ctx, cfg) as MemoryPicture);
    // A request lives 1023 decode iterations and one prefill iteration.
    const perPrompt = (p.tpotMs - p.decodeStepMs) * 1024 / 16;
    // mixedStepMs prices eight prompts in one step (the full budget); one prompt alone costs more than an eighth.
    const packed = (p.mixedStepMs - p.decodeStepMs) / 8;
    expect(perPrompt).toBeGreaterThan(1.5 * packed);
    // With attention data parallelism the engine batches prompts across ranks: priced packed.
    const dp = { ...cfg, tp: 1, dp: 2, moeEp: 2, batchSize: 32 };
    const q = aggPoint(ctx, dp, 32, aggMemory(ctx, dp) as MemoryPicture);
    const perPromptDp = (q.tpotMs - q.decodeStepMs) * 1024 / 32;
    const packedDp = (q.mixedStepMs - q.decodeStepMs) / 16; // about 16 prompts fill the two ranks' budgets
    expect(perPromptDp).toBeGreaterThan(0.9 * packedDp);
    expect(perPromptDp).toBeLessThan(1.1 * packedDp);
  });

  it('a new prompt arrives during a long mixed step more often than its share of the steps', () => {
    const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8', kv: 'fp8', workload: { isl: 8000, osl: 100 } });
    const cfg = agg(4, 64);
    const mem = aggMemory(ctx, cfg) as MemoryPicture;
    const busy = aggPoint(ctx, cfg, 64, mem);
    // 64 prompts of 8000 tokens per 100-token lifetime: most of the time is spent in steps that carry a prompt,
    // so the step in flight is most likely a long one, not a decode step.
    expect(busy.ttftParts.stepInFlight).toBeGreaterThan(0.25 * busy.mixedStepMs);
    // One client: its own prompt is the only one, so it waits for half a decode step.
    const idle = aggPoint(ctx, cfg, 1, mem);
    expect(idle.ttftParts.stepInFlight).toBeLessThan(idle.mixedStepMs / 50);
  });
  it('SGLang 0.5.6+ (1.5 ms), TRT-LLM and vLLM (0.5 ms) add TTFT per stream each scheduler rank serves; SGLang lockstep releases do not', () => {
    const request = (backend: 'sglang' | 'vllm' | 'trtllm', version: string, clients: number, model = 'meta-llama/Llama-3.1-8B', dp = 1) => {
      const ctx = testCtx(model, { backend, version, workload: { isl: 1000, osl: 1000 } });
      const cfg = { ...agg(1, 256), dp, moeEp: dp };
      const p = aggPoint(ctx, cfg, clients, aggMemory(ctx, cfg) as MemoryPicture);
      return { request: p.ttftParts.request, running: p.running };
    };
    const busy = request('sglang', '0.5.9', 256);
    expect(busy.request - request('sglang', '0.5.9', 1).request).toBeCloseTo(1.5 * (busy.running - 1), 6);
    expect(request('sglang', '0.5.1', 256).request).toBe(request('sglang', '0.5.1', 1).request);
    const vllm = request('vllm', '0.12.0', 256);
    expect(vllm.request - request('vllm', '0.12.0', 1).request).toBeCloseTo(0.5 * (vllm.running - 1), 6);
    const trt = request('trtllm', '1.2.0rc5', 256);
    expect(trt.request - request('trtllm', '1.2.0rc5', 1).request).toBeCloseTo(0.5 * (trt.running - 1), 6);
    // Four attention-dp ranks each schedule a quarter of the streams.
    const ranks = request('sglang', '0.5.9', 256, 'Qwen/Qwen3-30B-A3B', 4);
    expect(ranks.request - request('sglang', '0.5.9', 1, 'Qwen/Qwen3-30B-A3B', 4).request).toBeCloseTo((1.5 * (ranks.running - 1)) / 4, 6);
  });
  it("TRT-LLM's attention-DP balancing: a prompt waits for every rank to have one, at most the 60-step timeout (half of it on average)", () => {
    const gpu = loadSystem('b200_sxm').gpu;
    const trt = backendProfile('trtllm', '1.2.0rc5', gpu);
    // Slow arrivals (0.5 per s over 8 ranks) wait half the timeout of 60 steps of 20 ms; fast ones (50 per ms) for 3.5 more.
    expect(adpBalanceWaitMs(trt, 8, 64, 0.0005, 20)).toBeCloseTo(30 * 20, 9);
    expect(adpBalanceWaitMs(trt, 8, 64, 50, 20)).toBeCloseTo(7 / 100, 9);
    // A rank left without decoding work releases at once: one stream per rank never waits, 1.5 per rank half the time.
    expect(adpBalanceWaitMs(trt, 8, 8, 0.0005, 20)).toBe(0);
    expect(adpBalanceWaitMs(trt, 8, 12, 0.0005, 20)).toBeCloseTo(15 * 20, 9);
    expect(adpBalanceWaitMs(trt, 1, 64, 0.0005, 20)).toBe(0);
    // TRT-LLM's LLM API takes attention_dp_config from 1.1: the 1.0 line never holds prompts.
    expect(adpBalanceWaitMs(backendProfile('trtllm', '1.0.0rc3', gpu), 8, 64, 0.0005, 20)).toBe(0);
    // vLLM and SGLang have no such hold.
    expect(adpBalanceWaitMs(backendProfile('vllm', '0.12.0', gpu), 8, 64, 0.0005, 20)).toBe(0);
    expect(adpBalanceWaitMs(backendProfile('sglang', '0.5.9', gpu), 8, 64, 0.0005, 20)).toBe(0);
    // In an aggregated TRT-LLM server with 8 ranks of 32 long-output streams each, arrivals are slow: about 30 steps.
    const point = (backend: 'trtllm' | 'vllm', clients: number) => {
      const ctx = testCtx('Qwen/Qwen3-30B-A3B', { system: 'b200_sxm', backend, version: backend === 'trtllm' ? '1.2.0rc5' : '0.12.0', workload: { isl: 1024, osl: 8192 } });
      const cfg = agg(1, 256, { dp: 8, moeTp: 1, moeEp: 8 });
      return aggPoint(ctx, cfg, clients, aggMemory(ctx, cfg) as MemoryPicture);
    };
    const busy = point('trtllm', 256);
    expect(busy.ttftParts.balance).toBeGreaterThan(30 * busy.decodeStepMs);
    expect(busy.ttftParts.balance).toBeLessThan(1.2 * 30 * busy.decodeStepMs);
    expect(point('trtllm', 8).ttftParts.balance).toBe(0);
    expect(point('vllm', 256).ttftParts.balance).toBe(0);
  });
  it('the parts of TTFT sum to it, in agg (continuous batching, lockstep, attention-DP balancing) and disagg', () => {
    const sum = (parts: object) => Object.values(parts).reduce((a: number, v: number) => a + v, 0);
    const cases: Array<[string, 'vllm' | 'sglang' | 'trtllm', string, number]> = [
      ['Qwen/Qwen3-32B', 'vllm', '0.12.0', 1], ['Qwen/Qwen3-32B', 'vllm', '0.12.0', 300], ['Qwen/Qwen3-32B', 'sglang', '0.5.1', 64],
      ['Qwen/Qwen3-30B-A3B', 'trtllm', '1.2.0rc5', 256],
    ];
    for (const [model, backend, version, clients] of cases) {
      const ctx = testCtx(model, { backend, version, workload: { isl: 4000, osl: 500 } });
      const cfg = model.includes('A3B') ? agg(1, 256, { dp: 4, moeTp: 1, moeEp: 4 }) : agg(2, 128);
      const e = ok(estimateAgg(ctx, cfg, { concurrency: clients })) as AggEstimate;
      expect(sum(e.ttftParts), `${backend} ${clients}`).toBeCloseTo(e.metrics.ttftMs, 6);
      expect(Object.values(e.ttftParts).every((v) => v >= 0)).toBe(true);
    }
    const ctx = testCtx('Qwen/Qwen3-32B', { workload: { isl: 4000, osl: 500 } });
    for (const clients of [1, 64, 400]) {
      const d = ok(estimateDisagg(ctx, { prefill: pool(2, 1, 1), decode: pool(4, 128, 1) }, { concurrency: clients })) as DisaggEstimate;
      expect(sum(d.ttftParts), `disagg ${clients}`).toBeCloseTo(d.metrics.ttftMs, 6);
      expect(d.ttftParts.kvTransfer).toBeCloseTo(d.kvTransferMs, 9);
    }
  });
  it('SGLang pays host time per running request', () => {
    const ctx = testCtx('meta-llama/Llama-3.1-8B', { backend: 'sglang', version: '0.5.9' });
    const vctx = testCtx('meta-llama/Llama-3.1-8B', { backend: 'vllm', version: '0.12.0' });
    const s = ok(estimateAgg(ctx, agg(1, 256))) as AggEstimate;
    const v = ok(estimateAgg(vctx, agg(1, 256))) as AggEstimate;
    expect(s.metrics.tpotMs).toBeGreaterThan(v.metrics.tpotMs);
  });
});

describe('speculative decoding (MTP) in aggregated serving', () => {
  const ctx = testCtx('deepseek-ai/DeepSeek-V3', { backend: 'trtllm', version: '1.2.0rc5', kv: 'fp8', workload: { isl: 1024, osl: 1024 } });
  const cfg = { tp: 8, pp: 1, dp: 1, moeTp: 1, moeEp: 8, batchSize: 16, maxNumTokens: 8192 };
  const mem = aggMemory(ctx, cfg) as MemoryPicture;
  it('is off unless the context asks for it', () => {
    expect(speculationOf(ctx)).toEqual({ draft: 0, perStep: 1 });
  });
  it('a draft position counts only when the ones before it were accepted', () => {
    expect(speculationOf({ ...ctx, speculation: { method: 'mtp', draft: 3, acceptRates: [0.5, 0.5, 0.5], assumed: false, source: 'given' } }).perStep).toBeCloseTo(1.875, 9);
  });
  it('emits more than one token per step: TPOT below the (heavier) step time, and below plain decoding', () => {
    const plain = aggPoint(ctx, cfg, 16, mem);
    const sctx = { ...ctx, speculation: { method: 'mtp' as const, draft: 3, acceptRates: [0.7, 0.7, 0.7], assumed: false, source: 'given' } };
    const p = aggPoint(sctx, cfg, 16, mem);
    expect(p.decodeStepMs).toBeGreaterThan(plain.decodeStepMs);
    expect(p.tpotMs).toBeLessThan(p.decodeStepMs);
    expect(p.tpotMs).toBeLessThan(plain.tpotMs);
    expect(p.requestLatencyMs).toBeCloseTo(p.ttftMs + 1023 * p.tpotMs, 6);
  });
});

describe('e2e rows: benchmark concurrency spread over replicas', () => {
  const base = { mode: 'agg', tp_size: '2', attention_dp_size: '', moe_tp_size: '', moe_ep_size: '', batch_size: '16' };
  it('concurrency a multiple of batch_size means that many replicas of batch_size clients each', () => {
    const row = { ...base, silicon_data_source: 'x; silicon_concurrency=64; y' };
    expect(rowAggReplicas(row)).toBe(4);
    expect(rowAggConfig(row, 'trtllm', '1.2.0rc5', loadSystem('h100_sxm').gpu).batchSize).toBe(16);
  });
  it('tp recorded as moe_tp x moe_ep with moe_tp = moe_ep reads as moe_ep GPUs of expert parallelism', () => {
    const row = { mode: 'agg', tp_size: '64', attention_dp_size: '1', moe_tp_size: '8', moe_ep_size: '8', batch_size: '16', silicon_data_source: 'silicon_concurrency=16' };
    expect(rowAggConfig(row, 'trtllm', '1.2.0rc5', loadSystem('h100_sxm').gpu)).toMatchObject({ tp: 8, dp: 1, moeTp: 1, moeEp: 8, batchSize: 16 });
    const dpRow = { ...row, tp_size: '1', attention_dp_size: '64', batch_size: '4', silicon_data_source: 'silicon_concurrency=256' };
    expect(rowAggConfig(dpRow, 'trtllm', '1.2.0rc5', loadSystem('h100_sxm').gpu)).toMatchObject({ tp: 1, dp: 8, moeTp: 1, moeEp: 8, batchSize: 256 });
    expect(rowAggReplicas(dpRow)).toBe(1);
  });
  it('a row stating scheduler_recv_interval is priced with it (TTFT), whatever its provenance says', () => {
    const c = testCtx('meta-llama/Llama-3.1-70B', { system: 'b200_sxm', backend: 'sglang', version: '0.5.9' });
    const inp = { model: c.model, system: c.system, backend: c.backend, version: c.version, perf: c.perf };
    const row = { ...base, backend: 'sglang', backend_version: '0.5.9', system: 'b200_sxm', precision: 'fp8', isl: '1024', osl: '1024', batch_size: '64', silicon_data_source: 'silicon_concurrency=64' };
    const ttft = (r: Record<string, string>) => {
      const e = estimateRow(r, inp);
      if (isRefusal(e)) throw new Error(e.reason);
      return e.metrics.ttftMs;
    };
    const plain = ttft(row);
    expect(ttft({ ...row, scheduler_recv_interval: '30' })).toBeGreaterThan(plain * 1.5);
    expect(ttft({ ...row, silicon_data_source: 'silicon_concurrency=64; --scheduler-recv-interval 30' })).toBe(plain);
  });
  it("a row stating gpu_memory_fraction sizes the KV cache with it instead of the engine's default", () => {
    const c = testCtx('meta-llama/Llama-3.1-70B', { system: 'h200_sxm', backend: 'sglang', version: '0.5.9' });
    const inp = { model: c.model, system: c.system, backend: c.backend, version: c.version, perf: c.perf };
    const row = { ...base, backend: 'sglang', backend_version: '0.5.9', system: 'h200_sxm', precision: 'fp8', isl: '1024', osl: '1024', batch_size: '8', silicon_data_source: 'silicon_concurrency=8' };
    const kvGiB = (r: Record<string, string>) => {
      const e = estimateRow(r, inp);
      if (isRefusal(e)) throw new Error(e.reason);
      return (e.memory as MemoryPicture).kvCacheGiB;
    };
    const capacity = c.system.gpu.memGiB;
    // 10 points of the GPU's memory fewer for the server, all of them out of the KV cache.
    expect(kvGiB({ ...row, gpu_memory_fraction: '0.8' })).toBeCloseTo(kvGiB({ ...row, gpu_memory_fraction: '0.9' }) - 0.1 * capacity, 6);
    expect(kvGiB({ ...row, gpu_memory_fraction: '' })).toBeGreaterThan(kvGiB({ ...row, gpu_memory_fraction: '0.8' }));
    for (const v of ['0', '1', '85', 'most']) {
      expect(() => checkRowNumbers({ ...row, gpu_memory_fraction: v }, 'f.csv line 5')).toThrow(`f.csv line 5, column "gpu_memory_fraction": ${JSON.stringify(v)} is not blank (the engine's default) or a fraction between 0 and 1 (exclusive)`);
    }
  });
  it('concurrency equal to batch_size is one replica', () => {
    const row = { ...base, silicon_data_source: 'silicon_concurrency=16' };
    expect(rowAggReplicas(row)).toBe(1);
    expect(rowAggConfig(row, 'trtllm', '1.2.0rc5', loadSystem('h100_sxm').gpu).batchSize).toBe(16);
  });
});
