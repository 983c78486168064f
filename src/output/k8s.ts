// DynamoGraphDeployment for the whole GPU budget: a Frontend plus one worker component per role, each with the
// simulated engine arguments, as nvidia.com/v1alpha1 services (Dynamo before 1.2) or nvidia.com/v1beta1
// components (1.2 on). TRT-LLM engine YAML travels in a ConfigMap.
import YAML from 'yaml';
import { RUNTIME_VERSION_OVERRIDE_FROM } from '../inputs/dynamo-runtime.js';
import { compareVersions } from '../util/versions.js';
import { workerCommand, trtllmEngineConfig, ENGINE_CONFIG_DIR } from './engine-args.js';
import { describeMatch } from './images.js';
import { derivePlan, hostGpus, imageOf, type DeployPlan, type ImageComponent, type PlanInput, type WorkerGroup } from './plan.js';
import { k8sName } from './naming.js';

export const HF_SECRET = 'hf-token-secret';
export const MODEL_CACHE_PVC = 'model-cache';
export const MODEL_CACHE_MOUNT = '/opt/models';
export const SHARED_MEMORY = '80Gi';

const SERVICE_PREFIX = { vllm: 'Vllm', sglang: 'SGLang', trtllm: 'TRTLLM' } as const;

export function workerServiceName(plan: DeployPlan, g: WorkerGroup): string {
  const role = g.role === 'agg' ? '' : g.role === 'prefill' ? 'Prefill' : 'Decode';
  return `${SERVICE_PREFIX[plan.backend]}${role}Worker`;
}

export const YAML_OPTIONS = { version: '1.1', lineWidth: 0 } as const;

/** One component of the graph, before it is written in the shape of either API version. */
interface Component {
  name: string;
  role: ImageComponent;
  replicas: number;
  image: string;
  command?: string[];
  args?: string[];
  /** Container environment (the Frontend's router mode). */
  env?: Array<{ name: string; value: string }>;
  /** GPUs per pod, and pods per worker when a worker spans machines. */
  gpusPerPod?: number;
  nodeCount?: number;
  annotations?: Record<string, string>;
  /** ConfigMap holding the TRT-LLM engine YAML, mounted at ENGINE_CONFIG_DIR. */
  configMap?: string;
}

function workerComponent(plan: DeployPlan, g: WorkerGroup, configMap: string | undefined): Component {
  const cmd = workerCommand(plan, g);
  const host = hostGpus(g.system);
  const nodeCount = g.gpusPerWorker > host ? Math.ceil(g.gpusPerWorker / host) : 1;
  const c: Component = {
    name: workerServiceName(plan, g),
    role: g.role,
    replicas: g.workers,
    image: imageOf(plan, g.role),
    command: ['python3', '-m', cmd.module],
    args: cmd.args,
    gpusPerPod: nodeCount > 1 ? Math.ceil(g.gpusPerWorker / nodeCount) : g.gpusPerWorker,
    configMap,
  };
  if (nodeCount > 1) c.nodeCount = nodeCount;
  // Prefill and decode on different GPU types: say which; node labels differ between clusters, so the
  // nodeSelector is left to the user.
  if (new Set(plan.groups.map((x) => x.system.name)).size > 1) c.annotations = { 'inferplan/gpu-system': g.system.name };
  return c;
}

function frontendComponent(plan: DeployPlan): Component {
  const c: Component = { name: 'Frontend', role: 'frontend', replicas: 1, image: imageOf(plan, 'frontend') };
  // Shared prompt prefixes pay off only when requests are routed to the worker that holds them.
  if (plan.prefix > 0) c.env = [{ name: 'DYN_ROUTER_MODE', value: 'kv' }];
  return c;
}

/** A v1alpha1 service (spec.services.<name>). */
function v1alpha1Service(c: Component): Record<string, unknown> {
  const mainContainer: Record<string, unknown> = { image: c.image };
  if (c.role === 'frontend') {
    const svc: Record<string, unknown> = {
      componentType: 'frontend',
      replicas: c.replicas,
      envFromSecret: HF_SECRET,
      volumeMounts: [{ name: MODEL_CACHE_PVC, mountPoint: MODEL_CACHE_MOUNT }],
      extraPodSpec: { mainContainer },
    };
    if (c.env) svc.envs = c.env;
    return svc;
  }
  mainContainer.command = c.command;
  mainContainer.args = c.args;
  const extraPodSpec: Record<string, unknown> = { mainContainer };
  if (c.configMap) {
    mainContainer.volumeMounts = [{ name: 'engine-config', mountPath: ENGINE_CONFIG_DIR, readOnly: true }];
    extraPodSpec.volumes = [{ name: 'engine-config', configMap: { name: c.configMap } }];
  }
  const svc: Record<string, unknown> = { componentType: 'worker' };
  if (c.role !== 'agg') svc.subComponentType = c.role;
  if (c.annotations) svc.annotations = c.annotations;
  svc.replicas = c.replicas;
  svc.envFromSecret = HF_SECRET;
  svc.resources = { limits: { gpu: String(c.gpusPerPod) } };
  if (c.nodeCount) svc.multinode = { nodeCount: c.nodeCount };
  svc.sharedMemory = { size: SHARED_MEMORY };
  svc.volumeMounts = [{ name: MODEL_CACHE_PVC, mountPoint: MODEL_CACHE_MOUNT }];
  svc.extraPodSpec = extraPodSpec;
  return svc;
}

/**
 * A v1beta1 component (spec.components[]): the role is the `type` (disaggregated workers are `prefill` /
 * `decode`), the pod is a plain pod template whose container `main` runs the image, GPUs are the container's
 * `nvidia.com/gpu` limit, and the model cache is an ordinary PVC volume.
 */
