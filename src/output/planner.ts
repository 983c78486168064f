// Dynamo's SLA planner in a disaggregated DynamoGraphDeployment: the Planner service, the ConfigMap holding
// the profile data it reads, and how both are spelled per Dynamo release (docs/planner.md):
//   0.9.x  v1alpha1 service, runtime image, `python3 -m dynamo.planner.planner_sla` with one flag per setting;
//   1.0.x  v1alpha1 service, runtime image, `python3 -m dynamo.planner --config <JSON>`;
//   1.1.x  as 1.0 with the dynamo-planner image and optimization_target sla;
//   1.2+   v1beta1 component; *_ms / *_seconds keys.
import type { DeployPlan } from './plan.js';
import { imageOf } from './plan.js';
import { IMAGE_REPOSITORY } from './images.js';
import { compareVersions } from '../util/versions.js';
import { profileJsonFiles, type PlannerProfile } from './planner-profile.js';

/** Where the planner reads the profile files (the profiler's mount point, under the image's workspace). */
export const PROFILE_MOUNT = '/workspace/profiling_results';
const PROFILE_VOLUME = 'planner-profile-data';
/** Seconds between the planner's throughput adjustments (the Dynamo examples use 60; its default is 180). */
export const ADJUSTMENT_INTERVAL_S = 60;

/** What the Planner service needs beyond the deployment plan. */
export interface PlannerSettings {
  profile: PlannerProfile;
  /** SLA targets, ms. */
  ttftMs: number;
  itlMs: number;
  /** GPUs the planner may scale the workers up to. */
  maxGpuBudget: number;
  /** Settings given by the user (a DGDR's features.planner or planner_* options), written over ours. */
  overrides?: Record<string, unknown>;
}

/** The planner's own image starts with Dynamo 1.1.0; earlier releases run it from the backend runtime image. */
const PLANNER_IMAGE_FROM = '1.1.0';
/** `--config` JSON replaces the flags with 1.0.0 (#6356). */
const CONFIG_JSON_FROM = '1.0.0';
/** optimization_target (only `sla` uses the targets and the profiles) arrives with 1.1.0 (#8137). */
const OPTIMIZATION_TARGET_FROM = '1.1.0';
/** ttft_ms / itl_ms and the *_seconds interval names (#9246) from 1.2.0; the old names stay accepted. */
const SUFFIXED_KEYS_FROM = '1.2.0';

export function profileConfigMapName(dgdName: string): string {
  return `${dgdName}-planner-profile`;
}

/** The ConfigMap of the profile JSON files (planner_profile_configmap.yaml; also in k8s_deploy.yaml). */
export function profileConfigMap(dgdName: string, profile: PlannerProfile, namespace?: string): Record<string, unknown> {
  const metadata: Record<string, unknown> = { name: profileConfigMapName(dgdName) };
  if (namespace !== undefined) metadata.namespace = namespace;
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata, data: { ...profileJsonFiles(profile) } };
}

function atLeast(release: string, from: string): boolean {
  return compareVersions(release, from) >= 0;
}

function workerGpus(plan: DeployPlan, role: 'prefill' | 'decode'): number {
  return plan.groups.find((g) => g.role === role)!.gpusPerWorker;
}

/** PlannerConfig (1.x) as the release names its keys; user overrides win. */
export function plannerConfig(plan: DeployPlan, s: PlannerSettings): Record<string, unknown> {
  const release = plan.image.release;
  const suffixed = atLeast(release, SUFFIXED_KEYS_FROM);
  const c: Record<string, unknown> = { environment: 'kubernetes', backend: plan.backend, mode: 'disagg' };
  if (atLeast(release, OPTIMIZATION_TARGET_FROM)) c.optimization_target = 'sla';
  c[suffixed ? 'ttft_ms' : 'ttft'] = s.ttftMs;
  c[suffixed ? 'itl_ms' : 'itl'] = s.itlMs;
  c[suffixed ? 'throughput_adjustment_interval_seconds' : 'throughput_adjustment_interval'] = ADJUSTMENT_INTERVAL_S;
  c.prefill_engine_num_gpu = workerGpus(plan, 'prefill');
  c.decode_engine_num_gpu = workerGpus(plan, 'decode');
  c.max_gpu_budget = s.maxGpuBudget;
  c.min_endpoint = 1;
  // Full curves, as a thorough sweep leaves them: the planner reads profile_results_dir, no in-cluster AIC run
  // ('none' is refused with throughput scaling on; 'rapid' expects aic_interpolation and warns without it).
  c.pre_deployment_sweeping_mode = 'thorough';
  c.profile_results_dir = PROFILE_MOUNT;
  return { ...c, ...(s.overrides ?? {}) };
}

