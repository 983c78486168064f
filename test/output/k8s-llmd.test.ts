// --target llm-d: Helm values for llm-d's model service with the layout of the prediction. The chart's
// values.schema.json is used when present at ../shared/reference/llm-d-modelservice/ (or LLMD_VALUES_SCHEMA).
import { existsSync, readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import YAML from 'yaml';
import { describe, expect, it } from 'vitest';
import { buildLlmdValues, llmdRefusal, llmdValues } from '../../src/output/llmd.js';
import { derivePlan, type PlanInput } from '../../src/output/plan.js';
import { buildResultsTree } from '../../src/output/results-dir.js';
import { referencePath } from '../../src/util/paths.js';
import { UnsupportedError } from '../../src/util/errors.js';
import { aggCandidate, DENSE, fixture, MOE } from './fixtures.js';
import { flagMap } from './engine-rules.js';

const SCHEMA = process.env.LLMD_VALUES_SCHEMA ?? referencePath('llm-d-modelservice', 'values.schema.json');

function cases(): Array<{ label: string; p: PlanInput }> {
  const out: Array<{ label: string; p: PlanInput }> = [];
  for (const prefix of [0, 1000]) {
    const { result, ctx } = fixture({ prefix });
    for (const mode of ['agg', 'disagg'] as const) {
      result[mode]!.top.forEach((candidate, i) => out.push({ label: `${mode} top${i + 1} prefix${prefix}`, p: { inputs: result.inputs, ctx, candidate } }));
    }
  }
  const moe = fixture({ model: MOE, modes: ['agg'] });
  out.push({ label: 'moe ep', p: { inputs: moe.result.inputs, ctx: moe.ctx, candidate: aggCandidate(4, 64, 2, 300, 12, 8, true, 2) } });
  const local = fixture({ model: { ...DENSE, source: '/data/l70fp8' }, modelId: 'l70fp8' });
  out.push({
    label: 'local checkpoint, every option',
    p: { inputs: local.result.inputs, ctx: local.ctx, candidate: local.result.disagg!.top[0], cluster: { imagePullSecret: 'pull', hfTokenSecret: 'none', namespace: 'llm' } },
  });
  return out;
}

describe('llmd_values.yaml', () => {
  it('carries the predicted layout: pools, replicas, GPUs and the engine flags the chart does not write', () => {
    for (const { label, p } of cases()) {
      const plan = derivePlan(p);
      const values = llmdValues(p) as Record<string, any>;
      for (const g of plan.groups) {
        const pool = values[g.role === 'prefill' ? 'prefill' : 'decode'];
        expect(pool.create, label).toBe(true);
        expect(pool.replicas, label).toBe(g.workers);
        expect(pool.parallelism, label).toEqual({ tensor: g.layout.tp, data: g.layout.dp, dataLocal: g.layout.dp, workers: 1 });
        const c = pool.containers[0];
        expect(c.resources.limits['nvidia.com/gpu'], label).toBe(String(g.gpusPerWorker));
        const flags = flagMap(c.args);
        // The chart writes these; a second copy would make vllm serve refuse or override them.
        for (const f of ['--model', '--served-model-name', '--tensor-parallel-size', '--data-parallel-size', '--disaggregation-mode']) expect(flags.has(f), `${label} ${f}`).toBe(false);
        expect(flags.get('--max-num-seqs'), label).toBe(String(Math.ceil(g.batchSize / g.layout.dp)));
        expect(flags.get('--pipeline-parallel-size'), label).toBe(String(g.layout.pp));
        expect(flags.has('--kv-transfer-config'), label).toBe(plan.mode === 'disagg');
        expect(flags.has('--enable-expert-parallel'), label).toBe(g.layout.moeEp > 1);
        expect(c.image, label).toBe(`vllm/vllm-openai:v${plan.version}`);
      }
      if (plan.mode === 'agg') expect(values.prefill, label).toEqual({ create: false });
      expect(values.routing.proxy.enabled, label).toBe(plan.mode === 'disagg');
    }
  });

  it('reads the weights where the Dynamo manifest does: the hub cache of the model-cache PVC, or the in-volume path', () => {
    const [hub, , , , , , , , , , , local] = cases();
    expect((llmdValues(hub.p) as any).modelArtifacts).toEqual({
      name: 'Qwen/Qwen3-32B',
      uri: 'pvc+hf://model-cache/hub/Qwen/Qwen3-32B',
      mountPath: '/model-cache',
      readOnly: false,
      authSecretName: 'hf-token-secret',
    });
    const v = llmdValues(local.p) as any;
    expect(v.modelArtifacts).toEqual({ name: 'l70fp8', uri: 'pvc://model-cache/l70fp8', mountPath: '/model-cache', readOnly: true });
    expect(v.decode.extraConfig).toEqual({ imagePullSecrets: [{ name: 'pull' }] });
    expect(buildLlmdValues(local.p)).toMatch(/^# llm-d model service values .*\n# {3}helm install <release> llm-d-modelservice\/llm-d-modelservice -n llm -f llmd_values.yaml\n/);
  });

  it('refuses what the chart cannot run as predicted, naming the alternative', () => {
    const sg = fixture({ backend: 'sglang' });
    expect(() => llmdValues({ inputs: sg.result.inputs, ctx: sg.ctx, candidate: sg.result.agg!.top[0] })).toThrow(UnsupportedError);
    const moe = fixture({ model: MOE, modes: ['agg'], totalGpus: 16 });
    const plan = derivePlan({ inputs: moe.result.inputs, ctx: moe.ctx, candidate: aggCandidate(16, 256, 1, 300, 12, 16, true) });
    expect(llmdRefusal(plan)).toMatch(/spans 2 nodes; use --target dynamo/);
  });

  it('replaces k8s_deploy.yaml in the results directory, and exits 4 for other engines', async () => {
    const { result, ctx } = fixture();
    const tree = await buildResultsTree(result, ctx, { reportText: 'r\n', json: {}, target: 'llm-d' });
    const paths = tree.files.map((f) => f.path);
    expect(paths.filter((p) => p.endsWith('llmd_values.yaml')).length).toBe(result.agg!.top.length + result.disagg!.top.length);
    expect(paths.some((p) => p.endsWith('k8s_deploy.yaml') || p.endsWith('k8s_bench.yaml'))).toBe(false);
    const sg = fixture({ backend: 'sglang' });
    await expect(buildResultsTree(sg.result, sg.ctx, { reportText: 'r\n', json: {}, target: 'llm-d' })).rejects.toThrow(/--target llm-d deploys vLLM/);
  });
});

describe.skipIf(!existsSync(SCHEMA))("llmd_values.yaml against the chart's values.schema.json", () => {
  it('validates every case', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    for (const f of ['int32', 'int64', 'date-time', 'byte', 'double', 'float']) ajv.addFormat(f, true);
    const validate = ajv.compile(JSON.parse(readFileSync(SCHEMA, 'utf8')));
    for (const { label, p } of cases()) {
      const values = YAML.parse(buildLlmdValues(p));
      expect(validate(values), `${label}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).toBe(true);
    }
    // The check can fail: the schema types the replica count.
    const bad = YAML.parse(buildLlmdValues(cases()[0].p));
    bad.decode.replicas = 'two';
    expect(validate(bad)).toBe(false);
  });
});
if (!existsSync(SCHEMA)) console.log(`note: ${SCHEMA} is absent; llm-d values schema check skipped`);
