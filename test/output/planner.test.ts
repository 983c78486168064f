// The SLA planner in the generated DGD: per Dynamo release spelling, valid against both CRD versions, the profile
// ConfigMap mounted where the planner reads it; agg plans get none; --planner fills the results directory.
import { existsSync } from 'node:fs';
import YAML from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ValidateFunction } from 'ajv';
import { loadEngineContext } from '../../src/cli/context.js';
import { readCommonInputs } from '../../src/cli/options.js';
import { runSearch } from '../../src/search/index.js';
import type { SearchResult } from '../../src/search/types.js';
import type { EngineContext } from '../../src/engine/types.js';
import { buildDeployManifest } from '../../src/output/k8s.js';
import type { PlanInput } from '../../src/output/plan.js';
import { PROFILE_MOUNT } from '../../src/output/planner.js';
import { AGG_PLANNER_NOTE, PlannerHandoff, plannerSettingsFor } from '../../src/output/planner-bundle.js';
import { profileJsonFiles } from '../../src/output/planner-profile.js';
import { buildResultsTree } from '../../src/output/results-dir.js';
import { crdValidator, DGD_CRD, DGD_CRD_V1BETA1 } from './planner-crd.js';

const RELEASES = ['0.9.1', '1.0.0', '1.1.0', '1.2.0', '1.4.0'] as const;
type Release = (typeof RELEASES)[number];

interface Run {
  backend: string;
  ctx: EngineContext;
  result: SearchResult;
}

const runs: Run[] = [];
beforeAll(async () => {
  for (const backend of ['vllm', 'sglang', 'trtllm']) {
    const ctx = await loadEngineContext(readCommonInputs({ hfId: 'Qwen/Qwen3-32B', system: 'h200_sxm', backend, isl: 4000, osl: 500, ttft: 600, tpot: 16.67 }));
    runs.push({ backend, ctx, result: runSearch(ctx, { totalGpus: 8, topN: 2, modes: ['agg', 'disagg'], sla: { ttftMs: 600, tpotMs: 16.67 } }) });
  }
}, 60_000);

function planWithPlanner(run: Run, dynamoVersion: string): PlanInput {
  const candidate = run.result.disagg!.top[0]!;
  const p: PlanInput = { inputs: run.result.inputs, ctx: run.ctx, candidate, dynamoVersion };
  const settings = plannerSettingsFor(p.inputs, p.ctx, candidate);
  if (typeof settings === 'string') throw new Error(settings);
  p.planner = settings;
  return p;
}

function docsOf(p: PlanInput): Record<string, any>[] {
  return YAML.parseAllDocuments(buildDeployManifest(p)).map((d) => d.toJS());
}

/** The Planner's container, command and volumes, whichever API version the manifest uses. */
function plannerOf(dgd: Record<string, any>): { image: string; command: string[]; args: string[]; mounts: any[]; volumes: any[]; workingDir?: string } {
  if (dgd.spec.components) {
    const c = dgd.spec.components.find((x: any) => x.name === 'Planner');
    expect(c.type).toBe('planner');
    const main = c.podTemplate.spec.containers[0];
    return { image: main.image, command: main.command, args: main.args, mounts: main.volumeMounts, volumes: c.podTemplate.spec.volumes };
  }
  const s = dgd.spec.services.Planner;
  expect(s.componentType).toBe('planner');
  const m = s.extraPodSpec.mainContainer;
  return { image: m.image, command: m.command, args: m.args, mounts: m.volumeMounts, volumes: s.extraPodSpec.volumes, workingDir: m.workingDir };
}

