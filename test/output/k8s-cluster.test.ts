// The cluster settings in k8s_deploy.yaml and k8s_bench.yaml: both DGD API versions validate against the
// Dynamo CRDs with and without every option, multi-tray NVL72 layouts claim a ComputeDomain channel, and the
// in-cluster benchmark Job runs AIPerf at the predicted point.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import YAML from 'yaml';
import { describe, expect, it } from 'vitest';
import { buildDeployManifest, CLIQUE_LABEL } from '../../src/output/k8s.js';
import { benchJobDocument, buildBenchJob, buildK8sBenchScript } from '../../src/output/k8s-bench.js';
import { derivePlan, type PlanInput } from '../../src/output/plan.js';
import type { ClusterOptions } from '../../src/output/cluster.js';
import { buildResultsTree } from '../../src/output/results-dir.js';
import { referencePath } from '../../src/util/paths.js';
import { aggCandidate, DENSE, fixture, MOE } from './fixtures.js';
import { checkManifest, flagMap, servicesOf } from './engine-rules.js';

const CRD_V1ALPHA1 = referencePath('dynamo-crds', 'nvidia.com_dynamographdeployments.yaml');
const CRD_V1BETA1 = referencePath('dynamo-crds', 'v1beta1', 'nvidia.com_dynamographdeployments.yaml');
const BACKENDS = ['vllm', 'sglang', 'trtllm'] as const;
/** v1alpha1 (0.9, 1.x before 1.2) and v1beta1 (1.2.0, 1.4.0). */
const RELEASES = ['0.9', '1.x', '1.2.0', '1.4.0'] as const;

const EVERY: ClusterOptions = {
  namespace: 'llm-serving',
  imagePullSecret: 'nvcr-pull',
  hfTokenSecret: 'hf-token',
  modelCachePvc: 'weights.shared',
  modelCacheSize: '750Gi',
  modelCachePath: 'qwen/qwen3-32b',
  servedModelName: 'qwen3-32b',
};
/** Each option alone, all together, none, and no HF token. */
const OPTION_SETS: Array<{ label: string; cluster?: ClusterOptions }> = [
  { label: 'defaults' },
  ...(Object.keys(EVERY) as Array<keyof ClusterOptions>).map((k) => ({ label: k, cluster: { [k]: EVERY[k] } })),
  { label: 'every option', cluster: EVERY },
  { label: 'no token', cluster: { hfTokenSecret: 'none' } },
];

function docsOf(text: string): Array<Record<string, any>> {
  return YAML.parseAllDocuments(text).map((d) => d.toJS());
}
const dgdOf = (text: string) => docsOf(text).find((d) => d.kind === 'DynamoGraphDeployment')!;

function validator(file: string, version: string): ValidateFunction {
  const crd = YAML.parse(readFileSync(file, 'utf8'));
  const schema = crd.spec.versions.find((v: { name: string }) => v.name === version).schema.openAPIV3Schema;
  const ajv = new Ajv({ strict: false, allErrors: true });
  for (const f of ['int32', 'int64', 'date-time', 'byte', 'double', 'float']) ajv.addFormat(f, true);
  return ajv.compile(schema);
}

/** Every backend x release x mode, a multi-tray GB200 worker and a GB200 disagg, under every option set. */
function cases(): Array<{ label: string; p: PlanInput }> {
  const out: Array<{ label: string; p: PlanInput }> = [];
  for (const backend of BACKENDS) {
    const h200 = fixture({ backend });
    const gb200 = fixture({ backend, system: 'gb200_sxm', model: MOE, totalGpus: 16 });
    for (const dynamoVersion of RELEASES) {
      for (const { label, cluster } of OPTION_SETS) {
        const base = { dynamoVersion, cluster };
        out.push({ label: `${backend} ${dynamoVersion} agg ${label}`, p: { inputs: h200.result.inputs, ctx: h200.ctx, candidate: h200.result.agg!.top[0], ...base } });
        out.push({ label: `${backend} ${dynamoVersion} disagg ${label}`, p: { inputs: h200.result.inputs, ctx: h200.ctx, candidate: h200.result.disagg!.top[0], ...base } });
        out.push({ label: `${backend} ${dynamoVersion} gb200 tp8 ${label}`, p: { inputs: gb200.result.inputs, ctx: gb200.ctx, candidate: aggCandidate(8, 64, 2, 300, 12, 16, true), ...base } });
        out.push({ label: `${backend} ${dynamoVersion} gb200 disagg ${label}`, p: { inputs: gb200.result.inputs, ctx: gb200.ctx, candidate: gb200.result.disagg!.top[0], ...base } });
      }
    }
  }
  return out;
}

