import { describe, expect, it } from 'vitest';
import { insideDir, k8sName, resultsSlug, safeSegment } from '../../src/output/naming.js';
import { parseDynamoVersion, runtimeImage } from '../../src/output/images.js';
import { benchConcurrencies, shQuote } from '../../src/output/scripts.js';
import { maxModelLen } from '../../src/output/plan.js';
import { fixture } from './fixtures.js';

describe('names', () => {
  it('builds the documented slug', () => {
    expect(resultsSlug(fixture().result.inputs)).toBe('Qwen--Qwen3-32B_h200_sxm_vllm_isl4000_osl500_ttft600_tpot16.67');
    const r = fixture({ prefix: 1000 }).result.inputs;
    expect(resultsSlug({ ...r, sla: { ...r.sla, requestLatencyMs: 12000 } })).toBe('Qwen--Qwen3-32B_h200_sxm_vllm_isl4000_osl500_ttft600_tpot16.67_prefix1000_lat12000');
  });

  it('never yields a segment that climbs or hides', () => {
    for (const s of ['../../x', '..', '.', '', '/', 'a/../b', '~/x', 'a b$(c)']) {
      const seg = safeSegment(s);
      expect(seg).toMatch(/^[A-Za-z0-9_][A-Za-z0-9._-]*$/);
      expect(seg.includes('..')).toBe(false);
    }
    expect(() => insideDir('/tmp/a', '../b')).toThrow(/outside/);
  });

  it('makes DNS-1035 resource names that leave room for service names', () => {
    for (const id of ['Qwen/Qwen3-32B', 'meta-llama/Llama-3.1-405B-Instruct-FP8-with-a-very-long-suffix-indeed', '3b/9x', '../..']) {
      const n = k8sName(id, 'disagg');
      expect(n).toMatch(/^[a-z]([-a-z0-9]*[a-z0-9])?$/);
      expect(`${n}-trtllmprefillworker`.length).toBeLessThanOrEqual(63);
    }
  });
});

describe('runtime images', () => {
  it('picks the image that ships the predicted engine version', () => {
    expect(runtimeImage('vllm', '0.12.0')).toMatchObject({ image: 'nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.1', match: 'exact' });
    expect(runtimeImage('vllm', '0.14.0')).toMatchObject({ tag: '0.9.1', match: 'same-release' });
    expect(runtimeImage('vllm', '0.18.0')).toMatchObject({ tag: '1.1.0', match: 'nearest' });
    expect(runtimeImage('sglang', '0.5.8.post1')).toMatchObject({ image: 'nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.9.1', match: 'same-release' });
    expect(runtimeImage('sglang', '0.5.9')).toMatchObject({ tag: '1.0.0', match: 'exact' });
    expect(runtimeImage('trtllm', '1.2.0rc5')).toMatchObject({ image: 'nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1', match: 'same-release' });
    expect(runtimeImage('trtllm', '0.8.1.post1')).toMatchObject({ tag: '0.8.1.post1', match: 'exact' });
  });

  it('maps --dynamo-version to a flag profile', () => {
    expect(parseDynamoVersion(undefined)).toBe('0.9');
    expect(parseDynamoVersion('0.9.1')).toBe('0.9');
    expect(parseDynamoVersion('1.x')).toBe('1.x');
    expect(parseDynamoVersion('v1.2.0')).toBe('1.x');
    expect(() => parseDynamoVersion('0.8')).toThrow(/accepted: 0.9/);
  });
});

describe('small helpers', () => {
  it('quotes for bash', () => {
    expect(shQuote("it's")).toBe(`'it'\\''s'`);
    expect(shQuote('$(x)')).toBe(`'$(x)'`);
  });

  it('sweeps concurrency around the predicted point', () => {
    expect(benchConcurrencies(128)).toEqual([32, 64, 96, 128, 160, 192]);
    expect(benchConcurrencies(1)).toEqual([1, 2]);
  });

  it('sizes max model length with headroom, capped by the model', () => {
    expect(maxModelLen(4000, 500, 40960)).toBe(5120);
    expect(maxModelLen(4000, 500, 4600)).toBe(4600);
    expect(maxModelLen(4000, 500, 4000)).toBe(4500);
  });
});
