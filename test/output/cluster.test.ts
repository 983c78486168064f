// Cluster settings: every value is checked by the Kubernetes rules with a one-line error naming the flag (or
// YAML key) and what is accepted; defaults follow Dynamo's guides; a local checkpoint maps into the volume.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLUSTER_CHECKS, CLUSTER_FLAGS, isLocalCheckpoint, mergeCluster, resolveCluster, type ClusterOptions } from '../../src/output/cluster.js';
import { parseExperimentFile } from '../../src/output/exp-config.js';
import { toExperiment } from '../../src/cli/commands/exp.js';
import { registerDefault } from '../../src/cli/commands/default.js';
import { registerExp } from '../../src/cli/commands/exp.js';
import { InputError } from '../../src/util/errors.js';
import { runInProcess } from '../modes/cli.js';

const GOOD: Record<keyof ClusterOptions, string[]> = {
  namespace: ['default', 'llm-1', 'a'],
  imagePullSecret: ['nvcr-secret', 'pull.secret.v2'],
  hfTokenSecret: ['hf-token-secret', 'none', 'tokens.hf'],
  modelCachePvc: ['model-cache', 'weights.fast-1'],
  modelCacheSize: ['500Gi', '2Ti', '800G', '1.5Ti', '1000000000'],
  modelCachePath: ['llama-70b', 'org/model_v2', 'l70fp8/'],
  servedModelName: ['Qwen/Qwen3-32B', 'my-model:v2'],
};
const BAD: Record<keyof ClusterOptions, string[]> = {
  namespace: ['Prod', 'llm_1', '-llm', 'llm-', 'a.b', 'x'.repeat(64), ''],
  imagePullSecret: ['Nvcr', 'pull_secret', '.x', 'a b'],
  hfTokenSecret: ['HF', 'hf token', 'NONE'],
  modelCachePvc: ['Model-Cache', 'cache/1', 'x'.repeat(254)],
  modelCacheSize: ['500GB', 'big', '-5Gi', '0', '0Gi', '5 Gi', ''],
  modelCachePath: ['/data/llama', '../etc', 'a/../b', 'a//b', 'a b', ''],
  servedModelName: ['my model', '', 'tab\there', 'x'.repeat(257)],
};

describe('cluster option checks', () => {
  for (const field of Object.keys(CLUSTER_FLAGS) as Array<keyof ClusterOptions>) {
    it(`${CLUSTER_FLAGS[field]} accepts Kubernetes-valid values and refuses others in one line`, () => {
      for (const v of GOOD[field]) expect(() => CLUSTER_CHECKS[field](CLUSTER_FLAGS[field], v), v).not.toThrow();
      for (const v of BAD[field]) {
        let err: unknown;
        try {
          CLUSTER_CHECKS[field](CLUSTER_FLAGS[field], v);
        } catch (e) {
          err = e;
        }
        expect(err, `${field} ${JSON.stringify(v)}`).toBeInstanceOf(InputError);
        const msg = (err as Error).message;
        expect(msg.startsWith(`${CLUSTER_FLAGS[field]} "`), msg).toBe(true);
        expect(msg).toMatch(/accepted: /);
        expect(msg.split('\n').length).toBe(1 + (v.match(/\n/g)?.length ?? 0));
      }
    });
  }
});