describe.skipIf(!existsSync(CRD_V1ALPHA1) || !existsSync(CRD_V1BETA1))('cluster options against the Dynamo CRDs', () => {
  const all = cases();

  it('validate with and without every option, on both API versions (both CRD files for v1alpha1)', () => {
    const v = {
      alpha: validator(CRD_V1ALPHA1, 'v1alpha1'),
      alphaOfBeta: validator(CRD_V1BETA1, 'v1alpha1'),
      beta: validator(CRD_V1BETA1, 'v1beta1'),
    };
    const counts = { alpha: 0, beta: 0 };
    for (const { label, p } of all) {
      const dgd = dgdOf(buildDeployManifest(p));
      const checks = dgd.apiVersion === 'nvidia.com/v1beta1' ? [v.beta] : [v.alpha, v.alphaOfBeta];
      counts[dgd.apiVersion === 'nvidia.com/v1beta1' ? 'beta' : 'alpha']++;
      for (const check of checks) expect(check(dgd), `${label}: ${JSON.stringify(check.errors?.slice(0, 3))}`).toBe(true);
    }
    expect(counts.alpha).toBeGreaterThan(100);
    expect(counts.beta).toBeGreaterThan(100);
  });

  it('reject a malformed resource claim (the check can fail)', () => {
    const beta = validator(CRD_V1BETA1, 'v1beta1');
    const { result, ctx } = fixture({ system: 'gb200_sxm', model: MOE, totalGpus: 16 });
    const dgd = dgdOf(buildDeployManifest({ inputs: result.inputs, ctx, candidate: aggCandidate(8, 64, 2, 300, 12, 16, true), dynamoVersion: '1.4.0', cluster: EVERY }));
    expect(beta(dgd)).toBe(true);
    dgd.spec.components[1].podTemplate.spec.resourceClaims = 'compute-domain-channel';
    expect(beta(dgd)).toBe(false);
  });
});
if (!existsSync(CRD_V1ALPHA1) || !existsSync(CRD_V1BETA1)) console.log('note: ../shared/reference/dynamo-crds is absent; CRD checks of the cluster options skipped');

