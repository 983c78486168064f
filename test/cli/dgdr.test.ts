// `configure dgdr`: DGDR requests written from the Dynamo notes and the CRD (not from our output) are answered
// offline with the DGD the operator would deploy, or exit 2 / 3 / 4 with one line naming why.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../modes/cli.js';
import { registerDgdr } from '../../src/cli/commands/dgdr.js';
import { crdValidator, DGD_CRD, DGD_CRD_V1BETA1, DGDR_CRD, DGDR_CRD_V1BETA1 } from '../output/planner-crd.js';

/** The 0.9 request of the notes (c): profiler settings in profilingConfig.config, AIC rapid mode, worker image override. */
const V1ALPHA1 = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeploymentRequest
metadata:
  name: qwen3-sla
  namespace: llm
spec:
  model: Qwen/Qwen3-32B
  backend: vllm
  profilingConfig:
    profilerImage: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.0
    config:
      sla:
        isl: 3000
        osl: 150
        ttft: 200
        itl: 20
      hardware:
        minNumGpusPerEngine: 1
        maxNumGpusPerEngine: 4
        numGpusPerNode: 8
        gpuType: h200_sxm
      sweep:
        useAiConfigurator: true
        aicSystem: h200_sxm
        aicHfId: Qwen/Qwen3-32B
        prefillInterpolationGranularity: 8
      planner:
        planner_min_endpoint: 2
  deploymentOverrides:
    workersImage: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.1
`;

/** The 1.x planner example of the notes (examples/deployments/dgdr/planner.yaml), with the GPUs it runs on. */
const V1BETA1_EXAMPLE = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeploymentRequest
metadata:
  name: planner-example
spec:
  model: Qwen/Qwen3-32B
  backend: vllm
  searchStrategy: rapid
  hardware:
    gpuSku: h200_sxm
    totalGpus: 8
  sla:
    ttft: 600
    itl: 20
  features:
    planner:
      optimization_target: sla
      pre_deployment_sweeping_mode: rapid
      mode: disagg
      backend: vllm
`;

/** A v1beta1 request written from the CRD: workload with a load target, latency optimization, cache, DGD override. */
const V1BETA1_FULL = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeploymentRequest
metadata:
  name: chat-latency
  namespace: serving
spec:
  model: Qwen/Qwen3-32B
  backend: auto
  image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0
  modelCache:
    pvcName: models
    pvcModelPath: qwen3-32b
  hardware:
    gpuSku: h200_sxm
    totalGpus: 16
    numGpusPerNode: 8
  workload:
    isl: 2000
    osl: 500
    concurrency: 64
  sla:
    ttft: 800
    itl: 25
    optimizationType: latency
  overrides:
    dgd:
      metadata:
        name: chat
        labels:
          team: search
  features:
    planner:
      min_endpoint: 2
  autoApply: false