describe('resolveCluster', () => {
  const hub = { id: 'Qwen/Qwen3-32B', source: 'bundled' };

  it("defaults to Dynamo's names: hf-token-secret, the model-cache PVC at /opt/models, the Hub id", () => {
    expect(resolveCluster(undefined, hub)).toEqual({
      hfTokenSecret: 'hf-token-secret',
      modelCachePvc: 'model-cache',
      mountPath: '/opt/models',
      modelArg: 'Qwen/Qwen3-32B',
      servedModelName: 'Qwen/Qwen3-32B',
    });
  });

  it('maps a local checkpoint folder into the volume; a cached Hub snapshot stays a Hub id', () => {
    expect(isLocalCheckpoint({ id: 'l70fp8', source: '/data/l70fp8' })).toBe(true);
    expect(isLocalCheckpoint({ id: 'Qwen/Qwen3-32B', source: '/home/u/.cache/huggingface/hub/models--Qwen--Qwen3-32B/snapshots/abc' })).toBe(false);
    expect(isLocalCheckpoint({ id: 'Qwen/Qwen3-32B', source: 'hf-cache' })).toBe(false);
    const local = resolveCluster(undefined, { id: 'l70fp8', source: '/data/l70fp8' });
    expect(local).toMatchObject({ modelArg: '/opt/models/l70fp8', modelPath: 'l70fp8', servedModelName: 'l70fp8' });
    const named = resolveCluster({ modelCachePath: 'ckpts/l70/', servedModelName: 'llama-70b' }, { id: 'l70fp8', source: '/data/l70fp8' });
    expect(named).toMatchObject({ modelArg: '/opt/models/ckpts/l70', servedModelName: 'llama-70b' });
    // A folder name that is no volume path must be replaced by a given one.
    expect(() => resolveCluster(undefined, { id: 'my model', source: '/data/my model' })).toThrow(/--model-cache-path/);
  });

  it('drops the Secret for "none" and checks every given value', () => {
    expect(resolveCluster({ hfTokenSecret: 'none' }, hub).hfTokenSecret).toBeUndefined();
    expect(() => resolveCluster({ namespace: 'Prod' }, hub)).toThrow(/^--namespace "Prod"/);
  });

  it('lets later layers win field by field', () => {
    expect(mergeCluster({ namespace: 'a', modelCachePvc: 'p' }, { namespace: 'b' })).toEqual({ namespace: 'b', modelCachePvc: 'p' });
    expect(mergeCluster(undefined, {})).toBeUndefined();
  });
});

describe('cluster: in experiment files', () => {
  const file = (cluster: string) => `experiments:
  - name: a
    mode: agg
    model: Qwen/Qwen3-32B
    system: h200_sxm
    backend: vllm
    total_gpus: 8
    isl: 4000
    osl: 500
    ttft: 600
    tpot: 16.67
${cluster}`;

  it('reads every key', () => {
    const parsed = parseExperimentFile(
      file('    cluster: { namespace: llm, image_pull_secret: pull, hf_token_secret: none, model_cache_pvc: w, model_cache_size: 1Ti, model_cache_path: q/32b, served_model_name: q32 }\n'),
      'x.yaml',
    );
    expect(toExperiment(parsed.experiments[0]).cluster).toEqual({
      namespace: 'llm',
      imagePullSecret: 'pull',
      hfTokenSecret: 'none',
      modelCachePvc: 'w',
      modelCacheSize: '1Ti',
      modelCachePath: 'q/32b',
      servedModelName: 'q32',
    });
  });

  it('names the key, line and accepted values of a bad entry', () => {
    expect(() => parseExperimentFile(file('    cluster:\n      namespace: Prod\n'), 'x.yaml')).toThrow(/^x\.yaml:13: experiments\.0\.cluster\.namespace: namespace "Prod" is not a Kubernetes namespace name; accepted: /);
    expect(() => parseExperimentFile(file('    cluster:\n      pvc: w\n'), 'x.yaml')).toThrow(/unknown key "experiments\.0\.cluster\.pvc"; accepted: namespace, image_pull_secret, .*served_model_name/);
  });
});

describe('cluster flags on the command line', () => {
  it('exit 2 with one line naming the flag before any planning', async () => {
    const r = await runInProcess([registerDefault], ['default', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--namespace', 'Prod_1']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/--namespace "Prod_1" is not a Kubernetes namespace name; accepted: /);
    const size = await runInProcess([registerDefault], ['default', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--model-cache-size', '500GB']);
    expect(size.code).toBe(2);
    expect(size.stderr).toMatch(/--model-cache-size "500GB" is not a storage size/);
  });

  it('exp takes them too, over the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inferplan-cluster-'));
    try {
      const p = join(dir, 'e.yaml');
      writeFileSync(p, 'experiments: []\n');
      const r = await runInProcess([registerExp], ['exp', '--yaml', p, '--image-pull-secret', 'Bad_Secret']);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--image-pull-secret "Bad_Secret" is not a Kubernetes object name/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
