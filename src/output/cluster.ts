// Cluster settings of the generated manifests: namespace, secrets, the model-cache volume and where the
// weights live in it, and the name clients ask for. Checked here once (Kubernetes name and quantity rules),
// so a manifest that kubectl or the API server would refuse is never written.
import { z } from 'zod';
import { InputError } from '../util/errors.js';

/** The settings as given (CLI flags or an experiment's `cluster:` key); absent ones take the defaults. */
export interface ClusterOptions {
  namespace?: string;
  imagePullSecret?: string;
  /** A Secret name, or 'none' for no token (public models). */
  hfTokenSecret?: string;
  modelCachePvc?: string;
  /** Given: the manifest creates the PVC with this size; absent: the PVC must exist. */
  modelCacheSize?: string;
  /**
   * Where the weights are inside the volume (relative); the workers load them from there. The flag is
   * --model-cache-path: --model-path is aiconfigurator's spelling of --hf-id.
   */
  modelCachePath?: string;
  servedModelName?: string;
}

/** The settings every manifest builder reads, defaults applied. */
export interface ClusterSettings {
  /** metadata.namespace of every object; undefined: kubectl's current namespace. */
  namespace?: string;
  imagePullSecret?: string;
  /** undefined: no Secret is referenced. */
  hfTokenSecret?: string;
  modelCachePvc: string;
  /** Set: a PersistentVolumeClaim of this size is part of the manifest. */
  modelCacheSize?: string;
  /** Mount point of the model cache in every pod (HF_HOME). */
  mountPath: string;
  /** The engines' --model: the in-volume path, or the Hub id (downloaded into HF_HOME). */
  modelArg: string;
  /** In-volume path relative to mountPath, when the weights are read from the volume. */
  modelPath?: string;
  servedModelName: string;
}

/** The names Dynamo's own guides use, so a cluster set up by them needs no flag. */
export const CLUSTER_DEFAULTS = {
  hfTokenSecret: 'hf-token-secret',
  modelCachePvc: 'model-cache',
  mountPath: '/opt/models',
} as const;

// Kubernetes object names: namespaces are DNS-1123 labels, Secrets and PVCs DNS-1123 subdomains.
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A storage size as resource.Quantity writes it: a positive number with a binary or decimal suffix. */
const STORAGE_QUANTITY = /^([0-9]+(\.[0-9]+)?|\.[0-9]+)([KMGTPE]i|[kMGTPE])?$/;

export function checkLabel(what: string, v: string): string {
  if (v.length > 63 || !DNS1123_LABEL.test(v)) {
    throw new InputError(`${what} "${v}" is not a Kubernetes namespace name; accepted: up to 63 lowercase letters, digits or "-", starting and ending with a letter or digit`);
  }
  return v;
}

export function checkSubdomain(what: string, v: string): string {
  if (v.length > 253 || !DNS1123_SUBDOMAIN.test(v)) {
    throw new InputError(`${what} "${v}" is not a Kubernetes object name; accepted: up to 253 lowercase letters, digits, "-" or ".", starting and ending with a letter or digit`);
  }
  return v;
}

export function checkQuantity(what: string, v: string): string {
  const m = STORAGE_QUANTITY.exec(v);
  if (!m || Number(m[1]) <= 0) throw new InputError(`${what} "${v}" is not a storage size; accepted: a positive number with an optional suffix such as 500Gi, 2Ti or 800G`);
  return v;
}

/** A relative path inside the volume: no leading "/", no "..", no empty or odd segments. */
export function checkModelPath(what: string, v: string): string {
  const s = v.replace(/\/+$/, '');
  const segments = s.split('/');
  const bad = s === '' || s.startsWith('/') || segments.some((p) => p === '' || p === '.' || p === '..' || !/^[A-Za-z0-9._-]+$/.test(p));
  if (bad) throw new InputError(`${what} "${v}" is not a path inside the model-cache volume; accepted: a relative path of letters, digits, ".", "_" or "-" segments, such as llama-70b or org/model`);
  return s;
}

/** What OpenAI clients send as "model": printable, no spaces (engines and AIPerf take it as one word). */
export function checkServedModelName(what: string, v: string): string {
  if (v === '' || v.length > 256 || !/^[\x21-\x7e]+$/.test(v)) {
    throw new InputError(`${what} "${v}" is not a served model name; accepted: 1 to 256 printable characters without spaces`);
  }
  return v;
}

function checkSecret(what: string, v: string): string {
  return v === 'none' ? v : checkSubdomain(what, v);
}

/** Each option's check, keyed by its field; `what` names the flag or YAML key in errors. */
export const CLUSTER_CHECKS: Record<keyof ClusterOptions, (what: string, v: string) => string> = {
  namespace: checkLabel,
  imagePullSecret: checkSubdomain,
  hfTokenSecret: checkSecret,
  modelCachePvc: checkSubdomain,
  modelCacheSize: checkQuantity,
  modelCachePath: checkModelPath,
  servedModelName: checkServedModelName,
};

