// Reading a DynamoGraphDeploymentRequest (DGDR) to answer it offline: the v1alpha1 spelling (Dynamo 0.9, profiler
// settings in spec.profilingConfig.config) and the v1beta1 one (1.x: workload, sla, hardware at the top of spec).
// Every field is either used, or named in `notes` as having no effect offline; unknown fields are bad input.
import YAML from 'yaml';
import { z } from 'zod';
import { BACKENDS, type Backend } from '../inputs/types.js';
import { MAX_DEPLOYMENT_GPUS } from '../search/limits.js';
import { InputError } from '../util/errors.js';
import { escapeControl } from '../util/text.js';
import type { LoadTarget } from '../search/recommend.js';
import type { ClusterOptions } from './cluster.js';
import type { ProfileGrid } from './planner-profile.js';

const GROUP = 'nvidia.com';
const KIND = 'DynamoGraphDeploymentRequest';

const positive = z.number().positive();
const count = z.number().int().positive();
const stringMap = z.record(z.string(), z.string());
/** Kubernetes objects the operator would create from the request; read for their names only. */
const anything = z.unknown();

const metadata = z.object({ name: z.string().min(1), namespace: z.string().optional(), labels: stringMap.optional(), annotations: stringMap.optional() }).loose();

// v1alpha1: profiler settings in a free-form config, spelled as Dynamo 0.9's profiler reads them.
const v1alpha1Config = z.strictObject({
  sla: z.strictObject({ isl: count.optional(), osl: count.optional(), ttft: positive.optional(), itl: positive.optional() }).optional(),
  hardware: z
    .strictObject({ minNumGpusPerEngine: count.optional(), maxNumGpusPerEngine: count.optional(), numGpusPerNode: count.optional(), gpuType: z.string().optional() })
    .optional(),
  sweep: z
    .strictObject({
      useAiConfigurator: z.boolean().optional(),
      prefillInterpolationGranularity: count.optional(),
      decodeInterpolationGranularity: count.optional(),
      aicSystem: z.string().optional(),
      aicHfId: z.string().optional(),
      aicBackendVersion: z.string().optional(),
    })
    .optional(),
  planner: z.record(z.string().regex(/^planner_/, 'planner settings are spelled planner_<name>'), anything).optional(),
  deployment: z.strictObject({ modelCache: z.strictObject({ pvcName: z.string().optional(), pvcPath: z.string().optional(), mountPath: z.string().optional() }).optional() }).optional(),
});

const v1alpha1Spec = z.strictObject({
  model: z.string().min(1),
  backend: z.enum(BACKENDS),
  useMocker: z.boolean().optional(),
  enableGpuDiscovery: z.boolean().optional(),
  autoApply: z.boolean().optional(),
  runtimeVersionOverride: z.string().optional(),
  profilingConfig: z.strictObject({
    profilerImage: z.string(),
    config: v1alpha1Config.optional(),
    configMapRef: z.strictObject({ name: z.string(), key: z.string().optional() }).optional(),
    outputPVC: z.string().optional(),
    resources: anything.optional(),
    tolerations: anything.optional(),
    nodeSelector: anything.optional(),
  }),
  deploymentOverrides: z
    .strictObject({ name: z.string().optional(), namespace: z.string().optional(), labels: stringMap.optional(), annotations: stringMap.optional(), workersImage: z.string().optional() })
    .optional(),
});

const v1beta1Spec = z.strictObject({
  model: z.string().min(1),
  backend: z.enum(['auto', ...BACKENDS]).optional(),
  image: z.string().optional(),
  runtimeVersionOverride: z.string().optional(),
  modelCache: z.strictObject({ pvcName: z.string().optional(), pvcModelPath: z.string().optional(), pvcMountPath: z.string().optional() }).optional(),
  hardware: z
    .strictObject({
      gpuSku: z.string().optional(),
      vramMb: positive.optional(),
      totalGpus: count.max(MAX_DEPLOYMENT_GPUS).optional(),
      numGpusPerNode: count.optional(),
      interconnect: z.string().optional(),
      rdma: z.boolean().optional(),
    })
    .optional(),
  workload: z.strictObject({ isl: count.optional(), osl: count.optional(), concurrency: positive.optional(), requestRate: positive.optional() }).optional(),
  sla: z
    .strictObject({ ttft: positive.optional(), itl: positive.optional(), e2eLatency: positive.optional(), optimizationType: z.enum(['latency', 'throughput']).optional() })
    .optional(),
  overrides: z.strictObject({ profilingJob: anything.optional(), dgd: z.record(z.string(), anything).optional() }).optional(),
  features: z.strictObject({ planner: z.record(z.string(), anything).optional(), mocker: z.strictObject({ enabled: z.boolean().optional() }).optional() }).optional(),
  searchStrategy: z.enum(['rapid', 'thorough']).optional(),
  autoApply: z.boolean().optional(),
});

