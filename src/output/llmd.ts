// llmd_values.yaml: Helm values for llm-d's model service chart (llm-d-incubation/llm-d-modelservice, read at
// chart v0.4.12) deploying the same layout as k8s_deploy.yaml, for clusters that run llm-d instead of Dynamo.
// The chart runs `vllm serve` and adds --model, --port, --served-model-name, --tensor-parallel-size and
// --data-parallel-size(-local) itself; every other engine flag comes from templates/engine-flags.yaml.
import YAML from 'yaml';
import { UnsupportedError } from '../util/errors.js';
import { workerCommand } from './engine-args.js';
import { clusterOf, YAML_OPTIONS } from './k8s.js';
import { derivePlan, hostGpus, type DeployPlan, type PlanInput, type WorkerGroup } from './plan.js';

/** Deployment targets of the results directory. */
export const TARGETS = ['dynamo', 'llm-d'] as const;
export type Target = (typeof TARGETS)[number];

/** Upstream vLLM image of the predicted version: the chart runs `vllm serve` from it. */
export const VLLM_IMAGE = 'vllm/vllm-openai';
/** The chart mounts the model volume here; pvc+hf:// hard-codes its hub cache under it. */
const CHART_MOUNT = '/model-cache';

/** Flags the chart writes itself, and Dynamo-only flags `vllm serve` does not know. */
const CHART_OWNED = new Set(['--model', '--served-model-name', '--tensor-parallel-size', '--data-parallel-size']);
const DYNAMO_ONLY = new Set(['--disaggregation-mode', '--is-prefill-worker', '--is-decode-worker', '--connector']);

/** Why the plan cannot be written for llm-d, or undefined. */
export function llmdRefusal(plan: DeployPlan): string | undefined {
  if (plan.backend !== 'vllm') return `--target llm-d deploys vLLM (the model service runs vllm serve), not ${plan.backend}; accepted: --backend vllm, or --target dynamo`;
  const wide = plan.groups.find((g) => g.gpusPerWorker > hostGpus(g.system));
  if (wide) return `--target llm-d writes single-node workers; this ${wide.role} worker spans ${Math.ceil(wide.gpusPerWorker / hostGpus(wide.system))} nodes; use --target dynamo`;
  if (new Set(plan.groups.map((g) => g.system.name)).size > 1) return '--target llm-d: prefill and decode on different GPU systems need a nodeSelector per pool; use --target dynamo';
  return undefined;
}

/** The vLLM flags of one pool, minus those the chart owns. KV transfer always goes through NIXL under llm-d. */
function vllmArgs(plan: DeployPlan, g: WorkerGroup): string[] {
  const args = workerCommand({ ...plan, dynamo: '1.x' }, g).args;
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    const takesValue = i + 1 < args.length && !args[i + 1].startsWith('--');
    if (CHART_OWNED.has(flag) || DYNAMO_ONLY.has(flag)) {
      if (takesValue) i++;
      continue;
    }
    out.push(flag);
    if (takesValue) out.push(args[++i]);
  }
  return out;
}

function pool(plan: DeployPlan, g: WorkerGroup, image: string): Record<string, unknown> {
  const gpus = String(g.gpusPerWorker);
  return {
    create: true,
    replicas: g.workers,
    // tensor x dataLocal is the chart's GPU count; pipeline stages ride in the args and the explicit limit.
    parallelism: { tensor: g.layout.tp, data: g.layout.dp, dataLocal: g.layout.dp, workers: 1 },
    containers: [
      {
        name: 'vllm',
        image,
        modelCommand: 'vllmServe',
        args: vllmArgs(plan, g),
        resources: { limits: { 'nvidia.com/gpu': gpus }, requests: { 'nvidia.com/gpu': gpus } },
        mountModelVolume: true,
      },
    ],
  };
}

/** The values as a plain object (InputError / UnsupportedError when the plan cannot run under llm-d). */
export function llmdValues(p: PlanInput): Record<string, unknown> {
  const plan = derivePlan(p);
  const refusal = llmdRefusal(plan);
  if (refusal) throw new UnsupportedError(refusal);
  const cluster = clusterOf(p);
  // Weights in the volume: pvc://claim/path; a Hub id downloads into the claim's hub cache (the layout
  // Dynamo's HF_HOME uses), so both targets share one volume.
  const uri = cluster.modelPath !== undefined ? `pvc://${cluster.modelCachePvc}/${cluster.modelPath}` : `pvc+hf://${cluster.modelCachePvc}/hub/${plan.modelId}`;
  const modelArtifacts: Record<string, unknown> = {
    name: cluster.servedModelName,
    uri,
    mountPath: CHART_MOUNT,
    readOnly: cluster.modelPath !== undefined,
  };
  if (cluster.hfTokenSecret !== undefined) modelArtifacts.authSecretName = cluster.hfTokenSecret;
  const disagg = plan.mode === 'disagg';
  const imageFor = (role: WorkerGroup['role']) => plan.userImages[role] ?? `${VLLM_IMAGE}:v${plan.version}`;
  const values: Record<string, unknown> = {
    multinode: false,
    modelArtifacts,
    // The routing sidecar sends prefill to the prefill pool over NIXL; aggregated pods are served directly.
    routing: { servicePort: 8000, proxy: { enabled: disagg, connector: 'nixlv2' } },
  };
  const decode = plan.groups.find((g) => g.role !== 'prefill')!;
  const prefill = plan.groups.find((g) => g.role === 'prefill');
  values.decode = pool(plan, decode, imageFor(decode.role));
  values.prefill = prefill ? pool(plan, prefill, imageFor('prefill')) : { create: false };
  if (cluster.imagePullSecret !== undefined) {
    for (const key of ['decode', 'prefill'] as const) {
      const v = values[key] as Record<string, unknown>;
      if (v.create) v.extraConfig = { imagePullSecrets: [{ name: cluster.imagePullSecret }] };
    }
  }
  return values;
}

/** llmd_values.yaml text: how to install it, then the values. */
export function buildLlmdValues(p: PlanInput): string {
  const plan = derivePlan(p);
  const values = llmdValues(p);
  const ns = clusterOf(p).namespace;
  const header = [
    `# llm-d model service values for ${plan.mode} ${plan.parallel} (${plan.backend} ${plan.version}; chart llm-d-modelservice v0.4.x).`,
    `#   helm install <release> llm-d-modelservice/llm-d-modelservice${ns !== undefined ? ` -n ${ns}` : ''} -f llmd_values.yaml`,
    '# The inference gateway and its InferencePool come from llm-d-infra / the llm-d guides.',
  ];
  return `${header.join('\n')}\n${YAML.stringify(values, YAML_OPTIONS)}`;
}
