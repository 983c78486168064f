import { describe, expect, it } from 'vitest';
import { insideDir, k8sName, resultsSlug, safeSegment, uniqueSegment } from '../../src/output/naming.js';
import { parseDynamoVersion, releaseProfile, runtimeImage } from '../../src/output/images.js';
import { DYNAMO_RUNTIME_TABLE, dgdApiVersion, engineShippedBy } from '../../src/inputs/dynamo-runtime.js';
import { compareVersions } from '../../src/util/versions.js';
import { InputError } from '../../src/util/errors.js';
import { benchConcurrencies, shQuote } from '../../src/output/scripts.js';
import { maxModelLen } from '../../src/output/plan.js';
import { fixture } from './fixtures.js';

describe('names', () => {
  it('builds the documented slug', () => {
    expect(resultsSlug(fixture().result.inputs)).toMatch(/^Qwen--Qwen3-32B_h200_sxm_vllm_gpus8_isl4000_osl500_ttft600_tpot16.67_[0-9a-f]{6}$/);
    const r = fixture({ prefix: 1000 }).result.inputs;
    expect(resultsSlug({ ...r, sla: { ...r.sla, requestLatencyMs: 12000 } })).toMatch(/^Qwen--Qwen3-32B_h200_sxm_vllm_gpus8_isl4000_osl500_ttft600_tpot16.67_prefix1000_lat12000_[0-9a-f]{6}$/);
  });

  it('gives a different folder to every input that changes the plan', () => {
    const r = fixture().result.inputs;
    const base = resultsSlug(r);
    expect(resultsSlug(r)).toBe(base);
    const variants = [
      resultsSlug({ ...r, totalGpus: 16 }),
      resultsSlug({ ...r, version: '0.0.1' }),
      resultsSlug({ ...r, topN: r.topN + 1 }),
      resultsSlug({ ...r, calibratedOn: 'user calibration x.json' }),
      resultsSlug({ ...r, model: 'Qwen--Qwen3-32B' }),
      resultsSlug(r, { dtypes: ['fp8', 'fp8', 'fp8'] }),
      resultsSlug(r, { modes: ['agg'] }),
      resultsSlug(r, { strictSla: true }),
    ];
    expect(resultsSlug({ ...r, totalGpus: 16 })).toContain('_gpus16_');
    expect(new Set([base, ...variants]).size).toBe(variants.length + 1);
    // Undefined extras do not count: a run without the option names the same folder.
    expect(resultsSlug(r, { dynamoVersion: undefined })).toBe(base);
  });

  it('never maps two experiment names to one folder', () => {
    const names = ['a.b', 'a..b', 'a/b', 'a--b', 'a b', 'ab', '.a', 'a'];
    const segs = names.map(uniqueSegment);
    expect(new Set(segs).size).toBe(names.length);
    expect(uniqueSegment('a.b')).toBe('a.b');
    expect(uniqueSegment('exp_h200')).toBe('exp_h200');
    for (const s of segs) expect(s).toMatch(/^[A-Za-z0-9_][A-Za-z0-9._-]*$/);
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
  it('picks the newest image that ships the predicted engine version, else the closest', () => {
    expect(runtimeImage('vllm', '0.12.0')).toMatchObject({ image: 'nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.1', release: '0.8.1', match: 'exact' });
    expect(runtimeImage('vllm', '0.14.0')).toMatchObject({ tag: '0.9.1', shipsVersion: '0.14.1', match: 'same-release' });
    expect(runtimeImage('vllm', '0.16.0')).toMatchObject({ tag: '1.0.2', match: 'exact' });
    expect(runtimeImage('vllm', '0.18.0')).toMatchObject({ tag: '1.1.1', shipsVersion: '0.19.0', match: 'nearest' });
    expect(runtimeImage('vllm', '0.23.0')).toMatchObject({ tag: '1.3.1', match: 'exact' });
    expect(runtimeImage('vllm', '0.26.0')).toMatchObject({ tag: '1.4.0', match: 'exact' });
    expect(runtimeImage('vllm', '0.24.0')).toMatchObject({ tag: '1.4.0', shipsVersion: '0.26.0', match: 'nearest' });
    expect(runtimeImage('sglang', '0.5.8.post1')).toMatchObject({ image: 'nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.9.1', match: 'same-release' });
    expect(runtimeImage('sglang', '0.5.9')).toMatchObject({ tag: '1.0.2', match: 'exact' });
    expect(runtimeImage('sglang', '0.5.16')).toMatchObject({ tag: '1.4.0', match: 'exact' });
    expect(runtimeImage('sglang', '0.5.14')).toMatchObject({ tag: '1.3.1', match: 'exact' });
    expect(runtimeImage('trtllm', '1.2.0rc5')).toMatchObject({ image: 'nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1', match: 'same-release' });
    expect(runtimeImage('trtllm', '1.3.0rc19')).toMatchObject({ tag: '1.3.1', match: 'exact' });
    expect(runtimeImage('trtllm', '1.3.0rc3')).toMatchObject({ tag: '0.9.1', match: 'exact' });
    expect(runtimeImage('trtllm', '1.3.0rc23')).toMatchObject({ tag: '1.4.0', shipsVersion: '1.3.0rc22', match: 'same-release' });
    expect(runtimeImage('trtllm', '0.8.1.post1')).toMatchObject({ tag: '0.8.1.post1', release: '0.8.1', match: 'exact' });
  });

  it('keeps to the releases --dynamo-version names, and says when none of them ships the engine line', () => {
    const sel = (v: string) => parseDynamoVersion(v);
    expect(runtimeImage('vllm', '0.16.0', sel('1.x'))).toMatchObject({ tag: '1.0.2', match: 'exact', requested: '1.x' });
    expect(runtimeImage('vllm', '0.16.0', sel('1.0.0'))).toMatchObject({ tag: '1.0.0', match: 'exact' });
    expect(runtimeImage('vllm', '0.14.0', sel('0.9.0'))).toMatchObject({ tag: '0.9.0', match: 'same-release' });
    expect(runtimeImage('vllm', '0.12.0', sel('1.x'))).toMatchObject({ tag: '1.0.2', shipsVersion: '0.16.0', match: 'other-release' });
    expect(runtimeImage('vllm', '0.12.0', sel('1.4.0'))).toMatchObject({ image: 'nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0', match: 'other-release' });
    expect(runtimeImage('vllm', '0.16.0', sel('0.9'))).toMatchObject({ tag: '0.9.1', match: 'other-release' });
    // A TRT-LLM version recorded as an image tag runs the release that image ships.
    expect(runtimeImage('trtllm', '0.9.0', sel('0.9'))).toMatchObject({ tag: '0.9.0', shipsVersion: '1.3.0rc1', match: 'exact' });
  });

  it('reads --dynamo-version as a release or a line of releases', () => {
    expect(parseDynamoVersion(undefined)).toBeUndefined();
    expect(parseDynamoVersion('')).toBeUndefined();
    expect(parseDynamoVersion('0.9.1')?.releases).toEqual(['0.9.1']);
    expect(parseDynamoVersion('v1.2.0')?.releases).toEqual(['1.2.0']);
    expect(parseDynamoVersion('0.9')?.releases).toEqual(['0.9.1', '0.9.0']);
    expect(parseDynamoVersion('1.2.x')?.releases).toEqual(['1.2.1', '1.2.0']);
    expect(parseDynamoVersion('1.x')?.releases).toEqual(['1.4.0', '1.3.1', '1.3.0', '1.2.1', '1.2.0', '1.1.1', '1.1.0', '1.0.2', '1.0.1', '1.0.0']);
    expect(parseDynamoVersion('1')?.releases).toHaveLength(10);
    expect(() => parseDynamoVersion('2.5')).toThrow(/accepted: 0.6.1, .*, 1.4.0, or a line/);
    expect(() => parseDynamoVersion('1.2.3')).toThrow(InputError);
    expect(() => parseDynamoVersion('latest')).toThrow(InputError);
  });

  it('maps a release to its flag profile and DGD API version', () => {
    expect(releaseProfile('0.8.1')).toBe('0.9');
    expect(releaseProfile('1.0.0')).toBe('1.x');
    expect(dgdApiVersion('1.1.1')).toBe('nvidia.com/v1alpha1');
    expect(dgdApiVersion('1.2.0')).toBe('nvidia.com/v1beta1');
    expect(dgdApiVersion('1.4.0')).toBe('nvidia.com/v1beta1');
  });

  it('has one row per release, newest first, ending at the newest documented release', () => {
    const tags = DYNAMO_RUNTIME_TABLE.map((r) => r.tag);
    expect(tags[0]).toBe('1.4.0');
    expect(new Set(tags).size).toBe(tags.length);
    expect([...tags].sort((a, b) => compareVersions(b, a))).toEqual(tags);
    expect(DYNAMO_RUNTIME_TABLE.find((r) => r.tag === '1.3.0')).toEqual({ tag: '1.3.0', date: '2026-07-20', vllm: '0.23.0', sglang: '0.5.14', trtllm: '1.3.0rc19' });
    // Dated rows are newest first too, so the engines shipped on a date are those of the newest release before it.
    const dates = DYNAMO_RUNTIME_TABLE.flatMap((r) => (r.date ? [r.date] : []));
    expect([...dates].sort().reverse()).toEqual(dates);
    expect(engineShippedBy('sglang', '2026-03-20')).toBe('0.5.9'); // 1.0.1 (2026-03-16)
    expect(engineShippedBy('trtllm', '2025-11-02')).toBe('1.2.0rc6.post1'); // before the first dated release: 0.8.0's
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