/** A DGDR reduced to what the search and the manifest builders take. */
export interface DgdrRequest {
  version: 'v1alpha1' | 'v1beta1';
  name: string;
  model: string;
  backend: Backend | 'auto';
  backendVersion?: string;
  /** The GPU system as the request names it (undefined: not named). */
  system?: string;
  /** The GPU budget of the search and the planner. */
  totalGpus?: number;
  gpusPerNode?: number;
  /** Limits on the GPUs of one prefill or decode worker. */
  minGpusPerEngine?: number;
  maxGpusPerEngine?: number;
  isl?: number;
  osl?: number;
  ttftMs?: number;
  itlMs?: number;
  requestLatencyMs?: number;
  optimization: 'throughput' | 'latency';
  load?: LoadTarget;
  grid: Partial<ProfileGrid>;
  /** Planner settings given by the request (snake_case PlannerConfig keys). */
  plannerOverrides: Record<string, unknown>;
  dynamoVersion?: string;
  /** Image of every component (v1beta1 `image`) or of the workers (v1alpha1 `workersImage`). */
  image?: string;
  workersImage?: string;
  cluster: ClusterOptions;
  dgdName: string;
  dgdLabels?: Record<string, string>;
  dgdAnnotations?: Record<string, string>;
  /** overrides.dgd (v1beta1): merged over the generated DGD. */
  dgdPatch?: Record<string, unknown>;
  /** Fields that change nothing offline, each named with why. */
  notes: string[];
}

/** The schema an issue's path points into (to list what it accepts). */
function shapeAt(schema: z.ZodType, path: PropertyKey[]): string[] {
  let s: unknown = schema;
  for (const key of path) {
    while (s instanceof z.ZodOptional) s = s.unwrap();
    if (!(s instanceof z.ZodObject)) return [];
    s = (s.shape as Record<string, unknown>)[String(key)];
  }
  while (s instanceof z.ZodOptional) s = s.unwrap();
  return s instanceof z.ZodObject ? Object.keys(s.shape) : [];
}

function firstProblem(file: string, version: string, schema: z.ZodType, error: z.ZodError): InputError {
  const issue = error.issues[0]!;
  const where = ['spec', ...issue.path.map(String)].join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => `${where}.${escapeControl(k)}`).join(', ');
    const accepted = shapeAt(schema, issue.path);
    return new InputError(`${file}: ${keys} ${issue.keys.length === 1 ? 'is not a field' : 'are not fields'} of a ${version} DGDR; accepted there: ${accepted.join(', ')}`);
  }
  // A record key that fails its pattern reports the pattern's own message one level down.
  const inner = issue.code === 'invalid_key' ? issue.issues[0]?.message : undefined;
  return new InputError(`${file}: ${where}: ${inner ?? issue.message}`);
}

function parseSpec<T>(file: string, version: string, schema: z.ZodType<T>, spec: unknown): T {
  const r = schema.safeParse(spec);
  if (!r.success) throw firstProblem(file, version, schema, r.error);
  return r.data;
}