describe('the Planner in a disaggregated DGD', () => {
  it('is spelled as each Dynamo release reads it', () => {
    const run = runs[0]!;
    const expected: Record<Release, { api: string; image: RegExp; module: string; keys?: string[]; absent?: string[] }> = {
      '0.9.1': { api: 'nvidia.com/v1alpha1', image: /vllm-runtime:0\.9\.1$/, module: 'dynamo.planner.planner_sla' },
      '1.0.0': { api: 'nvidia.com/v1alpha1', image: /vllm-runtime:1\.0\.0$/, module: 'dynamo.planner', keys: ['ttft', 'itl', 'throughput_adjustment_interval'], absent: ['optimization_target', 'ttft_ms'] },
      '1.1.0': { api: 'nvidia.com/v1alpha1', image: /dynamo-planner:1\.1\.0$/, module: 'dynamo.planner', keys: ['ttft', 'itl', 'optimization_target'], absent: ['ttft_ms'] },
      '1.2.0': { api: 'nvidia.com/v1beta1', image: /dynamo-planner:1\.2\.0$/, module: 'dynamo.planner', keys: ['ttft_ms', 'itl_ms', 'throughput_adjustment_interval_seconds', 'optimization_target'], absent: ['ttft'] },
      '1.4.0': { api: 'nvidia.com/v1beta1', image: /dynamo-planner:1\.4\.0$/, module: 'dynamo.planner', keys: ['ttft_ms', 'itl_ms'], absent: ['itl'] },
    };
    for (const release of RELEASES) {
      const p = planWithPlanner(run, release);
      const docs = docsOf(p);
      const dgd = docs.find((d) => d.kind === 'DynamoGraphDeployment')!;
      const cm = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name.endsWith('-planner-profile'))!;
      const e = expected[release];
      expect(dgd.apiVersion, release).toBe(e.api);
      // The ConfigMap comes before the DGD that mounts it, and holds the profile JSON files.
      expect(docs.indexOf(cm)).toBeLessThan(docs.indexOf(dgd));
      expect(cm.data).toEqual(profileJsonFiles(p.planner!.profile));
      const pl = plannerOf(dgd);
      expect(pl.image, release).toMatch(e.image);
      expect(pl.command).toEqual(['python3', '-m', e.module]);
      expect(pl.volumes).toEqual([{ name: pl.mounts[0].name, configMap: { name: cm.metadata.name } }]);
      expect(pl.mounts[0].mountPath).toBe(PROFILE_MOUNT);
      const gpus = (role: string) => p.planner && (p.candidate.estimate as any).config[role].tp * (p.candidate.estimate as any).config[role].pp * (p.candidate.estimate as any).config[role].dp;
      if (e.keys === undefined) {
        expect(pl.workingDir).toBe('/workspace/components/src/dynamo/planner');
        expect(pl.args).toEqual(expect.arrayContaining(['--ttft=600', '--itl=16.67', `--prefill-engine-num-gpu=${gpus('prefill')}`, `--decode-engine-num-gpu=${gpus('decode')}`, '--max-gpu-budget=8', `--profile-results-dir=${PROFILE_MOUNT}`, '--backend=vllm']));
        continue;
      }
      expect(pl.args[0]).toBe('--config');
      const config = JSON.parse(pl.args[1]!);
      for (const k of e.keys) expect(config, `${release} ${k}`).toHaveProperty(k);
      for (const k of e.absent ?? []) expect(config, `${release} ${k}`).not.toHaveProperty(k);
      expect(config).toMatchObject({ backend: 'vllm', mode: 'disagg', prefill_engine_num_gpu: gpus('prefill'), decode_engine_num_gpu: gpus('decode'), max_gpu_budget: 8, profile_results_dir: PROFILE_MOUNT });
      if (config.optimization_target !== undefined) expect(config.optimization_target).toBe('sla');
    }
  });

  it('lets the user\'s planner settings win', () => {
    const p = planWithPlanner(runs[0]!, '1.4.0');
    p.planner = { ...p.planner!, overrides: { min_endpoint: 2, load_predictor: 'kalman' } };
    const config = JSON.parse(plannerOf(docsOf(p).find((d) => d.kind === 'DynamoGraphDeployment')!).args[1]!);
    expect(config).toMatchObject({ min_endpoint: 2, load_predictor: 'kalman' });
    const old = planWithPlanner(runs[0]!, '0.9.1');
    old.planner = { ...old.planner!, overrides: { planner_min_endpoint: 2 } };
    expect(plannerOf(docsOf(old).find((d) => d.kind === 'DynamoGraphDeployment')!).args).toContain('--min-endpoint=2');
  });

  it('is not added to agg plans, which say why', () => {
    const run = runs[0]!;
    const candidate = run.result.agg!.top[0]!;
    expect(plannerSettingsFor(run.result.inputs, run.ctx, candidate)).toBe(AGG_PLANNER_NOTE);
    const warnings = new Set<string>();
    const p: PlanInput = { inputs: run.result.inputs, ctx: run.ctx, candidate };
    new PlannerHandoff(true).attach('agg/top1', p, warnings);
    expect(p.planner).toBeUndefined();
    expect([...warnings][0]).toContain('agg plans get no Planner');
    expect(buildDeployManifest(p)).not.toContain('Planner');
  });
});

