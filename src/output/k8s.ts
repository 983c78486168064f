// DynamoGraphDeployment (nvidia.com/v1alpha1) for the whole GPU budget: a Frontend plus one worker
// service per role, each with the simulated engine arguments. TRT-LLM engine YAML travels in a ConfigMap.
import YAML from 'yaml';
import { workerCommand, trtllmEngineConfig, ENGINE_CONFIG_DIR } from './engine-args.js';
import { derivePlan, hostGpus, type DeployPlan, type PlanInput, type WorkerGroup } from './plan.js';
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

function workerService(plan: DeployPlan, g: WorkerGroup, configMap: string | undefined): Record<string, unknown> {
  const cmd = workerCommand(plan, g);
  const host = hostGpus(g.system);
  const nodeCount = g.gpusPerWorker > host ? Math.ceil(g.gpusPerWorker / host) : 1;
  const gpusPerPod = nodeCount > 1 ? Math.ceil(g.gpusPerWorker / nodeCount) : g.gpusPerWorker;
  const mainContainer: Record<string, unknown> = {
    image: plan.image.image,
    command: ['python3', '-m', cmd.module],
    args: cmd.args,
  };
  const extraPodSpec: Record<string, unknown> = { mainContainer };
  if (configMap) {
    mainContainer.volumeMounts = [{ name: 'engine-config', mountPath: ENGINE_CONFIG_DIR, readOnly: true }];
    extraPodSpec.volumes = [{ name: 'engine-config', configMap: { name: configMap } }];
  }
  const svc: Record<string, unknown> = { componentType: 'worker' };
  if (g.role !== 'agg') svc.subComponentType = g.role;
  // Prefill and decode on different GPU types: say which; node labels differ between clusters, so the
  // nodeSelector is left to the user.
  if (new Set(plan.groups.map((x) => x.system.name)).size > 1) svc.annotations = { 'inferplan/gpu-system': g.system.name };
  svc.replicas = g.workers;
  svc.envFromSecret = HF_SECRET;
  svc.resources = { limits: { gpu: String(gpusPerPod) } };
  if (nodeCount > 1) svc.multinode = { nodeCount };
  svc.sharedMemory = { size: SHARED_MEMORY };
  svc.volumeMounts = [{ name: MODEL_CACHE_PVC, mountPoint: MODEL_CACHE_MOUNT }];
  svc.extraPodSpec = extraPodSpec;
  return svc;
}

/** One TRT-LLM engine YAML per worker group, named by role (also the ConfigMap's keys). */
function engineConfigFiles(plan: DeployPlan): Array<{ name: string; content: string }> {
  return plan.groups.map((g) => ({ name: `${g.role}_config.yaml`, content: YAML.stringify(trtllmEngineConfig(plan, g), YAML_OPTIONS) }));
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
  const frontend: Record<string, unknown> = {
    componentType: 'frontend',
    replicas: 1,
    envFromSecret: HF_SECRET,
    volumeMounts: [{ name: MODEL_CACHE_PVC, mountPoint: MODEL_CACHE_MOUNT }],
    extraPodSpec: { mainContainer: { image: plan.image.image } },
  };
  // Shared prompt prefixes pay off only when requests are routed to the worker that holds them.
  if (plan.prefix > 0) frontend.envs = [{ name: 'DYN_ROUTER_MODE', value: 'kv' }];
  const services: Record<string, unknown> = { Frontend: frontend };
  for (const g of plan.groups) services[workerServiceName(plan, g)] = workerService(plan, g, configMap);
  docs.push({
    apiVersion: 'nvidia.com/v1alpha1',
    kind: 'DynamoGraphDeployment',
    metadata: {
      name,
      annotations: {
        'inferplan/plan': `${plan.mode} ${plan.parallel} on ${plan.gpusUsed} of ${plan.totalGpus} GPUs (${plan.replicas} replica${plan.replicas === 1 ? '' : 's'})`,
        'inferplan/engine': `${plan.backend} ${plan.version}`,
        'inferplan/image-match': `${plan.image.match} (image ships ${plan.backend} ${plan.image.shipsVersion})`,
        'inferplan/dynamo-flags': plan.dynamo,
      },
    },
    spec: {
      backendFramework: plan.backend,
      pvcs: [{ name: MODEL_CACHE_PVC, create: false }],
      envs: [{ name: 'HF_HOME', value: MODEL_CACHE_MOUNT }],
      services,
    },
  });
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
