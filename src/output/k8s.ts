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
import { resolveCluster, type ClusterSettings } from './cluster.js';
import { withPlanner } from './planner.js';

export const SHARED_MEMORY = '80Gi';
/** Name of the model-cache volume inside the pods (the PVC itself is ClusterSettings.modelCachePvc). */
const MODEL_CACHE_VOLUME = 'model-cache';
/** The pod-level name of the NVLink channel claim. */
const CHANNEL_CLAIM = 'compute-domain-channel';
/** Node label GPU feature discovery sets to the NVLink clique (one NVL72 rack) of a node. */
export const CLIQUE_LABEL = 'nvidia.com/gpu.clique';
/** Pod label tying the pods of one deployment together for the clique affinity. */
export const DEPLOYMENT_LABEL = 'inferplan/deployment';

/** The cluster settings of one candidate (PlanInput.cluster with defaults applied). */
export function clusterOf(p: PlanInput): ClusterSettings {
  return resolveCluster(p.cluster, { id: p.inputs.model, source: p.ctx.model.source });
}

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
  /** Workers that talk over a multi-node NVLink domain: the channel claim and the clique affinity. */
  nvlink?: NvlinkDomain;
}

/** The ComputeDomain the workers claim, and the pod label that keeps them in one NVLink clique. */
export interface NvlinkDomain {
  channelTemplate: string;
  /** Set when the whole deployment fits in one NVLink domain: every claiming pod lands in one clique. */
  sameClique?: { label: string; value: string };
}

/** Container image pull secrets, the HF token and the model cache, for every pod. */
function podSettings(cluster: ClusterSettings) {
  return {
    imagePullSecrets: cluster.imagePullSecret !== undefined ? [{ name: cluster.imagePullSecret }] : undefined,
    volumeMount: { name: MODEL_CACHE_VOLUME, mountPath: cluster.mountPath },
  };
}

/** Required pod affinity: pods carrying the deployment label share the node's NVLink clique. */
function cliqueAffinity(d: NvlinkDomain): Record<string, unknown> | undefined {
  if (!d.sameClique) return undefined;
  const term = { labelSelector: { matchLabels: { [d.sameClique.label]: d.sameClique.value } }, topologyKey: CLIQUE_LABEL };
  return { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } };
}