`;

const dir = mkdtempSync(join(tmpdir(), 'inferplan-dgdr-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const run = (args: string[]) => runInProcess([registerDgdr], ['dgdr', ...args]);
const dgdOf = (yaml: string) => YAML.parseAllDocuments(yaml).map((d) => d.toJS()).find((d) => d.kind === 'DynamoGraphDeployment');

describe.skipIf(!existsSync(DGDR_CRD) || !existsSync(DGDR_CRD_V1BETA1))('the request fixtures', () => {
  it('are valid DGDRs of their version (checked against the DGDR CRDs)', () => {
    const v1alpha1 = crdValidator(DGDR_CRD, 'v1alpha1');
    const v1beta1 = crdValidator(DGDR_CRD_V1BETA1, 'v1beta1');
    expect(v1alpha1(YAML.parse(V1ALPHA1)), JSON.stringify(v1alpha1.errors)).toBe(true);
    for (const text of [V1BETA1_EXAMPLE, V1BETA1_FULL]) expect(v1beta1(YAML.parse(text)), JSON.stringify(v1beta1.errors)).toBe(true);
  });
});

describe('configure dgdr', () => {
  it('answers the v1alpha1 request with a 0.9 DGD, the planner and its profile ConfigMap', async () => {
    const r = await run([file('a.yaml', V1ALPHA1)]);
    expect(r.code, r.stderr).toBe(0);
    const docs = YAML.parseAllDocuments(r.stdout).map((d) => d.toJS());
    const dgd = docs.find((d) => d.kind === 'DynamoGraphDeployment');
    const cm = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'qwen3-sla-dgd-planner-profile');
    expect(dgd.apiVersion).toBe('nvidia.com/v1alpha1');
    expect(dgd.metadata).toMatchObject({ name: 'qwen3-sla-dgd', namespace: 'llm' });
    expect(cm.metadata.namespace).toBe('llm');
    const planner = dgd.spec.services.Planner;
    expect(planner.extraPodSpec.mainContainer.command).toEqual(['python3', '-m', 'dynamo.planner.planner_sla']);
    expect(planner.extraPodSpec.mainContainer.args).toEqual(expect.arrayContaining(['--ttft=200', '--itl=20', '--min-endpoint=2']));
    expect(dgd.spec.services.VllmDecodeWorker.extraPodSpec.mainContainer.image).toBe('nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.1');
    // Workers stay within maxNumGpusPerEngine; the prefill sweep has the requested granularity (+ the plan's ISL).
    for (const w of ['VllmPrefillWorker', 'VllmDecodeWorker']) expect(Number(dgd.spec.services[w].resources.limits.gpu)).toBeLessThanOrEqual(4);
    expect(JSON.parse(cm.data['prefill_raw_data.json']).prefill_isl.length).toBeLessThanOrEqual(9);
    // Fields without an effect offline are named, not silently dropped.
    expect(r.stderr).toContain('note: spec.profilingConfig.profilerImage');
    if (existsSync(DGD_CRD)) {
      const validate = crdValidator(DGD_CRD, 'v1alpha1');
      expect(validate(dgd), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
    }
  }, 30_000);

  it('answers the v1beta1 planner example with a v1beta1 DGD whose planner keeps the request\'s settings', async () => {
    const r = await run([file('b.yaml', V1BETA1_EXAMPLE), '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    const dgd = doc.documents.find((d: any) => d.kind === 'DynamoGraphDeployment');
    expect(dgd.metadata.name).toBe('planner-example-dgd');
    expect(dgd.apiVersion).toBe('nvidia.com/v1beta1');
    const planner = dgd.spec.components.find((c: any) => c.name === 'Planner');
    const config = JSON.parse(planner.podTemplate.spec.containers[0].args[1]);
    expect(config).toMatchObject({ optimization_target: 'sla', pre_deployment_sweeping_mode: 'rapid', mode: 'disagg', backend: 'vllm', ttft_ms: 600, itl_ms: 20, max_gpu_budget: 8 });
    expect(doc.metrics.ttftMs).toBeLessThanOrEqual(600);
    expect(doc.metrics.tpotMs).toBeLessThanOrEqual(20);
    if (existsSync(DGD_CRD_V1BETA1)) {
      const validate = crdValidator(DGD_CRD_V1BETA1, 'v1beta1');
      expect(validate(dgd), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
    }
  }, 30_000);

  it('sizes the full v1beta1 request for its load and writes the hand-off folder', async () => {
    const out = join(dir, 'answer');
    const r = await run([file('c.yaml', V1BETA1_FULL), '--out', out, '--plots']);
    expect(r.code, r.stderr).toBe(0);
    for (const f of ['k8s_deploy.yaml', 'planner_profile_configmap.yaml', 'planner/prefill_raw_data.json', 'planner/decode_raw_data.json', 'planner/decode_profile.png']) {
      expect(existsSync(join(out, f)), f).toBe(true);
    }
    const dgd = dgdOf(readFileSync(join(out, 'k8s_deploy.yaml'), 'utf8'));
    // overrides.dgd is merged over the generated DGD; the planner's ConfigMap is the one in the folder.
    expect(dgd.metadata).toMatchObject({ name: 'chat', namespace: 'serving', labels: { team: 'search' } });
    const cm = YAML.parse(readFileSync(join(out, 'planner_profile_configmap.yaml'), 'utf8'));
    const planner = dgd.spec.components.find((c: any) => c.name === 'Planner');
    expect(planner.podTemplate.spec.volumes[0].configMap.name).toBe(cm.metadata.name);
    expect(JSON.parse(planner.podTemplate.spec.containers[0].args[1])).toMatchObject({ min_endpoint: 2, max_gpu_budget: 16 });
    const gpus = dgd.spec.components.filter((c: any) => c.type === 'prefill' || c.type === 'decode')
      .reduce((n: number, c: any) => n + c.replicas * Number(c.podTemplate.spec.containers[0].resources.limits['nvidia.com/gpu']), 0);
    expect(gpus).toBeLessThanOrEqual(16);
    // backend auto with a vLLM runtime image searches vLLM only; autoApply false needs no note.
    expect(r.stderr).toContain('only vllm is searched');
    expect(r.stderr).not.toContain('spec.autoApply');
    expect(dgd.spec.backendFramework).toBe('vllm');
    // A second run refuses to write over the folder without --force.
    expect((await run([join(dir, 'c.yaml'), '--out', out])).code).toBe(2);
  }, 60_000);

  it('exits 2 naming an unknown field and what is accepted there', async () => {
    const bad = V1BETA1_EXAMPLE.replace('totalGpus: 8', 'totalGpus: 8\n    gpuCount: 8');
    const r = await run([file('unknown.yaml', bad)]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/spec\.hardware\.gpuCount is not a field of a v1beta1 DGDR; accepted there: gpuSku, vramMb, totalGpus/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 2 for other bad requests, one line each', async () => {
    const cases: Array<[string, RegExp]> = [
      [V1ALPHA1.replace('kind: DynamoGraphDeploymentRequest', 'kind: DynamoGraphDeployment'), /expected DynamoGraphDeploymentRequest/],
      [V1ALPHA1.replace('apiVersion: nvidia.com/v1alpha1', 'apiVersion: nvidia.com/v2'), /accepted: nvidia.com\/v1alpha1, nvidia.com\/v1beta1/],
      [V1ALPHA1.replace('  backend: vllm\n', '  backend: vllm\n  useMocker: true\n'), /spec\.useMocker: true is not supported offline/],
      [V1BETA1_EXAMPLE.replace('mode: disagg', 'mode: agg'), /mode "agg" is not supported/],
      [V1BETA1_EXAMPLE.replace('itl: 20', 'itl: fast'), /spec\.sla\.itl/],
      [V1ALPHA1.replace('        planner_min_endpoint: 2', '        min_endpoint: 2'), /planner_<name>/],
      ['a: [1, 2', /not YAML/],
    ];
    for (const [text, message] of cases) {
      const r = await run([file('bad.yaml', text)]);
      expect(r.code, text).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    expect((await run([join(dir, 'missing.yaml')])).code).toBe(2);
  });

  it('exits 3 with the reason when no layout meets the SLA', async () => {
    const r = await run([file('tight.yaml', V1BETA1_EXAMPLE.replace('ttft: 600', 'ttft: 5'))]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/ttft/i);
  }, 30_000);

  it('exits 4 for a GPU the request may name but we have no data for', async () => {
    const r = await run([file('l4.yaml', V1BETA1_EXAMPLE.replace('gpuSku: h200_sxm', 'gpuSku: l4'))]);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/GPU l4: no performance data/);
  });
});