describe('cluster options in k8s_deploy.yaml', () => {
  it('keep the engine arguments of the prediction under every option', () => {
    for (const { label, p } of cases()) {
      const plan = derivePlan(p);
      const roles: Record<string, { gpus: number; batch: number; dp: number; tokens: number; fp4Moe: boolean }> = {};
      for (const g of plan.groups) roles[g.role] = { gpus: g.gpusPerWorker, batch: g.batchSize, dp: g.layout.dp, tokens: g.maxNumTokens, fp4Moe: false };
      const errors = checkManifest(buildDeployManifest(p), { backend: plan.backend, version: plan.version, dynamo: plan.dynamo, release: plan.image.release, isl: plan.isl, osl: plan.osl, roles });
      // The oracle expects the default Secret; another one is checked in the next test.
      const ownSecret = p.cluster?.hfTokenSecret !== undefined;
      expect(errors.filter((e) => !(ownSecret && e.endsWith(': envFromSecret'))), label).toEqual([]);
    }
  });

  it('put every option where the cluster reads it (v1alpha1 and v1beta1)', () => {
    const { result, ctx } = fixture({ backend: 'trtllm' });
    for (const dynamoVersion of ['0.9', '1.4.0']) {
      const docs = docsOf(buildDeployManifest({ inputs: result.inputs, ctx, candidate: result.disagg!.top[0], dynamoVersion, cluster: EVERY }));
      expect(docs.map((d) => d.kind)).toEqual(['PersistentVolumeClaim', 'ConfigMap', 'DynamoGraphDeployment']);
      for (const d of docs) expect(d.metadata.namespace, d.kind).toBe('llm-serving');
      expect(docs[0]).toMatchObject({ metadata: { name: 'weights.shared' }, spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: '750Gi' } } } });
      const dgd = docs[2];
      const services = servicesOf(dgd);
      for (const [name, s] of Object.entries(services)) {
        expect(s.envFromSecret, name).toBe('hf-token');
        if (s.componentType !== 'worker') continue;
        const flags = flagMap(s.extraPodSpec.mainContainer.args);
        expect(flags.get('--model-path'), name).toBe('/opt/models/qwen/qwen3-32b');
        expect(flags.get('--served-model-name'), name).toBe('qwen3-32b');
      }
      if (dgd.apiVersion === 'nvidia.com/v1beta1') {
        for (const c of dgd.spec.components) {
          expect(c.podTemplate.spec.imagePullSecrets).toEqual([{ name: 'nvcr-pull' }]);
          expect(c.podTemplate.spec.volumes[0]).toEqual({ name: 'model-cache', persistentVolumeClaim: { claimName: 'weights.shared' } });
        }
      } else {
        expect(dgd.spec.pvcs).toEqual([{ name: 'weights.shared', create: false }]);
        for (const s of Object.values(dgd.spec.services) as any[]) {
          expect(s.extraPodSpec.imagePullSecrets).toEqual([{ name: 'nvcr-pull' }]);
          expect(s.volumeMounts).toEqual([{ name: 'weights.shared', mountPoint: '/opt/models' }]);
        }
      }
    }
  });

  it('reference no Secret with --hf-token-secret none', () => {
    const { result, ctx } = fixture();
    for (const dynamoVersion of ['0.9', '1.4.0']) {
      const text = buildDeployManifest({ inputs: result.inputs, ctx, candidate: result.agg!.top[0], dynamoVersion, cluster: { hfTokenSecret: 'none' } });
      expect(text).not.toMatch(/envFromSecret|secretRef|hf-token-secret/);
    }
  });

  it('load a local checkpoint from the volume under its folder name, served under that name', () => {
    const { result, ctx } = fixture({ model: { ...DENSE, source: '/data/l70fp8' }, modelId: 'l70fp8' });
    const p = { inputs: result.inputs, ctx, candidate: result.agg!.top[0] };
    const worker = servicesOf(dgdOf(buildDeployManifest(p))).VllmWorker;
    const flags = flagMap(worker.extraPodSpec.mainContainer.args);
    expect(flags.get('--model')).toBe('/opt/models/l70fp8');
    expect(flags.get('--served-model-name')).toBe('l70fp8');
    // --model-cache-path wins over the folder name; a Hub id is downloaded, not looked up in the volume.
    const moved = servicesOf(dgdOf(buildDeployManifest({ ...p, cluster: { modelCachePath: 'ckpt/l70' } }))).VllmWorker;
    expect(flagMap(moved.extraPodSpec.mainContainer.args).get('--model')).toBe('/opt/models/ckpt/l70');
    const hub = fixture();
    const hubWorker = servicesOf(dgdOf(buildDeployManifest({ inputs: hub.result.inputs, ctx: hub.ctx, candidate: hub.result.agg!.top[0] }))).VllmWorker;
    expect(flagMap(hubWorker.extraPodSpec.mainContainer.args).get('--model')).toBe('Qwen/Qwen3-32B');
  });
});