function workerComponent(plan: DeployPlan, g: WorkerGroup, configMap: string | undefined, cluster: ClusterSettings, nvlink: NvlinkDomain | undefined): Component {
  // The pods load the weights from the volume (or the Hub id into HF_HOME) and serve them under the chosen name.
  const cmd = workerCommand({ ...plan, modelId: cluster.modelArg, servedModelName: cluster.servedModelName }, g);
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
  if (nvlink) c.nvlink = nvlink;
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
function v1alpha1Service(c: Component, cluster: ClusterSettings): Record<string, unknown> {
  const pod = podSettings(cluster);
  // v1alpha1 mounts name an entry of spec.pvcs, i.e. the claim itself.
  const volumeMounts = [{ name: cluster.modelCachePvc, mountPoint: cluster.mountPath }];
  const mainContainer: Record<string, unknown> = { image: c.image };
  if (c.role === 'frontend') {
    const svc: Record<string, unknown> = { componentType: 'frontend', replicas: c.replicas };
    if (cluster.hfTokenSecret !== undefined) svc.envFromSecret = cluster.hfTokenSecret;
    svc.volumeMounts = volumeMounts;
    const extraPodSpec: Record<string, unknown> = {};
    if (pod.imagePullSecrets) extraPodSpec.imagePullSecrets = pod.imagePullSecrets;
    extraPodSpec.mainContainer = mainContainer;
    svc.extraPodSpec = extraPodSpec;
    if (c.env) svc.envs = c.env;
    return svc;
  }
  mainContainer.command = c.command;
  mainContainer.args = c.args;
  const extraPodSpec: Record<string, unknown> = {};
  if (pod.imagePullSecrets) extraPodSpec.imagePullSecrets = pod.imagePullSecrets;
  if (c.nvlink) {
    extraPodSpec.resourceClaims = [{ name: CHANNEL_CLAIM, resourceClaimTemplateName: c.nvlink.channelTemplate }];
    const affinity = cliqueAffinity(c.nvlink);
    if (affinity) extraPodSpec.affinity = affinity;
  }
  extraPodSpec.mainContainer = mainContainer;
  if (c.configMap) {
    mainContainer.volumeMounts = [{ name: 'engine-config', mountPath: ENGINE_CONFIG_DIR, readOnly: true }];
    extraPodSpec.volumes = [{ name: 'engine-config', configMap: { name: c.configMap } }];
  }
  const svc: Record<string, unknown> = { componentType: 'worker' };
  if (c.role !== 'agg') svc.subComponentType = c.role;
  if (c.annotations) svc.annotations = c.annotations;
  if (c.nvlink?.sameClique) svc.extraPodMetadata = { labels: { [c.nvlink.sameClique.label]: c.nvlink.sameClique.value } };
  svc.replicas = c.replicas;
  if (cluster.hfTokenSecret !== undefined) svc.envFromSecret = cluster.hfTokenSecret;
  const resources: Record<string, unknown> = { limits: { gpu: String(c.gpusPerPod) } };
  if (c.nvlink) resources.claims = [{ name: CHANNEL_CLAIM }];
  svc.resources = resources;
  if (c.nodeCount) svc.multinode = { nodeCount: c.nodeCount };
  svc.sharedMemory = { size: SHARED_MEMORY };
  svc.volumeMounts = volumeMounts;
  svc.extraPodSpec = extraPodSpec;
  return svc;
}

/**
 * A v1beta1 component (spec.components[]): the role is the `type` (disaggregated workers are `prefill` /
 * `decode`), the pod is a plain pod template whose container `main` runs the image, GPUs are the container's
 * `nvidia.com/gpu` limit, and the model cache is an ordinary PVC volume.
 */
function v1beta1Component(plan: DeployPlan, c: Component, cluster: ClusterSettings): Record<string, unknown> {
  const pod = podSettings(cluster);
  const main: Record<string, unknown> = { name: 'main', image: c.image };
  if (c.command) main.command = c.command;
  if (c.args) main.args = c.args;
  if (c.env) main.env = c.env;
  if (cluster.hfTokenSecret !== undefined) main.envFrom = [{ secretRef: { name: cluster.hfTokenSecret } }];
  if (c.gpusPerPod !== undefined) {
    const resources: Record<string, unknown> = { limits: { 'nvidia.com/gpu': String(c.gpusPerPod) } };
    if (c.nvlink) resources.claims = [{ name: CHANNEL_CLAIM }];
    main.resources = resources;
  }
  const mounts: Array<Record<string, unknown>> = [pod.volumeMount];
  const volumes: Array<Record<string, unknown>> = [{ name: MODEL_CACHE_VOLUME, persistentVolumeClaim: { claimName: cluster.modelCachePvc } }];
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
  const metadata: Record<string, unknown> = {};
  if (c.annotations) metadata.annotations = c.annotations;
  if (c.nvlink?.sameClique) metadata.labels = { [c.nvlink.sameClique.label]: c.nvlink.sameClique.value };
  if (Object.keys(metadata).length > 0) podTemplate.metadata = metadata;
  const spec: Record<string, unknown> = {};
  if (pod.imagePullSecrets) spec.imagePullSecrets = pod.imagePullSecrets;
  if (c.nvlink) {
    spec.resourceClaims = [{ name: CHANNEL_CLAIM, resourceClaimTemplateName: c.nvlink.channelTemplate }];
    const affinity = cliqueAffinity(c.nvlink);
    if (affinity) spec.affinity = affinity;
  }
  spec.containers = [main];
  spec.volumes = volumes;
  podTemplate.spec = spec;
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

/**
 * The NVLink domain the workers need, on systems whose NVLink domain spans several hosts (GB200 / GB300 NVL72:
 * 72 GPUs, 4 per tray): when a worker spans trays, or disaggregated KV moves between trays, the prediction
 * priced NVLink, which pods on different trays get only through a ComputeDomain's IMEX channel. Undefined when
 * no pod talks to another over NVLink, or the estimate priced the inter-node network (beyond one domain, or
 * prefill and decode on different systems).
 */
export function nvlinkDomainOf(plan: DeployPlan, name: string): NvlinkDomain | undefined {
  const system = plan.groups[0].system;
  if (plan.groups.some((g) => g.system.name !== system.name)) return undefined;
  const host = hostGpus(system);
  if (system.gpusPerNode <= host) return undefined;
  const spansTrays = plan.groups.some((g) => g.gpusPerWorker > host && g.gpusPerWorker <= system.gpusPerNode);
  const kvOverNvlink = plan.mode === 'disagg' && plan.gpusPerReplica <= system.gpusPerNode;
  if (!spansTrays && !kvOverNvlink) return undefined;
  const d: NvlinkDomain = { channelTemplate: `${name}-compute-domain-channel` };
  // One rack holds the whole deployment: keep every pod in it. Larger deployments need a topology
  // constraint per replica, which depends on the cluster (docs/output.md).
  if (plan.gpusUsed <= system.gpusPerNode) d.sameClique = { label: DEPLOYMENT_LABEL, value: name };
  return d;
}

/** A ComputeDomain (NVIDIA DRA driver) whose channel template the workers claim; numNodes 0 sizes it as pods land. */
function computeDomainDocument(name: string, d: NvlinkDomain): Record<string, unknown> {
  return {
    apiVersion: 'resource.nvidia.com/v1beta1',
    kind: 'ComputeDomain',
    metadata: { name: `${name}-compute-domain` },
    spec: { numNodes: 0, channel: { resourceClaimTemplate: { name: d.channelTemplate } } },
  };
}

/** The model cache, when --model-cache-size asks the manifest to create it: shared by pods on many nodes. */
function modelCacheDocument(cluster: ClusterSettings): Record<string, unknown> | undefined {
  if (cluster.modelCacheSize === undefined) return undefined;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: cluster.modelCachePvc },
    spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: cluster.modelCacheSize } } },
  };
}