/** 0.9 flags: one `--name=value` per setting; overrides arrive as planner_* keys or bare flag names. */
export function plannerFlags(plan: DeployPlan, s: PlannerSettings): string[] {
  const flags: Record<string, unknown> = {
    environment: 'kubernetes',
    backend: plan.backend,
    'adjustment-interval': ADJUSTMENT_INTERVAL_S,
    ttft: s.ttftMs,
    itl: s.itlMs,
    'prefill-engine-num-gpu': workerGpus(plan, 'prefill'),
    'decode-engine-num-gpu': workerGpus(plan, 'decode'),
    'max-gpu-budget': s.maxGpuBudget,
    'min-endpoint': 1,
    'profile-results-dir': PROFILE_MOUNT,
  };
  for (const [k, v] of Object.entries(s.overrides ?? {})) flags[k.replace(/^planner_/, '').replace(/_/g, '-')] = v;
  return Object.entries(flags).map(([k, v]) => `--${k}=${String(v)}`);
}

/** The planner's image: dynamo-planner from 1.1.0, else the runtime image the frontend runs (the user's --image included). */
export function plannerImage(plan: DeployPlan): string {
  return atLeast(plan.image.release, PLANNER_IMAGE_FROM) ? `${IMAGE_REPOSITORY}/dynamo-planner:${plan.image.release}` : imageOf(plan, 'frontend');
}

function command(plan: DeployPlan, s: PlannerSettings): { command: string[]; args: string[]; workingDir?: string } {
  if (!atLeast(plan.image.release, CONFIG_JSON_FROM)) {
    return { command: ['python3', '-m', 'dynamo.planner.planner_sla'], args: plannerFlags(plan, s), workingDir: '/workspace/components/src/dynamo/planner' };
  }
  return { command: ['python3', '-m', 'dynamo.planner'], args: ['--config', JSON.stringify(plannerConfig(plan, s))] };
}

const mount = { name: PROFILE_VOLUME, mountPath: PROFILE_MOUNT, readOnly: true };
const volume = (configMap: string) => ({ name: PROFILE_VOLUME, configMap: { name: configMap } });

/** spec.services.Planner (v1alpha1). */
export function plannerServiceV1alpha1(plan: DeployPlan, s: PlannerSettings, configMap: string): Record<string, unknown> {
  const cmd = command(plan, s);
  const mainContainer: Record<string, unknown> = { image: plannerImage(plan) };
  if (cmd.workingDir) mainContainer.workingDir = cmd.workingDir;
  Object.assign(mainContainer, { command: cmd.command, args: cmd.args, volumeMounts: [mount] });
  return { componentType: 'planner', replicas: 1, extraPodSpec: { mainContainer, volumes: [volume(configMap)] } };
}

/** spec.components[] item `Planner` (v1beta1). */
export function plannerComponentV1beta1(plan: DeployPlan, s: PlannerSettings, configMap: string): Record<string, unknown> {
  const cmd = command(plan, s);
  const main = { name: 'main', image: plannerImage(plan), command: cmd.command, args: cmd.args, volumeMounts: [mount] };
  return { name: 'Planner', type: 'planner', replicas: 1, podTemplate: { spec: { containers: [main], volumes: [volume(configMap)] } } };
}

/**
 * Add the planner to a rendered manifest (the documents deployDocuments returns): the profile ConfigMap
 * before the DynamoGraphDeployment, and the Planner service or component in it. Disaggregated plans only.
 */
export function withPlanner(docs: Record<string, unknown>[], plan: DeployPlan, s: PlannerSettings): Record<string, unknown>[] {
  if (plan.mode !== 'disagg') return docs;
  const at = docs.findIndex((d) => d.kind === 'DynamoGraphDeployment');
  if (at < 0) return docs;
  const dgd = docs[at] as { metadata: { name: string; namespace?: string }; spec: Record<string, unknown> };
  const cm = profileConfigMap(dgd.metadata.name, s.profile, dgd.metadata.namespace);
  const cmName = (cm.metadata as { name: string }).name;
  const spec = { ...dgd.spec };
  if (Array.isArray(spec.components)) spec.components = [...spec.components, plannerComponentV1beta1(plan, s, cmName)];
  else spec.services = { ...(spec.services as Record<string, unknown>), Planner: plannerServiceV1alpha1(plan, s, cmName) };
  return [...docs.slice(0, at), cm, { ...dgd, spec }, ...docs.slice(at + 1)];
}
