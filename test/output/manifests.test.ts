import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import YAML from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildDeployManifest } from '../../src/output/k8s.js';
import { buildGeneratorConfig } from '../../src/output/generator-config.js';
import { buildBenchScript, buildRunScripts, packNodes } from '../../src/output/scripts.js';
import { derivePlan, type PlanInput } from '../../src/output/plan.js';
import { loadSystem } from '../../src/inputs/systems.js';
import { backendProfile, sglangTrtllmMoe } from '../../src/engine/backends.js';
import { aggCandidate, fixture, MOE } from './fixtures.js';
import { checkManifest, servicesOf, type Expect } from './engine-rules.js';
import { referencePath } from '../../src/util/paths.js';

const CRD = referencePath('dynamo-crds', 'nvidia.com_dynamographdeployments.yaml');
/** The DGD CRD of the 1.5.0 development line, which serves v1alpha1 (deprecated) and v1beta1. */
const CRD_V1BETA1 = referencePath('dynamo-crds', 'v1beta1', 'nvidia.com_dynamographdeployments.yaml');
const BACKENDS = ['vllm', 'sglang', 'trtllm'] as const;
/** Two lines (v1alpha1 manifests), the first release serving v1beta1 and the newest (runtimeVersionOverride). */
const PROFILES = ['0.9', '1.x', '1.2.0', '1.4.0'] as const;

/** Every top candidate of every mode, for each backend and flag profile (plus a prefix-caching and a MoE case). */
let cached: Array<{ label: string; p: PlanInput }> | undefined;
function cases(): Array<{ label: string; p: PlanInput }> {
  if (cached) return cached;
  const out: Array<{ label: string; p: PlanInput }> = [];
  for (const backend of BACKENDS) {
    for (const dynamoVersion of PROFILES) {
      for (const prefix of [0, 1000]) {
        const { result, ctx } = fixture({ backend, prefix });
        for (const mode of ['agg', 'disagg'] as const) {
          result[mode]!.top.forEach((candidate, i) => {
            out.push({ label: `${backend} ${dynamoVersion} ${mode} top${i + 1} prefix${prefix}`, p: { inputs: result.inputs, ctx, candidate, dynamoVersion } });
          });
        }
      }
      const het = fixture({ backend, modes: ['disagg'] });
      het.ctx.decodeSystem = loadSystem('b200_sxm');
      het.result.inputs.decodeSystem = 'b200_sxm';
      out.push({ label: `${backend} ${dynamoVersion} disagg h200->b200`, p: { inputs: het.result.inputs, ctx: het.ctx, candidate: het.result.disagg!.top[0], dynamoVersion } });
      const moe = fixture({ backend, model: MOE, modes: ['agg'], totalGpus: 16 });
      for (const cand of [aggCandidate(4, 64, 1, 300, 12, 16, true, 2), aggCandidate(16, 256, 1, 300, 12, 16, true)]) {
        out.push({ label: `${backend} ${dynamoVersion} moe ${cand.parallel}`, p: { inputs: moe.result.inputs, ctx: moe.ctx, candidate: cand, dynamoVersion } });
      }
      if (backend === 'sglang') {
        // Qwen3-MoE on B200: SGLang's experts on FlashInfer's TRT-LLM-gen runner where priced so (from 0.5.10),
        // Triton before.
        for (const version of ['0.5.9', '0.5.10', '0.5.14']) {
          const b200 = fixture({ backend, model: MOE, modes: ['agg'], totalGpus: 16, system: 'b200_sxm', version });
          const cand = aggCandidate(4, 64, 1, 300, 12, 16, true);
          out.push({ label: `${backend} ${dynamoVersion} b200 ${version} moe ${cand.parallel}`, p: { inputs: b200.result.inputs, ctx: b200.ctx, candidate: cand, dynamoVersion } });
        }
      }
      if (backend === 'trtllm') {
        // NVFP4 experts on Blackwell: trtllm-gen MoE kernels without attention DP, CUTLASS with it.
        const fp4 = fixture({ backend, model: { ...MOE, quant: { scheme: 'nvfp4', gemmDtype: 'nvfp4', moeDtype: 'nvfp4' } }, modes: ['agg'], totalGpus: 16, system: 'b200_sxm' });
        for (const cand of [aggCandidate(4, 64, 1, 300, 12, 16, true), aggCandidate(1, 64, 1, 300, 12, 16, true, 4)]) {
          out.push({ label: `${backend} ${dynamoVersion} b200 nvfp4 moe ${cand.parallel}`, p: { inputs: fp4.result.inputs, ctx: fp4.ctx, candidate: cand, dynamoVersion } });
        }
      }
    }
  }
  return (cached = out);
}

