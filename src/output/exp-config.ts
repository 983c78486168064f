// exp_config.yaml: experiments that `configure exp --yaml FILE` runs. The schema lives here so the
// writer and the reader cannot drift; errors name the key and its line.
import YAML, { isMap, isScalar, LineCounter, parseDocument, type Node } from 'yaml';
import { MAX_NEXTN } from '../engine/speculation.js';
import { z } from 'zod';
import type { EngineContext } from '../engine/types.js';
import type { Mode, SearchInputs } from '../search/types.js';
import { InputError } from '../util/errors.js';
import { quote } from '../util/text.js';
import { yamlToJS } from '../util/yaml.js';
import { BACKENDS, DTYPES } from '../inputs/types.js';
import type { ImageComponent, ImageOverrides } from './plan.js';
import { clusterSchema, clusterToYaml, CLUSTER_YAML_KEYS, type ClusterOptions } from './cluster.js';

const intList = z.array(z.number().int().positive()).min(1);
const imageRef = z.string().regex(/^\S+$/, 'an image reference without spaces');

/** `image`: one image for every component, or images by component (the others run the Dynamo runtime image). */
export const imageSchema = z.union([
  imageRef,
  z.strictObject({ frontend: imageRef.optional(), agg: imageRef.optional(), prefill: imageRef.optional(), decode: imageRef.optional() }),
], { error: 'an image reference, or images by component (frontend, agg, prefill, decode)' });

export const experimentSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits, ".", "_" or "-"'),
  mode: z.enum(['agg', 'disagg', 'both']),
  model: z.string().min(1),
  system: z.string().min(1),
  decode_system: z.string().min(1).optional(),
  backend: z.enum(BACKENDS),
  backend_version: z.string().min(1).optional(),
  total_gpus: z.number().int().positive(),
  isl: z.number().int().positive(),
  osl: z.number().int().positive(),
  prefix: z.number().int().min(0).default(0),
  ttft: z.number().positive(),
  tpot: z.number().positive(),
  request_latency: z.number().positive().optional(),
  weight_dtype: z.enum(DTYPES).optional(),
  kv_cache_dtype: z.enum(DTYPES).optional(),
  top_n: z.number().int().positive().default(5),
  /** Speculative decoding (as --nextn, --nextn-accept-rates, --speculative). */
  nextn: z.union([z.number().int().min(0).max(MAX_NEXTN), z.literal('auto')]).optional(),
  nextn_accept_rates: z.array(z.number().gt(0).max(1)).min(1).optional(),
  speculative: z.enum(['mtp', 'eagle3', 'off']).optional(),
  image: imageSchema.optional(),
  /** Namespace, secrets, model cache and model names of the manifests (src/output/cluster.ts). */
  cluster: clusterSchema.optional(),
  search: z
    .strictObject({
      tp: intList.optional(),
      pp: intList.optional(),
      dp: intList.optional(),
      moe_tp: intList.optional(),
      moe_ep: intList.optional(),
      batch: intList.optional(),
    })
    .optional(),
});

export const experimentFileSchema = z
  .strictObject({ experiments: z.array(experimentSchema).min(1) })
  .superRefine((f, ctx) => {
    const seen = new Set<string>();
    f.experiments.forEach((e, i) => {
      if (seen.has(e.name)) ctx.addIssue({ code: 'custom', path: ['experiments', i, 'name'], message: `duplicate experiment name ${quote(e.name)}` });
      seen.add(e.name);
      if (e.prefix >= e.isl) ctx.addIssue({ code: 'custom', path: ['experiments', i, 'prefix'], message: `prefix (${e.prefix}) must be smaller than isl (${e.isl})` });
    });
  });

export type Experiment = z.infer<typeof experimentSchema>;
export type ExperimentFile = z.infer<typeof experimentFileSchema>;

