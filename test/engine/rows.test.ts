import { describe, expect, it } from 'vitest';
import { checkRowNumbers, parseCsv, releaseOfBuild, rowAggConfig, rowConcurrency, rowDisaggConfig, rowDtypes, rowRecvInterval } from '../../src/engine/rows.js';
import { InputError } from '../../src/util/errors.js';
import { findBundled } from '../../src/inputs/registry.js';
import { loadSystem } from '../../src/inputs/systems.js';

describe('e2e rows', () => {
  it('parses quoted CSV fields with commas, quotes and CRLF', () => {
    const { header, rows } = parseCsv('a,b,c\r\n1,"x, ""y""",3\r\n4,,6\n');
    expect(header).toEqual(['a', 'b', 'c']);
    expect(rows).toEqual([{ a: '1', b: 'x, "y"', c: '3' }, { a: '4', b: '', c: '6' }]);
  });
  it('gives the file line of each row', () => {
    expect(parseCsv('a,b\n1,2\n\n3,4\n').lines).toEqual([2, 4]);
  });
  it('a malformed number is an input error naming the column; blank and 0 counts keep their defaults', () => {
    const ok = { isl: '4000', osl: '500', batch_size: '', tp_size: '2', attention_dp_size: '0', moe_ep_size: '8.0' };
    expect(() => checkRowNumbers(ok, 'f.csv line 2')).not.toThrow();
    for (const [col, v] of [['isl', 'abc'], ['isl', ''], ['osl', '0'], ['batch_size', '-8'], ['tp_size', 'NaN'], ['tp_size', '1e999'], ['moe_ep_size', '8 GPUs']]) {
      const f = () => checkRowNumbers({ ...ok, [col]: v }, 'f.csv line 7');
      expect(f).toThrow(InputError);
      expect(f).toThrow(`f.csv line 7, column "${col}": ${JSON.stringify(v)} is not`);
    }
    // The layout readers refuse what the check refuses, rather than reading it as 1.
    const h100 = loadSystem('h100_sxm').gpu;
    expect(() => rowAggConfig({ mode: 'agg', tp_size: 'two', batch_size: '8', silicon_data_source: '' }, 'vllm', '0.12.0', h100)).toThrow(/column "tp_size": "two" is not a number/);
    expect(rowAggConfig({ mode: 'agg', tp_size: '2', attention_dp_size: '0', batch_size: '', silicon_data_source: '' }, 'vllm', '0.12.0', h100)).toMatchObject({ tp: 2, dp: 1, batchSize: 1 });
  });
  it("kv_cache_dtype: what the row states, auto the checkpoint's own; blank keeps fp8 beside quantized weights", () => {
    const r1 = findBundled('deepseek-ai/DeepSeek-R1')!;
    const fp8 = { precision: 'fp8', gemm_quant_mode: 'fp8', moe_quant_mode: 'fp8' };
    expect(rowDtypes(fp8, r1).kvDtype).toBe('fp8');
    expect(rowDtypes({ ...fp8, kv_cache_dtype: '' }, r1).kvDtype).toBe('fp8');
    expect(rowDtypes({ ...fp8, kv_cache_dtype: 'auto' }, r1).kvDtype).toBe(r1.kvDtype);
    expect(rowDtypes({ ...fp8, kv_cache_dtype: 'BF16' }, r1).kvDtype).toBe('bfloat16');
    expect(rowDtypes({ precision: 'bf16', kv_cache_dtype: 'fp8_e4m3' }, r1).kvDtype).toBe('fp8');
    for (const v of ['int4', 'constructor']) {
      expect(() => checkRowNumbers({ isl: '1', osl: '1', kv_cache_dtype: v }, 'f.csv line 4')).toThrow(`f.csv line 4, column "kv_cache_dtype": ${JSON.stringify(v)} is not blank (the rule for the row's precision) or one of auto, fp8`);
    }
  });
  it('scheduler_recv_interval: blank or 1 is every step; more is SGLang agg only, refused elsewhere with the reason', () => {
    const row = { backend: 'sglang', mode: 'agg', isl: '1024', osl: '1024' };
    expect(rowRecvInterval({ ...row, scheduler_recv_interval: '' })).toBeUndefined();
    expect(rowRecvInterval({ ...row, scheduler_recv_interval: '1' })).toBeUndefined();
    expect(rowRecvInterval({ ...row, scheduler_recv_interval: '30' })).toEqual({ steps: 30 });
    expect(rowRecvInterval({ ...row, backend: 'vllm', scheduler_recv_interval: '30' })).toMatchObject({ refused: true, reason: expect.stringMatching(/SGLang's --scheduler-recv-interval; vllm has no such setting/) });
    expect(rowRecvInterval({ ...row, mode: 'disagg', scheduler_recv_interval: '10' })).toMatchObject({ refused: true, reason: expect.stringMatching(/aggregated SGLang servers only/) });
    for (const v of ['0', '2.5', 'ten', '5000']) {
      expect(() => checkRowNumbers({ ...row, scheduler_recv_interval: v }, 'f.csv line 3')).toThrow(`f.csv line 3, column "scheduler_recv_interval": ${JSON.stringify(v)} is not blank or a whole number of steps from 1 to 1000`);
    }
  });
  it('concurrency: silicon_concurrency when given, else batch_size per attention-dp rank x dp', () => {
    expect(rowConcurrency({ mode: 'disagg', silicon_data_source: 'db; silicon_concurrency=96; x' })).toBe(96);
    expect(rowConcurrency({ mode: 'agg', batch_size: '16', attention_dp_size: '4', silicon_data_source: '' })).toBe(64);
    expect(rowConcurrency({ mode: 'disagg', silicon_data_source: '' })).toBeUndefined();
  });
  it('layouts: batch per dp rank, blank decode batch = concurrency / workers', () => {
    const agg = rowAggConfig({ mode: 'agg', tp_size: '1', attention_dp_size: '8', moe_tp_size: '1', moe_ep_size: '8', batch_size: '32', silicon_data_source: '' }, 'trtllm', '1.2.0rc5', loadSystem('h100_sxm').gpu);
    expect(agg).toMatchObject({ tp: 1, dp: 8, moeTp: 1, moeEp: 8, batchSize: 256 });
    const d = rowDisaggConfig({
      mode: 'disagg', isl: '1024', silicon_data_source: 'silicon_concurrency=64',
      prefill_tp_size: '4', prefill_moe_tp_size: '4', prefill_num_workers: '', prefill_batch_size: '',
      decode_tp_size: '8', decode_moe_tp_size: '1', decode_moe_ep_size: '8', decode_num_workers: '2', decode_batch_size: '',
    }, 'sglang', '0.5.9', loadSystem('h200_sxm').gpu);
    expect(d.prefill).toMatchObject({ tp: 4, workers: 1, batchSize: 1 });
    expect(d.decode).toMatchObject({ tp: 8, moeEp: 8, workers: 2, batchSize: 32 });
  });
  it('a pre-release build runs as the newest supported release before the one it preceded', () => {
    const h200 = loadSystem('h200_sxm').backends.trtllm!.versions;
    // TRT-LLM's day-0 gpt-oss image came from the dev branch ahead of 1.1: the 1.0 line, NCCL all-reduce on Hopper.
    expect(releaseOfBuild('trtllm', 'gpt-oss-dev', h200)).toBe('1.0.0rc3');
    expect(releaseOfBuild('trtllm', 'some-other-image', h200)).toBeUndefined();
  });
  it('weight formats from the quant columns; gpt-oss experts stay mxfp4; fp8 recipes use an fp8 KV cache', () => {
    const llama = findBundled('meta-llama/Llama-3.1-70B')!;
    expect(rowDtypes({ precision: 'fp8', gemm_quant_mode: 'fp8', moe_quant_mode: 'fp8' }, llama)).toEqual({ gemmDtype: 'fp8', moeDtype: 'fp8', kvDtype: 'fp8' });
    expect(rowDtypes({ precision: '', gemm_quant_mode: '', moe_quant_mode: '' }, llama)).toEqual({ gemmDtype: 'bfloat16', moeDtype: 'bfloat16', kvDtype: 'bfloat16' });
    const oss = findBundled('openai/gpt-oss-120b')!;
    expect(rowDtypes({ precision: 'fp4', gemm_quant_mode: 'nvfp4', moe_quant_mode: 'nvfp4' }, oss).moeDtype).toBe('mxfp4');
    // An "fp8" gpt-oss run keeps the checkpoint's MXFP4 experts (fp8 activations at most): no fp8 experts exist.
    expect(rowDtypes({ precision: 'fp8', gemm_quant_mode: 'fp8', moe_quant_mode: 'fp8' }, oss).moeDtype).toBe('mxfp4');
    // An "fp8" run of a block-scaled FP8 checkpoint serves its block scales; a bf16 checkpoint quantizes per tensor.
    const minimax = findBundled('MiniMaxAI/MiniMax-M2.5')!;
    expect(rowDtypes({ precision: 'fp8', gemm_quant_mode: 'fp8', moe_quant_mode: 'fp8' }, minimax)).toMatchObject({ gemmDtype: 'fp8_block', moeDtype: 'fp8_block' });
    // Weight-only int4 exists only where the checkpoint quantized it: Kimi-K2.5's experts, not its attention.
    const kimi = findBundled('moonshotai/Kimi-K2.5')!;
    expect(rowDtypes({ precision: 'int4', gemm_quant_mode: 'int4_wo', moe_quant_mode: 'int4_wo' }, kimi)).toMatchObject({ gemmDtype: 'bfloat16', moeDtype: 'int4_wo' });
    expect(rowDtypes({ precision: 'int4', gemm_quant_mode: 'int4_wo', moe_quant_mode: 'int4_wo' }, llama)).toMatchObject({ gemmDtype: 'bfloat16', moeDtype: 'bfloat16' });
  });
});