describe('multi-node NVLink on NVL72 systems', () => {
  const gb200 = fixture({ system: 'gb200_sxm', model: MOE, totalGpus: 16 });
  const at = (candidate: PlanInput['candidate'], dynamoVersion: string, f = gb200) => docsOf(buildDeployManifest({ inputs: f.result.inputs, ctx: f.ctx, candidate, dynamoVersion }));

  it('claim one ComputeDomain channel in every worker pod of a worker that spans trays', () => {
    for (const dynamoVersion of ['0.9', '1.4.0']) {
      const docs = at(aggCandidate(8, 64, 2, 300, 12, 16, true), dynamoVersion);
      expect(docs[0]).toEqual({
        apiVersion: 'resource.nvidia.com/v1beta1',
        kind: 'ComputeDomain',
        metadata: { name: 'qwen3-30b-a3b-agg-compute-domain' },
        spec: { numNodes: 0, channel: { resourceClaimTemplate: { name: 'qwen3-30b-a3b-agg-compute-domain-channel' } } },
      });
      const dgd = docs[1];
      const claim = [{ name: 'compute-domain-channel', resourceClaimTemplateName: 'qwen3-30b-a3b-agg-compute-domain-channel' }];
      const affinityKey = (spec: any) => spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey;
      if (dgd.apiVersion === 'nvidia.com/v1beta1') {
        const worker = dgd.spec.components.find((c: any) => c.type === 'worker');
        expect(worker.multinode).toEqual({ nodeCount: 2 });
        expect(worker.podTemplate.spec.resourceClaims).toEqual(claim);
        expect(worker.podTemplate.spec.containers[0].resources.claims).toEqual([{ name: 'compute-domain-channel' }]);
        expect(affinityKey(worker.podTemplate.spec)).toBe(CLIQUE_LABEL);
        expect(dgd.spec.components[0].podTemplate.spec.resourceClaims).toBeUndefined();
      } else {
        const worker = dgd.spec.services.VllmWorker;
        expect(worker.extraPodSpec.resourceClaims).toEqual(claim);
        expect(worker.resources.claims).toEqual([{ name: 'compute-domain-channel' }]);
        expect(affinityKey(worker.extraPodSpec)).toBe(CLIQUE_LABEL);
        expect(worker.extraPodMetadata.labels).toEqual({ 'inferplan/deployment': 'qwen3-30b-a3b-agg' });
        expect(dgd.spec.services.Frontend.extraPodSpec.resourceClaims).toBeUndefined();
      }
    }
  });

  it('claim it for disaggregated KV transfers priced over NVLink, not for single-tray agg workers or HGX systems', () => {
    const kinds = (docs: Array<Record<string, any>>) => docs.map((d) => d.kind);
    expect(kinds(at(gb200.result.disagg!.top[0], '1.4.0'))).toEqual(['ComputeDomain', 'DynamoGraphDeployment']);
    expect(kinds(at(aggCandidate(4, 64, 4, 300, 12, 16, true), '1.4.0'))).toEqual(['DynamoGraphDeployment']);
    const h200 = fixture({ model: MOE, totalGpus: 16 });
    expect(kinds(at(aggCandidate(16, 256, 1, 300, 12, 16, true), '1.4.0', h200))).toEqual(['DynamoGraphDeployment']);
    expect(kinds(at(h200.result.disagg!.top[0], '1.4.0', h200))).toEqual(['DynamoGraphDeployment']);
  });

  it('drop the one-rack affinity when the deployment is larger than one NVLink domain', () => {
    const big = fixture({ system: 'gb200_sxm', model: MOE, totalGpus: 144 });
    const dgd = at(aggCandidate(8, 64, 18, 300, 12, 144, true), '1.4.0', big)[1];
    const worker = dgd.spec.components.find((c: any) => c.type === 'worker');
    expect(worker.podTemplate.spec.resourceClaims).toHaveLength(1);
    expect(worker.podTemplate.spec.affinity).toBeUndefined();
  });
});

const hasShellcheck = spawnSync('shellcheck', ['--version']).status === 0;