function v1beta1Component(plan: DeployPlan, c: Component): Record<string, unknown> {
  const main: Record<string, unknown> = { name: 'main', image: c.image };
  if (c.command) main.command = c.command;
  if (c.args) main.args = c.args;
  if (c.env) main.env = c.env;
  main.envFrom = [{ secretRef: { name: HF_SECRET } }];
  if (c.gpusPerPod !== undefined) main.resources = { limits: { 'nvidia.com/gpu': String(c.gpusPerPod) } };
  const mounts: Array<Record<string, unknown>> = [{ name: MODEL_CACHE_PVC, mountPath: MODEL_CACHE_MOUNT }];
  const volumes: Array<Record<string, unknown>> = [{ name: MODEL_CACHE_PVC, persistentVolumeClaim: { claimName: MODEL_CACHE_PVC } }];
  if (c.configMap) {
    mounts.push({ name: 'engine-config', mountPath: ENGINE_CONFIG_DIR, readOnly: true });
    volumes.push({ name: 'engine-config', configMap: { name: c.configMap } });
  }
  main.volumeMounts = mounts;
  const out: Record<string, unknown> = {
    name: c.name,
    type: c.role === 'frontend' ? 'frontend' : c.role === 'agg' ? 'worker' : c.role,
    replicas: c.replicas,
  };
  if (c.nodeCount) out.multinode = { nodeCount: c.nodeCount };
  if (c.role !== 'frontend') out.sharedMemorySize = SHARED_MEMORY;
  // Admission needs the runtime version of an image whose tag may not be a Dynamo version (the user's own).
  if (c.image !== plan.image.image && compareVersions(plan.image.release, RUNTIME_VERSION_OVERRIDE_FROM) >= 0) {
    out.runtimeVersionOverride = plan.image.release;
  }
  const podTemplate: Record<string, unknown> = {};
  if (c.annotations) podTemplate.metadata = { annotations: c.annotations };
  podTemplate.spec = { containers: [main], volumes };
  out.podTemplate = podTemplate;
  return out;
}

/** One TRT-LLM engine YAML per worker group, named by role (also the ConfigMap's keys). */
function engineConfigFiles(plan: DeployPlan): Array<{ name: string; content: string }> {
  return plan.groups.map((g) => ({ name: `${g.role}_config.yaml`, content: YAML.stringify(trtllmEngineConfig(plan, g), YAML_OPTIONS) }));
}

/** How well the images match the predicted engine, and which the user gave. */
function imageAnnotation(plan: DeployPlan): string {
  const release = describeMatch(plan.backend, plan.image);
  const components: ImageComponent[] = ['frontend', ...plan.groups.map((g) => g.role)];
  const given = components.filter((c) => plan.userImages[c] !== undefined);
  if (given.length === 0) return release;
  const note = `given by the user (--image), not checked against ${plan.backend} ${plan.version}`;
  if (given.length === components.length) return `${note}; Dynamo ${plan.image.release} flags`;
  return `${note} for ${given.join(', ')}; others: ${release}`;
}

/** The manifest as plain objects: [ConfigMap (TRT-LLM only), DynamoGraphDeployment]. */
export function deployDocuments(plan: DeployPlan): Record<string, unknown>[] {
  const name = k8sName(plan.modelId, plan.mode);
  const docs: Record<string, unknown>[] = [];
  let configMap: string | undefined;
  if (plan.backend === 'trtllm') {
    configMap = `${name}-engine-config`;
    const data = Object.fromEntries(engineConfigFiles(plan).map((f) => [f.name, f.content]));
    docs.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configMap }, data });
  }
  const components = [frontendComponent(plan), ...plan.groups.map((g) => workerComponent(plan, g, configMap))];
  const metadata = {
    name,
    annotations: {
      'inferplan/plan': `${plan.mode} ${plan.parallel} on ${plan.gpusUsed} of ${plan.totalGpus} GPUs (${plan.replicas} replica${plan.replicas === 1 ? '' : 's'})`,
      'inferplan/engine': `${plan.backend} ${plan.version}`,
      'inferplan/dynamo-release': plan.image.release,
      'inferplan/image-match': imageAnnotation(plan),
      'inferplan/dynamo-flags': plan.dynamo,
    },
  };
  const spec: Record<string, unknown> =
    plan.apiVersion === 'nvidia.com/v1beta1'
      ? {
          backendFramework: plan.backend,
          env: [{ name: 'HF_HOME', value: MODEL_CACHE_MOUNT }],
          components: components.map((c) => v1beta1Component(plan, c)),
        }
      : {
          backendFramework: plan.backend,
          pvcs: [{ name: MODEL_CACHE_PVC, create: false }],
          envs: [{ name: 'HF_HOME', value: MODEL_CACHE_MOUNT }],
          services: Object.fromEntries(components.map((c) => [c.name, v1alpha1Service(c)])),
        };
  docs.push({ apiVersion: plan.apiVersion, kind: 'DynamoGraphDeployment', metadata, spec });
  return docs;
}

export function renderDocuments(docs: Record<string, unknown>[]): string {
  return docs.map((d) => YAML.stringify(d, YAML_OPTIONS)).join('---\n');
}

/** k8s_deploy.yaml text for one candidate. */
export function buildDeployManifest(p: PlanInput): string {
  return renderDocuments(deployDocuments(derivePlan(p)));
}

/** TRT-LLM engine YAML files (agg_config.yaml, or prefill_config.yaml + decode_config.yaml); none for other engines. */
export function buildEngineConfigs(p: PlanInput): Array<{ name: string; content: string }> {
  const plan = derivePlan(p);
  return plan.backend === 'trtllm' ? engineConfigFiles(plan) : [];
}
