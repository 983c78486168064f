import { describe, expect, it } from 'vitest';
import { answerLines } from '../../src/perf/query.js';

describe('perf query', () => {
  it('adds latency_ms to each line, or an error, in input order', async () => {
    const lines = [
      JSON.stringify({ system: 'h200_sxm', backend: 'vllm', version: '0.19.0', op: 'gemm', dtype: 'bfloat16', m: 128, n: 4096, k: 4096 }),
      JSON.stringify({ system: 'h200', backend: 'sglang', op: 'generation_attention', batch: 8, kv_len: 2048, heads: 8, kv_heads: 1, head_dim: 128, kv_dtype: 'fp8', window: 0 }),
      JSON.stringify({ system: 'b200_sxm', backend: 'trtllm', op: 'moe', dtype: 'nvfp4', tokens: 64, hidden: 7168, inter: 2048, topk: 8, experts: 256, moe_tp: 1, moe_ep: 8 }),
      JSON.stringify({ system: 'h100_sxm', backend: 'vllm', op: 'nccl', collective: 'all_gather', dtype: 'bfloat16', gpus: 4, elements: 1 << 20 }),
      JSON.stringify({ system: 'h100_sxm', backend: 'vllm', op: 'allreduce', dtype: 'bfloat16', gpus: 4, elements: 1 << 20 }),
      JSON.stringify({ system: 'nope', backend: 'vllm', op: 'gemm', m: 1, n: 1, k: 1 }),
      JSON.stringify({ system: 'h100_sxm', backend: 'vllm', op: 'conv' }),
      JSON.stringify({ system: 'h100_sxm', backend: 'vllm', version: '0.0.1', op: 'gemm', m: 1, n: 1, k: 1 }),
      '',
      '[1,2]',
    ];
    const out = (await answerLines(lines)).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(out).toHaveLength(9);
    for (const o of out.slice(0, 5)) expect(o.latency_ms as number).toBeGreaterThan(0);
    expect(out[0]!.m).toBe(128);
    expect(String(out[5]!.error)).toMatch(/unknown system "nope"/);
    expect(String(out[6]!.error)).toMatch(/op "conv" is not one of/);
    expect(String(out[7]!.error)).toMatch(/not supported/);
    expect(out[8]!.error).toBe('not a JSON object');
  });
});

describe('perf query, expert routing', () => {
  it('prices a skewed routing apart from the balanced one and names an unknown routing', async () => {
    const q = (o: Record<string, unknown>) => JSON.stringify({ system: 'h200_sxm', backend: 'vllm', version: '0.19.0', op: 'moe', dtype: 'fp8_block',
      hidden: 7168, inter: 2048, topk: 8, experts: 256, moe_tp: 1, moe_ep: 8, ...o });
    const out = (await answerLines([
      q({ tokens: 8192 }), q({ tokens: 8192, distribution: 'balanced' }), q({ tokens: 8192, distribution: 'power_law_1.2' }), q({ tokens: 8192, distribution: 'zipf' }),
      // A100 was measured under power-law routing only.
      q({ system: 'a100_sxm', version: undefined, dtype: 'bfloat16', tokens: 256, distribution: 'balanced' }),
    ])).map((l) => JSON.parse(l) as Record<string, unknown>);
    const ms = out.map((o) => o.latency_ms as number);
    expect(ms[0]).toBe(ms[1]);
    // Skewed routing piles a large batch onto the hot experts (and the GPU holding them): slower than balanced.
    expect(ms[2]).toBeGreaterThan(ms[1]! * 1.2);
    expect(String(out[3]!.error)).toMatch(/field "distribution" must be one of balanced, power_law_1.01, power_law_1.2/);
    expect(String(out[4]!.error)).toMatch(/hold no balanced routing \(they hold power_law_1.01, power_law_1.2\)/);
  });
});

describe('perf query, DeepSeek-style attention modules', () => {
  it('prices an MLA module with DeepSeek-V3 dimensions by default, more work costing more, and names a bad phase', async () => {
    const q = (o: Record<string, unknown>) => JSON.stringify({ system: 'h200_sxm', backend: 'trtllm', op: 'mla', dtype: 'fp8_block', kv_dtype: 'fp8', ...o });
    const out = (await answerLines([
      q({ phase: 'generation', batch: 8, seq: 2048, heads: 16 }),
      q({ phase: 'generation', batch: 64, seq: 2048, heads: 16 }),
      q({ phase: 'context', batch: 1, seq: 4096, heads: 16 }),
      q({ phase: 'context', batch: 1, seq: 8192, heads: 16 }),
      q({ phase: 'decode', seq: 2048, heads: 16 }),
    ])).map((l) => JSON.parse(l) as Record<string, unknown>);
    const ms = out.map((o) => o.latency_ms as number);
    expect(ms[1]).toBeGreaterThan(ms[0]!);
    expect(ms[3]).toBeGreaterThan(ms[2]!);
    expect(String(out[4]!.error)).toMatch(/field "phase" must be "context" or "generation"/);
  });
});
