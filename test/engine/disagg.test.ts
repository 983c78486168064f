import { describe, expect, it } from 'vitest';
import { estimateDisagg, isRefusal, layoutRule } from '../../src/engine/index.js';
import { DISAGG_HANDOFF_MS, disaggMemory, disaggPoint, prefillBatchCap, sizeUnrecordedPools, wideEpLayout } from '../../src/engine/disagg.js';
import { backendProfile, streamTtftMs } from '../../src/engine/backends.js';
import { acceptedPerStep, decodeTpotMs } from '../../src/engine/speculation.js';

const MTP_ACCEPTANCE = 0.85;
import { decodeStepMs, hostOverheadMs } from '../../src/engine/steps.js';
import { estimateRow } from '../../src/engine/rows.js';
import type { DisaggEstimate, MemoryPicture } from '../../src/engine/types.js';
import { pool, testCtx } from './helpers.js';

function ok<T>(e: T | { refused: true; reason: string }): T {
  if (isRefusal(e)) throw new Error(`unexpected refusal: ${e.reason}`);
  return e as T;
}

describe('disagg prefill batching and queueing', () => {
  const ctx = testCtx('meta-llama/Llama-3.1-70B', { gemm: 'fp8', kv: 'fp8', workload: { isl: 1000, osl: 500 } });
  it('a prefill step packs waiting prompts up to the token budget of each dp rank', () => {
    expect(prefillBatchCap(ctx, pool(4, 1, 1))).toBe(8); // 8192 tokens / 1000
    expect(prefillBatchCap(ctx, pool(4, 1, 1, { maxNumTokens: 16384 }))).toBe(16);
    expect(prefillBatchCap(ctx, pool(4, 12, 1))).toBe(12); // a recorded batch above the budget stands
    const long = { ...ctx, workload: { isl: 20000, osl: 500, prefix: 0 } };
    expect(prefillBatchCap(long, pool(4, 1, 1))).toBe(1);
  });
  it('TTFT grows with the clients sharing one prefill worker, and a second worker relieves it', () => {
    const cfg = (pw: number) => ({ prefill: pool(4, 1, pw), decode: pool(4, 256, 1) });
    const at = (c: number, pw = 1) => ok(estimateDisagg(ctx, cfg(pw), { concurrency: c })) as DisaggEstimate;
    expect(at(64).metrics.ttftMs).toBeGreaterThan(at(4).metrics.ttftMs);
    expect(at(256).metrics.ttftMs).toBeGreaterThan(at(64).metrics.ttftMs);
    expect(at(256, 2).metrics.ttftMs).toBeLessThan(at(256).metrics.ttftMs);
  });
  it('a lone request pays the request overhead, the handoff, its stream, its prefill, the KV transfer and the join to the decode batch', () => {
    const cfg = { prefill: pool(4, 1, 1), decode: pool(4, 64, 1) };
    const mem = disaggMemory(ctx, cfg) as { prefill: MemoryPicture; decode: MemoryPicture };
    const p = disaggPoint(ctx, cfg, 1, mem);
    const prof = backendProfile('vllm', '0.12.0', ctx.system.gpu);
    const streams = streamTtftMs(prof, p.decodeRunning, 1);
    expect(p.ttftMs).toBeCloseTo(prof.requestOverheadMs + DISAGG_HANDOFF_MS + streams + p.prefillQueueMs + p.prefillMs + p.kvTransferMs + 1.5 * p.tpotMs, 6);
  });
  it('a prefill worker that more than one prompt reaches per single-prompt step runs full steps', () => {
    const cfg = { prefill: pool(4, 1, 2), decode: pool(4, 256, 4) };
    const mem = disaggMemory(ctx, cfg) as { prefill: MemoryPicture; decode: MemoryPicture };
    const p = disaggPoint(ctx, cfg, 768, mem);
    const single = disaggPoint(ctx, cfg, 1, mem).prefillMs;
    expect((p.requestsPerS / 1000 / 2) * single).toBeGreaterThan(1);
    // Prompts pile up while a step runs, the next step is longer, more pile up: the steps fill their budget
    // (8 prompts of 1000 tokens), not the two that arrive during a single-prompt step.
    expect(p.bound).toBe('prefill');
    expect(p.prefillMs).toBeGreaterThan(4 * single);
  });
  it('the decode batch settles where Little law holds on each decode worker', () => {
    const cfg = { prefill: pool(4, 1, 2), decode: pool(4, 512, 2) };
    const mem = disaggMemory(ctx, cfg) as { prefill: MemoryPicture; decode: MemoryPicture };
    const p = disaggPoint(ctx, cfg, 256, mem);
    // Clients are either decoding or waiting for their first token: running x workers ~= clients x decode share.
    const decodeShare = ((ctx.workload.osl - 1) * p.tpotMs) / p.requestLatencyMs;
    expect(p.decodeRunning * 2).toBeGreaterThan(0.9 * 256 * decodeShare);
    expect(p.decodeRunning * 2).toBeLessThanOrEqual(256);
  });
});