/** A DGDR file's text as a request; InputError (exit 2) naming the first problem. */
export function parseDgdr(text: string, file: string): DgdrRequest {
  let doc: unknown;
  try {
    doc = YAML.parse(text, { maxAliasCount: 100 });
  } catch (e) {
    throw new InputError(`${file}: not YAML (${(e as Error).message.split('\n')[0]})`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new InputError(`${file}: expected one ${KIND} object`);
  const d = doc as Record<string, unknown>;
  if (d.kind !== KIND) throw new InputError(`${file}: kind is ${JSON.stringify(d.kind ?? null)}; expected ${KIND}`);
  const api = String(d.apiVersion ?? '');
  const meta = metadata.safeParse(d.metadata);
  if (!meta.success) throw new InputError(`${file}: metadata.name is required`);
  if (api === `${GROUP}/v1alpha1`) return fromV1alpha1(parseSpec(file, 'v1alpha1', v1alpha1Spec, d.spec), meta.data);
  if (api === `${GROUP}/v1beta1`) return fromV1beta1(parseSpec(file, 'v1beta1', v1beta1Spec, d.spec), meta.data);
  throw new InputError(`${file}: apiVersion ${JSON.stringify(d.apiVersion ?? null)} is not a DGDR version; accepted: ${GROUP}/v1alpha1, ${GROUP}/v1beta1`);
}

type Meta = z.infer<typeof metadata>;

/** planner_* profiler options and PlannerConfig keys as PlannerConfig keys; the mode must stay disagg. */
function plannerKeys(given: Record<string, unknown> | undefined, where: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(given ?? {})) out[k.replace(/^planner_/, '').replace(/-/g, '_')] = v;
  if (out.mode !== undefined && out.mode !== 'disagg') {
    throw new InputError(`${where}: mode ${JSON.stringify(out.mode)} is not supported; the planner profiles are of disaggregated layouts (accepted: disagg)`);
  }
  return out;
}

function fromV1alpha1(s: z.infer<typeof v1alpha1Spec>, meta: Meta): DgdrRequest {
  const c = s.profilingConfig.config ?? {};
  const notes: string[] = [];
  if (s.useMocker) throw new InputError('spec.useMocker: true is not supported offline (the DGD runs the real engines); accepted: false');
  notes.push('spec.profilingConfig.profilerImage: no profiling job runs offline');
  if (s.profilingConfig.configMapRef) notes.push(`spec.profilingConfig.configMapRef (${s.profilingConfig.configMapRef.name}): a base DGD in the cluster is not read offline; the DGD is built from the search`);
  for (const k of ['outputPVC', 'resources', 'tolerations', 'nodeSelector'] as const) {
    if (s.profilingConfig[k] !== undefined) notes.push(`spec.profilingConfig.${k}: settings of the profiling job, which does not run offline`);
  }
  if (s.enableGpuDiscovery !== undefined) notes.push('spec.enableGpuDiscovery: the GPUs come from profilingConfig.config.hardware (or --system / --total-gpus)');
  if (s.autoApply) notes.push('spec.autoApply: apply the written manifest yourself (kubectl apply -f)');
  if (c.sweep?.useAiConfigurator !== undefined) notes.push('spec.profilingConfig.config.sweep.useAiConfigurator: answered by inferplan\'s own search either way');
  const planner = plannerKeys(c.planner, 'spec.profilingConfig.config.planner');
  const o = s.deploymentOverrides;
  const cache = c.deployment?.modelCache;
  if (cache?.mountPath !== undefined) notes.push(`spec.profilingConfig.config.deployment.modelCache.mountPath: the model cache is mounted at inferplan's fixed path`);
  const budget = typeof planner.max_gpu_budget === 'number' ? planner.max_gpu_budget : undefined;
  return {
    version: 'v1alpha1',
    name: meta.name,
    model: c.sweep?.aicHfId ?? s.model,
    backend: s.backend,
    backendVersion: c.sweep?.aicBackendVersion,
    system: c.sweep?.aicSystem ?? c.hardware?.gpuType,
    totalGpus: budget,
    gpusPerNode: c.hardware?.numGpusPerNode,
    minGpusPerEngine: c.hardware?.minNumGpusPerEngine,
    maxGpusPerEngine: c.hardware?.maxNumGpusPerEngine,
    isl: c.sla?.isl,
    osl: c.sla?.osl,
    ttftMs: c.sla?.ttft,
    itlMs: c.sla?.itl,
    optimization: 'throughput',
    grid: { prefillPoints: c.sweep?.prefillInterpolationGranularity, decodePoints: c.sweep?.decodeInterpolationGranularity },
    plannerOverrides: planner,
    dynamoVersion: s.runtimeVersionOverride,
    workersImage: o?.workersImage,
    cluster: {
      ...(o?.namespace !== undefined || meta.namespace !== undefined ? { namespace: o?.namespace ?? meta.namespace } : {}),
      ...(cache?.pvcName !== undefined ? { modelCachePvc: cache.pvcName } : {}),
      ...(cache?.pvcPath !== undefined ? { modelCachePath: cache.pvcPath } : {}),
    },
    dgdName: o?.name ?? `${meta.name}-dgd`,
    dgdLabels: o?.labels,
    dgdAnnotations: o?.annotations,
    notes,
  };
}

function fromV1beta1(s: z.infer<typeof v1beta1Spec>, meta: Meta): DgdrRequest {
  const notes: string[] = [];
  if (s.features?.mocker?.enabled) throw new InputError('spec.features.mocker.enabled: true is not supported offline (the DGD runs the real engines); accepted: false');
  if (s.overrides?.profilingJob !== undefined) notes.push('spec.overrides.profilingJob: no profiling job runs offline');
  if (s.searchStrategy !== undefined) notes.push(`spec.searchStrategy ${s.searchStrategy}: answered by inferplan's own search either way`);
  if (s.autoApply !== false) notes.push('spec.autoApply: apply the written manifest yourself (kubectl apply -f)');
  const hw = s.hardware ?? {};
  if (hw.vramMb !== undefined) notes.push('spec.hardware.vramMb: the GPU memory comes from the system named by gpuSku');
  if (hw.interconnect !== undefined || hw.rdma !== undefined) notes.push('spec.hardware.interconnect / rdma: the KV-transfer fabric comes from the system named by gpuSku');
  if (s.modelCache?.pvcMountPath !== undefined) notes.push('spec.modelCache.pvcMountPath: the model cache is mounted at inferplan\'s fixed path');
  const planner = plannerKeys(s.features?.planner, 'spec.features.planner');
  if (planner.backend !== undefined && s.backend !== undefined && s.backend !== 'auto' && planner.backend !== s.backend) {
    throw new InputError(`spec.features.planner.backend ${JSON.stringify(planner.backend)} differs from spec.backend ${s.backend}`);
  }
  const w = s.workload ?? {};
  if (w.concurrency !== undefined && w.requestRate !== undefined) throw new InputError('spec.workload: give concurrency or requestRate, not both');
  const load: LoadTarget | undefined =
    w.concurrency !== undefined ? { kind: 'concurrency', clients: Math.ceil(w.concurrency) } : w.requestRate !== undefined ? { kind: 'rate', requestsPerS: w.requestRate } : undefined;
  const patch = s.overrides?.dgd;
  const patchMeta = (patch?.metadata ?? {}) as { name?: unknown };
  return {
    version: 'v1beta1',
    name: meta.name,
    model: s.model,
    backend: s.backend ?? 'auto',
    system: hw.gpuSku,
    totalGpus: hw.totalGpus,
    gpusPerNode: hw.numGpusPerNode,
    isl: w.isl,
    osl: w.osl,
    ttftMs: s.sla?.ttft,
    itlMs: s.sla?.itl,
    requestLatencyMs: s.sla?.e2eLatency,
    optimization: s.sla?.optimizationType ?? 'throughput',
    load,
    grid: {},
    plannerOverrides: planner,
    dynamoVersion: s.runtimeVersionOverride,
    image: s.image,
    cluster: {
      ...(meta.namespace !== undefined ? { namespace: meta.namespace } : {}),
      ...(s.modelCache?.pvcName !== undefined ? { modelCachePvc: s.modelCache.pvcName } : {}),
      ...(s.modelCache?.pvcModelPath !== undefined ? { modelCachePath: s.modelCache.pvcModelPath } : {}),
    },
    dgdName: typeof patchMeta.name === 'string' ? patchMeta.name : `${meta.name}-dgd`,
    dgdPatch: patch,
    notes,
  };
}

/** A JSON merge patch (RFC 7386): objects merge key by key, null removes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete base[k];
    else base[k] = mergePatch(base[k], v);
  }
  return base;
}

/** The request's name, labels and annotations on the generated DGD (before the planner, whose ConfigMap takes the name). */
export function namedDgd(docs: Record<string, unknown>[], req: DgdrRequest): Record<string, unknown>[] {
  return docs.map((d) => {
    if (d.kind !== 'DynamoGraphDeployment') return d;
    const meta: Record<string, unknown> = { ...(d.metadata as Record<string, unknown>), name: req.dgdName };
    if (req.dgdLabels) meta.labels = { ...(meta.labels as Record<string, string> | undefined), ...req.dgdLabels };
    if (req.dgdAnnotations) meta.annotations = { ...(meta.annotations as Record<string, string> | undefined), ...req.dgdAnnotations };
    return { ...d, metadata: meta };
  });
}

/** overrides.dgd (v1beta1) merged over the finished DGD. */
export function patchedDgd(docs: Record<string, unknown>[], req: DgdrRequest): Record<string, unknown>[] {
  const patch = req.dgdPatch;
  if (!patch) return docs;
  return docs.map((d) => (d.kind === 'DynamoGraphDeployment' ? (mergePatch(d, patch) as Record<string, unknown>) : d));
}