describe.skipIf(!existsSync(DGD_CRD) || !existsSync(DGD_CRD_V1BETA1))('DGDs with the Planner against the DynamoGraphDeployment CRDs', () => {
  let v1alpha1: ValidateFunction;
  let v1alpha1Newer: ValidateFunction;
  let v1beta1: ValidateFunction;
  beforeAll(() => {
    v1alpha1 = crdValidator(DGD_CRD, 'v1alpha1');
    v1alpha1Newer = crdValidator(DGD_CRD_V1BETA1, 'v1alpha1');
    v1beta1 = crdValidator(DGD_CRD_V1BETA1, 'v1beta1');
  });

  it('validate for every backend and release (v1alpha1 in both CRD files, v1beta1 in the newer)', () => {
    for (const run of runs) {
      for (const release of RELEASES) {
        const dgd = docsOf(planWithPlanner(run, release)).find((d) => d.kind === 'DynamoGraphDeployment')!;
        const checks = dgd.apiVersion === 'nvidia.com/v1beta1' ? [v1beta1] : [v1alpha1, v1alpha1Newer];
        for (const validate of checks) {
          const ok = validate(dgd);
          expect(ok, `${run.backend} ${release}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).toBe(true);
        }
      }
    }
  });

  it('reject a Planner with a malformed volume (the check can fail)', () => {
    const dgd = docsOf(planWithPlanner(runs[0]!, '1.4.0')).find((d) => d.kind === 'DynamoGraphDeployment')!;
    const planner = dgd.spec.components.find((c: any) => c.name === 'Planner');
    planner.podTemplate.spec.volumes[0].configMap = 'not-an-object';
    expect(v1beta1(dgd)).toBe(false);
    const old = docsOf(planWithPlanner(runs[0]!, '0.9.1')).find((d) => d.kind === 'DynamoGraphDeployment')!;
    old.spec.services.Planner.replicas = 'one';
    expect(v1alpha1(old)).toBe(false);
  });
});
if (!existsSync(DGD_CRD) || !existsSync(DGD_CRD_V1BETA1)) console.log('note: the Dynamo CRDs under ../shared/reference/dynamo-crds are absent; planner CRD checks skipped');

describe('--planner in a results directory', () => {
  it('writes the hand-off files beside each disaggregated candidate and leaves agg candidates alone', async () => {
    const run = runs[0]!;
    const { files, warnings } = await buildResultsTree(run.result, run.ctx, { reportText: '', json: {}, planner: true });
    const paths = files.map((f) => f.path);
    for (const dir of ['disagg/top1', 'disagg/top2']) {
      for (const f of ['planner_profile_configmap.yaml', 'planner/prefill_raw_data.json', 'planner/decode_raw_data.json', 'planner/selected_prefill_interpolation/raw_data.npz', 'planner/selected_decode_interpolation/raw_data.npz', 'planner/mocker_perf_data.npz', 'planner/prefill_profile.png', 'planner/decode_profile.png']) {
        expect(paths, `${dir}/${f}`).toContain(`${dir}/${f}`);
      }
      expect(String(files.find((f) => f.path === `${dir}/k8s_deploy.yaml`)!.content)).toContain('name: Planner');
    }
    expect(paths.some((p) => p.startsWith('agg/') && p.includes('planner'))).toBe(false);
    expect(warnings.some((w) => w.includes('agg plans get no Planner'))).toBe(true);
    const png = files.find((f) => f.path === 'disagg/top1/planner/decode_profile.png')!.content as Buffer;
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    // Without --planner no candidate gets one (the goldens hold the files of such runs).
    const p: PlanInput = { inputs: run.result.inputs, ctx: run.ctx, candidate: run.result.disagg!.top[0]! };
    new PlannerHandoff(false).attach('disagg/top1', p, new Set());
    expect(p.planner).toBeUndefined();
    expect(buildDeployManifest(p)).not.toContain('Planner');
  }, 60_000);
});