function expectFor(p: PlanInput): Expect {
  const plan = derivePlan(p);
  const roles: Expect['roles'] = {};
  const fp4Experts = plan.isMoe && (plan.moeDtype === 'nvfp4' || plan.moeDtype === 'mxfp4');
  for (const g of plan.groups) {
    const fp4Moe = fp4Experts && (g.system.gpu.tflops.nvfp4 ?? 0) > 0;
    const flashinferTrtllmMoe = plan.isMoe && sglangTrtllmMoe(backendProfile(plan.backend, plan.version, g.system.gpu), plan.architecture, g.system);
    roles[g.role] = { gpus: g.gpusPerWorker, batch: g.batchSize, dp: g.layout.dp, tokens: g.maxNumTokens, fp4Moe, flashinferTrtllmMoe };
  }
  return { backend: plan.backend, version: plan.version, dynamo: plan.dynamo, release: plan.image.release, userImages: p.images, isl: plan.isl, osl: plan.osl, roles };
}

/** A schema validator for one version of a CRD file. */
function crdValidator(file: string, version: string): ValidateFunction {
  const crd = YAML.parse(readFileSync(file, 'utf8'));
  const schema = crd.spec.versions.find((v: { name: string }) => v.name === version).schema.openAPIV3Schema;
  const ajv = new Ajv({ strict: false, allErrors: true });
  for (const f of ['int32', 'int64', 'date-time', 'byte', 'double', 'float']) ajv.addFormat(f, true);
  return ajv.compile(schema);
}

function dgdOf(text: string): Record<string, any> {
  return YAML.parseAllDocuments(text).map((d) => d.toJS()).find((d) => d.kind === 'DynamoGraphDeployment');
}

/** The cases with images given by the user: all components, and prefill only. */
function userImageCases(): Array<{ label: string; p: PlanInput }> {
  const out: Array<{ label: string; p: PlanInput }> = [];
  for (const backend of BACKENDS) {
    const { result, ctx } = fixture({ backend });
    for (const dynamoVersion of PROFILES) {
      const all = 'registry.example.com/dynamo/runtime:custom';
      const images = { frontend: all, agg: all, prefill: all, decode: all };
      out.push({ label: `${backend} ${dynamoVersion} agg --image`, p: { inputs: result.inputs, ctx, candidate: result.agg!.top[0], dynamoVersion, images } });
      out.push({ label: `${backend} ${dynamoVersion} disagg prefill image`, p: { inputs: result.inputs, ctx, candidate: result.disagg!.top[0], dynamoVersion, images: { prefill: `${all}@sha256:${'a'.repeat(64)}` } } });
    }
  }
  return out;
}

describe.skipIf(!existsSync(CRD))('k8s_deploy.yaml against the DynamoGraphDeployment CRD', () => {
  let validate: ValidateFunction;
  beforeAll(() => {
    validate = crdValidator(CRD, 'v1alpha1');
  });

  it('validates every generated v1alpha1 manifest (releases before 1.2.0)', () => {
    let n = 0;
    for (const { label, p } of [...cases(), ...userImageCases()]) {
      const dgd = dgdOf(buildDeployManifest(p));
      if (dgd.apiVersion !== 'nvidia.com/v1alpha1') continue;
      n++;
      const ok = validate(dgd);
      expect(ok, `${label}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).toBe(true);
    }
    expect(n).toBeGreaterThan(30);
  });

  it('validates the committed example in results/example', () => {
    const root = join(import.meta.dirname, '../../results/example');
    const found = spawnSync('find', [root, '-name', 'k8s_deploy.yaml'], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean);
    if (found.length === 0) console.log(`note: no manifests under ${root}`);
    for (const f of found) {
      const dgd = YAML.parseAllDocuments(readFileSync(f, 'utf8')).map((d) => d.toJS()).find((d) => d.kind === 'DynamoGraphDeployment');
      expect(validate(dgd), `${f}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).toBe(true);
    }
  });

  it('rejects a manifest with a numeric GPU limit (the check can fail)', () => {
    const { result, ctx } = fixture();
    const dgd = YAML.parseAllDocuments(buildDeployManifest({ inputs: result.inputs, ctx, candidate: result.agg!.top[0] }))[0].toJS();
    dgd.spec.services.VllmWorker.resources.limits.gpu = 2;
    expect(validate(dgd)).toBe(false);
  });
});
if (!existsSync(CRD)) console.log(`note: ${CRD} is absent; CRD schema checks skipped`);