/** Parse and validate an experiment file; InputError "<path>:<line>: <key>: <problem>" on failure. */
export function parseExperimentFile(text: string, path: string): ExperimentFile {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    const err = doc.errors[0];
    const pos = lines.linePos(err.pos[0]);
    throw new InputError(`${path}:${pos.line}: not valid YAML (${err.message.split('\n')[0]})`);
  }
  const result = experimentFileSchema.safeParse(yamlToJS(doc, path));
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const at = (node: Node | null | undefined): string => {
    const off = node?.range?.[0];
    return off === undefined ? '' : `:${lines.linePos(off).line}`;
  };
  const parentPath = issue.path as (string | number)[];
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0];
    const parent = parentPath.length === 0 ? doc.contents : doc.getIn(parentPath, true);
    let keyNode: Node | undefined;
    if (isMap(parent)) {
      const pair = parent.items.find((it) => isScalar(it.key) && String(it.key.value) === key);
      keyNode = pair?.key as Node | undefined;
    }
    const where = [...parentPath, key].join('.');
    throw new InputError(`${path}${at(keyNode ?? (parent as Node))}: unknown key ${quote(where)}; accepted: ${acceptedKeys(parentPath)}`);
  }
  const node = doc.getIn(parentPath, true) as Node | undefined;
  let target = node;
  // A missing key: point at the mapping that lacks it.
  for (let i = parentPath.length; target === undefined && i >= 0; i--) target = (i === 0 ? doc.contents : doc.getIn(parentPath.slice(0, i), true)) as Node | undefined;
  throw new InputError(`${path}${at(target)}: ${parentPath.join('.') || 'document'}: ${issue.message}`);
}

function acceptedKeys(path: (string | number)[]): string {
  if (path.length === 0) return 'experiments';
  if (path.length === 3 && path[2] === 'search') return Object.keys(experimentSchema.shape.search.unwrap().shape).join(', ');
  if (path.length === 3 && path[2] === 'image') return 'frontend, agg, prefill, decode (or one image for all)';
  if (path.length === 3 && path[2] === 'cluster') return Object.values(CLUSTER_YAML_KEYS).join(', ');
  return Object.keys(experimentSchema.shape).join(', ');
}

/** Components whose images an experiment of each mode deploys. */
const COMPONENTS: Record<Mode | 'both', ImageComponent[]> = {
  agg: ['frontend', 'agg'],
  disagg: ['frontend', 'prefill', 'decode'],
  both: ['frontend', 'agg', 'prefill', 'decode'],
};

/** The `image` value for images by component: one string when every component runs the same image. */
function imageEntry(images: ImageOverrides, mode: Mode | 'both'): string | ImageOverrides | undefined {
  const given: ImageOverrides = {};
  for (const c of COMPONENTS[mode]) if (images[c] !== undefined) given[c] = images[c];
  const values = new Set(Object.values(given));
  if (values.size === 0) return undefined;
  return values.size === 1 && Object.keys(given).length === COMPONENTS[mode].length ? [...values][0] : given;
}

/** One experiment reproducing a search for one mode (with the images the run was given). */
export function experimentFor(inputs: SearchInputs, mode: Mode | 'both', ctx?: EngineContext, images?: ImageOverrides, cluster?: ClusterOptions): Record<string, unknown> {
  const e: Record<string, unknown> = {
    name: mode,
    mode,
    model: inputs.model,
    system: inputs.system,
  };
  if (mode !== 'agg' && inputs.decodeSystem && inputs.decodeSystem !== inputs.system) e.decode_system = inputs.decodeSystem;
  e.backend = inputs.backend;
  e.backend_version = inputs.version;
  e.total_gpus = inputs.totalGpus;
  e.isl = inputs.workload.isl;
  e.osl = inputs.workload.osl;
  e.prefix = inputs.workload.prefix;
  e.ttft = inputs.sla.ttftMs;
  e.tpot = inputs.sla.tpotMs;
  if (inputs.sla.requestLatencyMs !== undefined) e.request_latency = inputs.sla.requestLatencyMs;
  // Dtypes only when they differ from the checkpoint (the file then reads like the command that was run).
  if (ctx && ctx.gemmDtype !== ctx.model.quant.gemmDtype) e.weight_dtype = ctx.gemmDtype;
  if (ctx && ctx.kvDtype !== ctx.model.kvDtype) e.kv_cache_dtype = ctx.kvDtype;
  e.top_n = inputs.topN;
  // The speculative setting searched, so the file reruns the same search.
  if (ctx?.speculation && ctx.speculation.draft > 0) {
    e.nextn = ctx.speculation.draft;
    if (!ctx.speculation.assumed) e.nextn_accept_rates = ctx.speculation.acceptRates;
    e.speculative = ctx.speculation.method;
  }
  const image = images ? imageEntry(images, mode) : undefined;
  if (image !== undefined) e.image = image;
  const clusterKeys = clusterToYaml(cluster);
  if (clusterKeys !== undefined) e.cluster = clusterKeys;
  return e;
}

/** exp_config.yaml text for one mode (or both). */
export function buildExpConfig(inputs: SearchInputs, mode: Mode | 'both', ctx?: EngineContext, images?: ImageOverrides, cluster?: ClusterOptions): string {
  return YAML.stringify({ experiments: [experimentFor(inputs, mode, ctx, images, cluster)] }, { lineWidth: 0 });
}