/** metadata.namespace on every object, right after its name, when --namespace was given. */
export function inNamespace(doc: Record<string, unknown>, namespace: string | undefined): Record<string, unknown> {
  if (namespace === undefined) return doc;
  const { name, ...rest } = doc.metadata as Record<string, unknown>;
  return { ...doc, metadata: { name, namespace, ...rest } };
}

/**
 * The manifest as plain objects: [PersistentVolumeClaim (--model-cache-size)], [ComputeDomain (multi-tray
 * NVLink)], [ConfigMap (TRT-LLM only)], DynamoGraphDeployment.
 */
export function deployDocuments(plan: DeployPlan, cluster: ClusterSettings = resolveCluster(undefined, { id: plan.modelId, source: 'hub' })): Record<string, unknown>[] {
  const name = k8sName(plan.modelId, plan.mode);
  const docs: Record<string, unknown>[] = [];
  const pvc = modelCacheDocument(cluster);
  if (pvc) docs.push(pvc);
  const nvlink = nvlinkDomainOf(plan, name);
  if (nvlink) docs.push(computeDomainDocument(name, nvlink));
  let configMap: string | undefined;
  if (plan.backend === 'trtllm') {
    configMap = `${name}-engine-config`;
    const data = Object.fromEntries(engineConfigFiles(plan).map((f) => [f.name, f.content]));
    docs.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configMap }, data });
  }
  const components = [frontendComponent(plan), ...plan.groups.map((g) => workerComponent(plan, g, configMap, cluster, nvlink))];
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
          env: [{ name: 'HF_HOME', value: cluster.mountPath }],
          components: components.map((c) => v1beta1Component(plan, c, cluster)),
        }
      : {
          backendFramework: plan.backend,
          // The claim is never the operator's to create: a separate PersistentVolumeClaim outlives the graph.
          pvcs: [{ name: cluster.modelCachePvc, create: false }],
          envs: [{ name: 'HF_HOME', value: cluster.mountPath }],
          services: Object.fromEntries(components.map((c) => [c.name, v1alpha1Service(c, cluster)])),
        };
  docs.push({ apiVersion: plan.apiVersion, kind: 'DynamoGraphDeployment', metadata, spec });
  return docs.map((d) => inNamespace(d, cluster.namespace));
}

export function renderDocuments(docs: Record<string, unknown>[]): string {
  return docs.map((d) => YAML.stringify(d, YAML_OPTIONS)).join('---\n');
}

/** k8s_deploy.yaml text for one candidate. */
export function buildDeployManifest(p: PlanInput): string {
  const plan = derivePlan(p);
  const cluster = clusterOf(p);
  const docs = deployDocuments(plan, cluster);
  // --planner: the SLA planner and its profile ConfigMap (src/output/planner.ts).
  const all = p.planner ? withPlanner(docs, plan, p.planner) : docs;
  // Objects added after deployDocuments land in the same namespace.
  return renderDocuments(all.map((d) => inNamespace(d, cluster.namespace)));
}

/** TRT-LLM engine YAML files (agg_config.yaml, or prefill_config.yaml + decode_config.yaml); none for other engines. */
export function buildEngineConfigs(p: PlanInput): Array<{ name: string; content: string }> {
  const plan = derivePlan(p);
  return plan.backend === 'trtllm' ? engineConfigFiles(plan) : [];
}
