import { describe, expect, it } from 'vitest';
import { buildExpConfig, parseExperimentFile } from '../../src/output/exp-config.js';
import { InputError } from '../../src/util/errors.js';
import { fixture } from './fixtures.js';

const GOOD = `experiments:
  - name: agg
    mode: agg
    model: Qwen/Qwen3-32B
    system: h200_sxm
    backend: vllm
    backend_version: 0.12.0
    total_gpus: 8
    isl: 4000
    osl: 500
    ttft: 600
    tpot: 16.67
    search: { tp: [1, 2, 4, 8], pp: [1] }
`;

function failure(text: string): string {
  try {
    parseExperimentFile(text, 'exp.yaml');
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error('expected an error');
}

describe('exp_config.yaml schema', () => {
  it('accepts a valid file and applies defaults', () => {
    const f = parseExperimentFile(GOOD, 'exp.yaml');
    expect(f.experiments[0]).toMatchObject({ name: 'agg', prefix: 0, top_n: 5, search: { tp: [1, 2, 4, 8], pp: [1] } });
  });

  it('round-trips what the writer produces', () => {
    const { result, ctx } = fixture({ prefix: 500 });
    for (const mode of ['agg', 'disagg', 'both'] as const) {
      const f = parseExperimentFile(buildExpConfig(result.inputs, mode, ctx), 'x.yaml');
      expect(f.experiments[0]).toMatchObject({ mode, model: 'Qwen/Qwen3-32B', prefix: 500, kv_cache_dtype: 'fp8', top_n: 5 });
    }
  });

  it('takes one image for every component, or images by component, and writes back what a run was given', () => {
    const img = 'registry.example.com/dynamo/vllm-runtime:1.4.0-custom';
    expect(parseExperimentFile(GOOD + `    image: ${img}\n`, 'exp.yaml').experiments[0]!.image).toBe(img);
    expect(parseExperimentFile(GOOD + `    image: { prefill: ${img}, decode: x/y:1 }\n`, 'exp.yaml').experiments[0]!.image).toEqual({ prefill: img, decode: 'x/y:1' });
    expect(failure(GOOD + '    image: { prefil: x }\n')).toMatch(/^exp\.yaml:14: unknown key "experiments\.0\.image\.prefil"; accepted: frontend, agg, prefill, decode/);
    expect(failure(GOOD + '    image: "a b"\n')).toMatch(/experiments\.0\.image: an image reference without spaces/);
    expect(failure(GOOD + '    image: 3\n')).toMatch(/experiments\.0\.image: an image reference, or images by component/);
    const { result, ctx } = fixture();
    const all = { frontend: img, agg: img, prefill: img, decode: img };
    expect(parseExperimentFile(buildExpConfig(result.inputs, 'disagg', ctx, all), 'x.yaml').experiments[0]!.image).toBe(img);
    expect(parseExperimentFile(buildExpConfig(result.inputs, 'disagg', ctx, { prefill: img }), 'x.yaml').experiments[0]!.image).toEqual({ prefill: img });
    // An agg run given only a prefill image deploys no prefill worker: nothing to write.
    expect(parseExperimentFile(buildExpConfig(result.inputs, 'agg', ctx, { prefill: img }), 'x.yaml').experiments[0]!.image).toBeUndefined();
  });

  it('names an unknown key and its line', () => {
    const msg = failure(GOOD.replace('    osl: 500\n', '    osl: 500\n    tpot_ms: 3\n'));
    expect(msg).toMatch(/^exp\.yaml:11: unknown key "experiments\.0\.tpot_ms"/);
    expect(msg).toContain('accepted:');
  });

  it('names an unknown key inside search', () => {
    expect(failure(GOOD.replace('pp: [1]', 'pp: [1], ep: [2]'))).toMatch(/^exp\.yaml:13: unknown key "experiments\.0\.search\.ep"; accepted: tp, pp, dp, moe_tp, moe_ep, batch/);
  });

  it('names a bad value and its line', () => {
    expect(failure(GOOD.replace('total_gpus: 8', 'total_gpus: -8'))).toMatch(/^exp\.yaml:8: experiments\.0\.total_gpus: /);
    expect(failure(GOOD.replace('mode: agg', 'mode: fast'))).toMatch(/^exp\.yaml:3: experiments\.0\.mode: /);
  });

  it('points at the mapping that lacks a required key', () => {
    expect(failure(GOOD.replace('    isl: 4000\n', ''))).toMatch(/^exp\.yaml:2: experiments\.0\.isl: /);
  });

  it('reports YAML syntax errors with a line, duplicates and a prefix that is too long', () => {
    expect(failure('experiments:\n  - name: [\n')).toMatch(/^exp\.yaml:\d+: not valid YAML/);
    expect(failure(GOOD + GOOD.replace('experiments:\n', ''))).toMatch(/duplicate experiment name "agg"/);
    expect(failure(GOOD.replace('    osl: 500\n', '    osl: 500\n    prefix: 4000\n'))).toMatch(/prefix \(4000\) must be smaller than isl/);
    expect(failure('experiments: []\n')).toMatch(/^exp\.yaml:1: experiments: /);
  });
});