describe('recorded layouts and deployments', () => {
  const ds = testCtx('deepseek-ai/DeepSeek-V3', { system: 'b200_sxm', backend: 'trtllm', version: '1.2.0rc5', workload: { isl: 1024, osl: 1024 } });
  it('a MoE tp that cannot shard attention within a board ran attention data parallel', () => {
    // Experts sharded by tp over 72 GPUs ran expert parallel (redundant slots: 256 experts over 72 GPUs).
    const wide = wideEpLayout(ds, pool(72, 64, 1, { moeTp: 72, moeEp: 1 }));
    expect([wide.tp, wide.dp, wide.moeTp, wide.moeEp]).toEqual([1, 72, 1, 72]);
    const ep = wideEpLayout(ds, pool(32, 64, 1, { moeTp: 1, moeEp: 32 }));
    expect([ep.tp, ep.dp, ep.moeEp]).toEqual([1, 32, 32]);
    // vLLM runs neither a mixed expert split nor attention dp with expert tp: the estimate refuses such a record.
    const vllm = { ...ds, backend: 'vllm' as const, version: '0.12.0' };
    const v = wideEpLayout(vllm, pool(16, 64, 1, { moeTp: 4, moeEp: 4 }));
    expect(layoutRule(vllm, v, 'decode')).not.toBeNull();
    const board = wideEpLayout(ds, pool(8, 64, 1, { moeTp: 1, moeEp: 8 }));
    expect([board.tp, board.dp]).toEqual([8, 1]);
    const dense = testCtx('meta-llama/Llama-3.1-70B');
    expect(wideEpLayout(dense, pool(16, 8, 1)).tp).toBe(16);
  });
  it('blank worker counts: decode workers hold every client, prefill workers keep up with them', () => {
    const cfg = { prefill: pool(8, 1, 1, { moeTp: 1, moeEp: 8 }), decode: pool(8, 20000, 1, { moeTp: 1, moeEp: 8 }) };
    const sized = sizeUnrecordedPools(ds, cfg, 20000);
    const mem = disaggMemory(ds, sized) as { prefill: MemoryPicture; decode: MemoryPicture };
    expect(sized.decode.workers).toBeGreaterThan(1);
    expect(sized.decode.batchSize * sized.decode.workers).toBeGreaterThanOrEqual(20000);
    expect(sized.decode.batchSize).toBeLessThanOrEqual(mem.decode.maxSequences);
    expect(sized.prefill.workers).toBeGreaterThan(1);
    // A light load keeps the recorded single workers.
    const light = sizeUnrecordedPools(ds, { ...cfg, decode: { ...cfg.decode, batchSize: 4 } }, 4);
    expect([light.prefill.workers, light.decode.workers]).toEqual([1, 1]);
  });
  it('estimateRow sizes a row without worker counts instead of queueing every client on one worker', () => {
    const row = {
      mode: 'disagg', isl: '1024', osl: '1024', silicon_data_source: 'x; silicon_concurrency=4096',
      prefill_tp_size: '8', prefill_pp_size: '1', prefill_attention_dp_size: '1', prefill_moe_tp_size: '1', prefill_moe_ep_size: '8',
      decode_tp_size: '8', decode_pp_size: '1', decode_attention_dp_size: '1', decode_moe_tp_size: '1', decode_moe_ep_size: '8',
    };
    const inp = { model: ds.model, system: ds.system, backend: ds.backend, version: ds.version, perf: ds.perf };
    const blank = ok(estimateRow(row, inp)) as DisaggEstimate;
    const one = ok(estimateRow({ ...row, prefill_num_workers: '1', decode_num_workers: '1' }, inp)) as DisaggEstimate;
    expect(blank.config.decode.workers).toBeGreaterThan(1);
    expect(blank.metrics.ttftMs).toBeLessThan(one.metrics.ttftMs);
  });
});

describe('multi-token prediction in the decode pool', () => {
  const trt = testCtx('deepseek-ai/DeepSeek-V3', { system: 'b200_sxm', backend: 'trtllm', version: '1.2.0rc5', workload: { isl: 1024, osl: 1024 } });
  const L = { tp: 8, pp: 1, dp: 1, moeTp: 1, moeEp: 8 };
  it('tokens per step follow the acceptance of each position given the ones before it', () => {
    expect(acceptedPerStep({ acceptRates: [0.85] })).toBeCloseTo(0.85, 9);
    expect(acceptedPerStep({ acceptRates: [0.5, 0.5, 0.5] })).toBeCloseTo(0.875, 9);
  });
  it('speculation divides the step over the accepted tokens and prices the verify batch', () => {
    const plain = decodeTpotMs(trt, L, 8, 1500);
    expect(plain).toBeCloseTo(decodeStepMs(trt, L, 8, 1500) + hostOverheadMs(trt, L, 8), 6); // no speculation in the context: one token per step
    const spec = { ...trt, speculation: { method: 'mtp' as const, draft: 1, acceptRates: [MTP_ACCEPTANCE], assumed: false, source: 'given' } };
    const small = decodeTpotMs(spec, L, 8, 1500);
    expect(small).toBeLessThan(plain);
    expect(small).toBeGreaterThan(plain / 2);
    // The verify pass runs (1 + draft) x running tokens over one read of each sequence's KV: dearer than decoding the
    // running sequences, cheaper than as many independent sequences; the draft layer runs once per draft token.
    const verify = decodeStepMs(trt, L, 8, 1500, undefined, 2);
    expect(verify).toBeGreaterThan(decodeStepMs(trt, L, 8, 1500));
    expect(verify).toBeLessThan(decodeStepMs(trt, L, 16, 1500));
    const L61 = trt.model.numLayers;
    expect(small).toBeCloseTo(((verify * (L61 + 1)) / L61 + hostOverheadMs(trt, L, 8)) / (1 + MTP_ACCEPTANCE), 6);
  });
});