describe('k8s_bench.yaml', () => {
  it('runs AIPerf against the frontend at the predicted concurrency and the plan ISL / OSL', () => {
    const { result, ctx } = fixture({ prefix: 1000 });
    const p = { inputs: result.inputs, ctx, candidate: result.agg!.top[0], dynamoVersion: '1.4.0', cluster: EVERY };
    const job = benchJobDocument(p);
    expect(job).toMatchObject({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'qwen3-32b-agg-bench', namespace: 'llm-serving' } });
    const spec = (job as any).spec.template.spec;
    expect(spec.imagePullSecrets).toEqual([{ name: 'nvcr-pull' }]);
    expect(spec.volumes).toEqual([{ name: 'model-cache', persistentVolumeClaim: { claimName: 'weights.shared' } }]);
    const c = spec.containers[0];
    const env = Object.fromEntries(c.env.filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]));
    expect(env).toMatchObject({ URL: 'http://qwen3-32b-agg-frontend:8000', MODEL: 'qwen3-32b', TOKENIZER: '/opt/models/qwen/qwen3-32b' });
    expect(env.RESULTS).toBe('/opt/models/inferplan-bench/qwen3-32b-agg/tp2pp1');
    const script: string = c.command[2];
    const concurrency = Math.round(p.candidate.estimate.metrics.concurrency);
    expect(script).toContain(`CONCURRENCIES=('${concurrency}')`);
    expect(script).toContain("--synthetic-input-tokens-mean '3000'");
    expect(script).toContain("--prefix-prompt-length '1000'");
    expect(script).toContain("--output-tokens-mean '500'");
    // The folders `configure validate --plan` reads concurrency from.
    expect(script).toContain('out="$RESULTS/c$c"');
  });

  it('is one Job document behind usage comments, byte-identical on rebuild', () => {
    const { result, ctx } = fixture();
    const p = { inputs: result.inputs, ctx, candidate: result.disagg!.top[0] };
    const text = buildBenchJob(p);
    expect(text).toMatch(/^# AIPerf against qwen3-32b-disagg /);
    expect(YAML.parseAllDocuments(text)).toHaveLength(1);
    expect(buildBenchJob({ ...p })).toBe(text);
  });

  it('scripts pass bash -n and shellcheck', () => {
    const dir = mkdtempSync(join(tmpdir(), 'inferplan-k8s-bench-'));
    try {
      const files = [0, 1000].map((prefix, i) => {
        const { result, ctx } = fixture({ prefix });
        const f = join(dir, `bench_${i}.sh`);
        writeFileSync(f, buildK8sBenchScript({ inputs: result.inputs, ctx, candidate: result.agg!.top[0] }));
        return f;
      });
      for (const f of files) expect(spawnSync('bash', ['-n', f], { encoding: 'utf8' }).stderr).toBe('');
      if (!hasShellcheck) {
        console.log('note: shellcheck is not installed; shellcheck checks of the bench Job skipped');
        return;
      }
      // The Job sets URL, MODEL, TOKENIZER, RESULTS and POD_NAMESPACE; SC2154 would flag them as unassigned.
      const r = spawnSync('shellcheck', ['-S', 'style', '-e', 'SC2154', ...files], { encoding: 'utf8' });
      expect(r.stdout + r.stderr).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('results directory with cluster options', () => {
  it('writes k8s_bench.yaml beside every k8s_deploy.yaml and the options into exp_config.yaml, identically on rerun', async () => {
    const { result, ctx } = fixture();
    const opts = { reportText: 'report\n', json: { ok: true }, cluster: EVERY, dynamoVersion: '1.4.0' };
    const a = await buildResultsTree(result, ctx, opts);
    const b = await buildResultsTree(result, ctx, opts);
    const paths = a.files.map((f) => f.path);
    const deploys = paths.filter((p) => p.endsWith('/k8s_deploy.yaml'));
    expect(deploys.length).toBeGreaterThan(3);
    for (const d of deploys) expect(paths).toContain(d.replace('k8s_deploy.yaml', 'k8s_bench.yaml'));
    expect(b.files.map((f) => [f.path, f.content.toString()])).toEqual(a.files.map((f) => [f.path, f.content.toString()]));
    const exp = YAML.parse(a.files.find((f) => f.path === 'agg/exp_config.yaml')!.content.toString());
    expect(exp.experiments[0].cluster).toEqual({
      namespace: 'llm-serving',
      image_pull_secret: 'nvcr-pull',
      hf_token_secret: 'hf-token',
      model_cache_pvc: 'weights.shared',
      model_cache_size: '750Gi',
      model_cache_path: 'qwen/qwen3-32b',
      served_model_name: 'qwen3-32b',
    });
  });
});