/** Flag spelling of each option. */
export const CLUSTER_FLAGS: Record<keyof ClusterOptions, string> = {
  namespace: '--namespace',
  imagePullSecret: '--image-pull-secret',
  hfTokenSecret: '--hf-token-secret',
  modelCachePvc: '--model-cache-pvc',
  modelCacheSize: '--model-cache-size',
  modelCachePath: '--model-cache-path',
  servedModelName: '--served-model-name',
};

/** Key of each option in an experiment's `cluster:` mapping. */
export const CLUSTER_YAML_KEYS: Record<keyof ClusterOptions, string> = {
  namespace: 'namespace',
  imagePullSecret: 'image_pull_secret',
  hfTokenSecret: 'hf_token_secret',
  modelCachePvc: 'model_cache_pvc',
  modelCacheSize: 'model_cache_size',
  modelCachePath: 'model_cache_path',
  servedModelName: 'served_model_name',
};

const FIELDS = Object.keys(CLUSTER_FLAGS) as Array<keyof ClusterOptions>;

/** A zod string that runs one check (its InputError message becomes the issue). */
function checked(field: keyof ClusterOptions) {
  return z.string().superRefine((v, ctx) => {
    try {
      CLUSTER_CHECKS[field](CLUSTER_YAML_KEYS[field], v);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: (e as Error).message });
    }
  });
}

/** The `cluster:` mapping of an experiment (snake_case keys, the same checks as the flags). */
export const clusterSchema = z.strictObject(Object.fromEntries(FIELDS.map((f) => [CLUSTER_YAML_KEYS[f], checked(f).optional()])) as Record<string, z.ZodOptional<ReturnType<typeof checked>>>);

/** ClusterOptions from a validated `cluster:` mapping. */
export function clusterFromYaml(doc: Record<string, string | undefined> | undefined): ClusterOptions | undefined {
  if (doc === undefined) return undefined;
  const out: ClusterOptions = {};
  for (const f of FIELDS) if (doc[CLUSTER_YAML_KEYS[f]] !== undefined) out[f] = doc[CLUSTER_YAML_KEYS[f]];
  return out;
}

/** The `cluster:` mapping of given options (undefined when none is set). */
export function clusterToYaml(o: ClusterOptions | undefined): Record<string, string> | undefined {
  if (!o) return undefined;
  const out: Record<string, string> = {};
  for (const f of FIELDS) if (o[f] !== undefined) out[CLUSTER_YAML_KEYS[f]] = o[f]!;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Options given later win, field by field (flags over an experiment's file). */
export function mergeCluster(...layers: Array<ClusterOptions | undefined>): ClusterOptions | undefined {
  const out: ClusterOptions = {};
  for (const l of layers) for (const f of FIELDS) if (l?.[f] !== undefined) out[f] = l[f];
  return Object.keys(out).length > 0 ? out : undefined;
}

/** What the model came from: its id and, for a local checkpoint, the directory or file it was read from. */
export interface ModelOrigin {
  id: string;
  /** ModelSpec.source: "bundled", "hf-cache", "hub" or a local path. */
  source: string;
}

/**
 * A checkpoint read from a local directory whose name is not a Hub id: no pod can download it, so its weights
 * must be in the volume, by default under the directory's name (/data/l70fp8 -> <mount>/l70fp8).
 */
export function isLocalCheckpoint(m: ModelOrigin): boolean {
  return m.source.startsWith('/') && !/^[\w.-]+\/[\w.-]+$/.test(m.id);
}

/** The settings with defaults applied, every value checked (InputError naming the flag). */
export function resolveCluster(o: ClusterOptions | undefined, model: ModelOrigin): ClusterSettings {
  const given: ClusterOptions = {};
  for (const f of FIELDS) if (o?.[f] !== undefined) given[f] = CLUSTER_CHECKS[f](CLUSTER_FLAGS[f], o[f]!);
  const local = isLocalCheckpoint(model);
  const modelPath = given.modelCachePath ?? (local ? checkModelPath('--model-cache-path (the checkpoint folder name; pass --model-cache-path)', model.id) : undefined);
  const mountPath = CLUSTER_DEFAULTS.mountPath;
  const secret = given.hfTokenSecret ?? CLUSTER_DEFAULTS.hfTokenSecret;
  return {
    ...(given.namespace !== undefined ? { namespace: given.namespace } : {}),
    ...(given.imagePullSecret !== undefined ? { imagePullSecret: given.imagePullSecret } : {}),
    ...(secret !== 'none' ? { hfTokenSecret: secret } : {}),
    modelCachePvc: given.modelCachePvc ?? CLUSTER_DEFAULTS.modelCachePvc,
    ...(given.modelCacheSize !== undefined ? { modelCacheSize: given.modelCacheSize } : {}),
    mountPath,
    modelArg: modelPath !== undefined ? `${mountPath}/${modelPath}` : model.id,
    ...(modelPath !== undefined ? { modelPath } : {}),
    servedModelName: given.servedModelName ?? model.id,
  };
}