describe.skipIf(!existsSync(CRD_V1BETA1))('k8s_deploy.yaml against the v1beta1 DynamoGraphDeployment CRD', () => {
  let validate: ValidateFunction;
  beforeAll(() => {
    validate = crdValidator(CRD_V1BETA1, 'v1beta1');
  });

  it('validates every generated v1beta1 manifest (releases from 1.2.0)', () => {
    let n = 0;
    for (const { label, p } of [...cases(), ...userImageCases()]) {
      const dgd = dgdOf(buildDeployManifest(p));
      if (dgd.apiVersion !== 'nvidia.com/v1beta1') continue;
      n++;
      const ok = validate(dgd);
      expect(ok, `${label}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).toBe(true);
    }
    expect(n).toBeGreaterThan(30);
  });

  it('rejects a component of an unknown type or name (the check can fail)', () => {
    const { result, ctx } = fixture();
    const dgd = dgdOf(buildDeployManifest({ inputs: result.inputs, ctx, candidate: result.agg!.top[0], dynamoVersion: '1.4.0' }));
    expect(validate(dgd)).toBe(true);
    dgd.spec.components[1].type = 'router';
    expect(validate(dgd)).toBe(false);
    dgd.spec.components[1].type = 'worker';
    dgd.spec.components[1].name = 'Vllm_Worker';
    expect(validate(dgd)).toBe(false);
  });
});
if (!existsSync(CRD_V1BETA1)) console.log(`note: ${CRD_V1BETA1} is absent; v1beta1 CRD schema checks skipped`);

describe('engine argument rules', () => {
  it('hold for every backend, mode and Dynamo release, and for images given by the user', () => {
    for (const { label, p } of [...cases(), ...userImageCases()]) {
      expect(checkManifest(buildDeployManifest(p), expectFor(p)), label).toEqual([]);
    }
  });

  it('catch a manifest whose batch size differs from the simulation', () => {
    const { result, ctx } = fixture();
    const p = { inputs: result.inputs, ctx, candidate: result.agg!.top[0] };
    const text = buildDeployManifest(p).replace('- "32"', '- "512"');
    expect(checkManifest(text, expectFor(p)).join()).toMatch(/max-num-seqs/);
  });

  it('deploy the whole budget: replicas x GPUs per worker = GPUs used', () => {
    for (const { label, p } of cases()) {
      const dgd = dgdOf(buildDeployManifest(p));
      let gpus = 0;
      for (const s of Object.values(servicesOf(dgd)) as any[]) {
        if (s.componentType === 'worker') gpus += s.replicas * Number(s.resources.limits.gpu) * (s.multinode?.nodeCount ?? 1);
      }
      expect(gpus, label).toBe(p.candidate.gpusUsed);
    }
  });

  it('pick the flag profile of the image when --dynamo-version is not given', () => {
    const args = (version: string, dynamoVersion?: string): string[] => {
      const { result, ctx } = fixture({ version });
      const docs = YAML.parseAllDocuments(buildDeployManifest({ inputs: result.inputs, ctx, candidate: result.disagg!.top[0], dynamoVersion }));
      const dgd = docs.map((d) => d.toJS()).find((d) => d.kind === 'DynamoGraphDeployment');
      return [dgd.spec.services.VllmPrefillWorker.extraPodSpec.mainContainer.image, ...dgd.spec.services.VllmPrefillWorker.extraPodSpec.mainContainer.args];
    };
    expect(args('0.12.0')).toEqual(expect.arrayContaining(['nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.1', '--is-prefill-worker']));
    expect(args('0.16.0')).toEqual(expect.arrayContaining(['nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0.2', '--disaggregation-mode']));
    expect(args('0.16.0')).not.toContain('--connector');
    expect(args('0.16.0', '0.9')).toEqual(expect.arrayContaining(['nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.1', '--is-prefill-worker']));
  });

  it('write the DGD API version the Dynamo release serves, and say how the image matches', () => {
    const dgd = (version: string, dynamoVersion?: string) => {
      const { result, ctx } = fixture({ version });
      return dgdOf(buildDeployManifest({ inputs: result.inputs, ctx, candidate: result.disagg!.top[0], dynamoVersion }));
    };
    const old = dgd('0.19.0');
    expect(old.apiVersion).toBe('nvidia.com/v1alpha1');
    expect(old.metadata.annotations).toMatchObject({ 'inferplan/dynamo-release': '1.1.1', 'inferplan/image-match': 'exact (image ships vllm 0.19.0)' });
    const neu = dgd('0.20.1');
    expect(neu.apiVersion).toBe('nvidia.com/v1beta1');
    expect(neu.metadata.annotations['inferplan/dynamo-release']).toBe('1.2.1');
    expect(neu.spec.components.map((c: any) => [c.name, c.type])).toEqual([['Frontend', 'frontend'], ['VllmPrefillWorker', 'prefill'], ['VllmDecodeWorker', 'decode']]);
    expect(neu.spec.components[1].podTemplate.spec.containers[0]).toMatchObject({ name: 'main', image: 'nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.1' });
    expect(neu.spec.components.every((c: any) => c.runtimeVersionOverride === undefined)).toBe(true);
    const asked = dgd('0.12.0', '1.4.0');
    expect(asked.apiVersion).toBe('nvidia.com/v1beta1');
    expect(asked.metadata.annotations['inferplan/image-match']).toBe('other-release (Dynamo 1.4.0 from --dynamo-version 1.4.0; image ships vllm 0.26.0)');
    expect(dgd('0.24.0').metadata.annotations['inferplan/image-match']).toBe('nearest (image ships vllm 0.26.0)');
  });

  it('run the images the user gives, say so, and declare their runtime version from 1.4.0', () => {
    const { result, ctx } = fixture();
    const img = 'registry.example.com/dynamo/vllm:my-tag';
    const p = (dynamoVersion: string, images: PlanInput['images']) => ({ inputs: result.inputs, ctx, candidate: result.disagg!.top[0], dynamoVersion, images });
    const all = dgdOf(buildDeployManifest(p('1.4.0', { frontend: img, prefill: img, decode: img })));
    expect(all.metadata.annotations['inferplan/image-match']).toBe('given by the user (--image), not checked against vllm 0.12.0; Dynamo 1.4.0 flags');
    for (const c of all.spec.components) {
      expect(c.podTemplate.spec.containers[0].image).toBe(img);
      expect(c.runtimeVersionOverride).toBe('1.4.0');
    }
    const some = dgdOf(buildDeployManifest(p('1.2.0', { decode: img })));
    expect(some.metadata.annotations['inferplan/image-match']).toBe(
      'given by the user (--image), not checked against vllm 0.12.0 for decode; others: other-release (Dynamo 1.2.0 from --dynamo-version 1.2.0; image ships vllm 0.20.1)',
    );
    expect(some.spec.components.map((c: any) => c.podTemplate.spec.containers[0].image)).toEqual([
      'nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.0',
      'nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.0',
      img,
    ]);
    // Before 1.4.0 the field does not exist.
    expect(some.spec.components.some((c: any) => 'runtimeVersionOverride' in c)).toBe(false);
    const alpha = dgdOf(buildDeployManifest(p('0.9', { agg: img, prefill: img })));
    expect(alpha.spec.services.VllmPrefillWorker.extraPodSpec.mainContainer.image).toBe(img);
    expect(alpha.spec.services.VllmDecodeWorker.extraPodSpec.mainContainer.image).toBe('nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.1');
  });

  it('mark the GPU system of each pool when prefill and decode differ', () => {
    const het = fixture({ modes: ['disagg'] });
    het.ctx.decodeSystem = loadSystem('b200_sxm');
    het.result.inputs.decodeSystem = 'b200_sxm';
    const p = { inputs: het.result.inputs, ctx: het.ctx, candidate: het.result.disagg!.top[0] };
    const dgd = YAML.parse(buildDeployManifest(p));
    expect(dgd.spec.services.VllmPrefillWorker.annotations).toEqual({ 'inferplan/gpu-system': 'h200_sxm' });
    expect(dgd.spec.services.VllmDecodeWorker.annotations).toEqual({ 'inferplan/gpu-system': 'b200_sxm' });
    expect(YAML.parse(buildGeneratorConfig(p)).decode_system).toBe('b200_sxm');
  });

  it('use multinode settings for a worker larger than a node', () => {
    const moe = fixture({ model: MOE, modes: ['agg'], totalGpus: 16 });
    const p = { inputs: moe.result.inputs, ctx: moe.ctx, candidate: aggCandidate(16, 256, 1, 300, 12, 16, true) };
    const dgd = YAML.parse(buildDeployManifest(p));
    expect(dgd.spec.services.VllmWorker.multinode).toEqual({ nodeCount: 2 });
    expect(dgd.spec.services.VllmWorker.resources.limits.gpu).toBe('8');
    expect(buildRunScripts(p).map((s) => s.name)).toEqual(['run_0.sh', 'run_1.sh']);
  });
});

const SHELLCHECK = 'shellcheck';
const hasShellcheck = spawnSync(SHELLCHECK, ['--version']).status === 0;
describe('run scripts', () => {
  const scripts: Array<{ label: string; name: string; content: string }> = [];
  for (const { label, p } of cases()) {
    for (const s of buildRunScripts(p)) scripts.push({ label, ...s });
    scripts.push({ label, name: 'bench.sh', content: buildBenchScript(p) });
  }

  it('pass bash -n and shellcheck', () => {
    const dir = mkdtempSync(join(tmpdir(), 'inferplan-sh-'));
    try {
      // Unique contents only: many cases share a script.
      const unique = [...new Map(scripts.map((s) => [s.content, s])).values()].map((s, i) => {
        const f = join(dir, `${i}_${s.name}`);
        writeFileSync(f, s.content);
        return f;
      });
      expect(unique.length).toBeGreaterThan(20);
      const syntax = spawnSync('bash', ['-c', 'for f in "$@"; do bash -n "$f" || echo "FAILED $f"; done', 'check', ...unique], { encoding: 'utf8' });
      expect(syntax.stdout + syntax.stderr).toBe('');
      if (!hasShellcheck) {
        console.log('note: shellcheck is not installed; shellcheck checks skipped (bash -n still ran)');
        return;
      }
      const r = spawnSync(SHELLCHECK, ['-S', 'style', ...unique], { encoding: 'utf8' });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('start the frontend only on node 0 and give each worker its own GPUs and ports', () => {
    for (const { label, p } of cases()) {
      const runs = buildRunScripts(p);
      runs.forEach((s, i) => {
        expect(s.content.includes('python3 -m dynamo.frontend'), `${label} ${s.name}`).toBe(i === 0);
        expect(s.content).toMatch(/^#!\/usr\/bin\/env bash\n/);
        expect(s.content).toContain('set -euo pipefail');
        expect(s.content).toContain('ETCD_ENDPOINTS="${ETCD_ENDPOINTS:-');
        expect(s.content).toContain('NATS_SERVER="${NATS_SERVER:-');
        const gpus = [...s.content.matchAll(/CUDA_VISIBLE_DEVICES='([0-9,]+)'/g)].flatMap((m) => m[1].split(','));
        expect(new Set(gpus).size, `${label} ${s.name} GPUs`).toBe(gpus.length);
        const ports = [...s.content.matchAll(/DYN_SYSTEM_PORT='(\d+)'/g)].map((m) => m[1]);
        expect(new Set(ports).size, `${label} ${s.name} ports`).toBe(ports.length);
      });
      const plan = derivePlan(p);
      const placed = packNodes(plan).flat().filter((x) => x.nodeRank === 0).length;
      expect(placed, label).toBe(plan.groups.reduce((a, g) => a + g.workers, 0));
    }
  });

  it('cannot be made to run a command by the model id', () => {
    const dir = mkdtempSync(join(tmpdir(), 'inferplan-sh-'));
    const marker = join(dir, 'pwned');
    const evil = `x'; touch ${marker}; echo '$(touch ${marker})\`touch ${marker}\`\ntouch ${marker}\n"$(touch ${marker})"`;
    const { result, ctx } = fixture({ modelId: evil });
    const p = { inputs: result.inputs, ctx, candidate: result.agg!.top[0] };
    try {
      // Stand-ins for the programs the scripts start, so the scripts run to the end here.
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      for (const tool of ['python3', 'aiperf']) {
        writeFileSync(join(bin, tool), '#!/bin/sh\nexit 0\n');
        chmodSync(join(bin, tool), 0o755);
      }
      for (const s of [...buildRunScripts(p), { name: 'bench.sh', content: buildBenchScript(p) }]) {
        const f = join(dir, s.name);
        writeFileSync(f, s.content);
        const r = spawnSync('bash', [f], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
        if (s.name.startsWith('run_')) expect(r.stderr, s.name).toContain(`model ${evil},`);
        expect(existsSync(marker), `${s.name} ran a command from the model id`).toBe(false);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
