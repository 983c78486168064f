// Flags shared by the commands that plan (default, estimate, recommend, generate, support).
// Commands add the groups they need; `readCommonInputs` turns commander's values into plain typed values.
import { Command, Option } from 'commander';
import { nonNegativeInt, positiveInt, positiveNumber } from './common.js';
import { InputError } from '../util/errors.js';
import { checkOutputDir } from '../util/files.js';
import { BACKENDS, DTYPES, type Backend, type Dtype, type Sla } from '../inputs/types.js';
import { parseDynamoVersion } from '../output/images.js';
import { MAX_NEXTN, parseAcceptRates, type SpeculationRequest } from '../engine/speculation.js';
import { CLUSTER_CHECKS, CLUSTER_FLAGS, type ClusterOptions } from '../output/cluster.js';
import { TARGETS, type Target } from '../output/llmd.js';

export const DEFAULTS = { isl: 4000, osl: 1000, ttft: 2000, tpot: 30, topN: 5 } as const;

function dtypeParser(flag: string) {
  return (v: string): Dtype => {
    const d = (v === 'bf16' ? 'bfloat16' : v === 'fp16' ? 'float16' : v) as Dtype;
    if (!DTYPES.includes(d)) throw new InputError(`${flag} "${v}" is not a known dtype; accepted: ${DTYPES.join(', ')}`);
    return d;
  };
}

function backendParser(v: string): Backend {
  const b = v.toLowerCase() as Backend;
  if (!BACKENDS.includes(b)) throw new InputError(`--backend "${v}" is not supported; accepted: ${BACKENDS.join(', ')}`);
  return b;
}

// --json / --verbose live with the CLI plumbing (common.ts) so light commands need not load this module.
export { addGlobalOptions } from './common.js';

export function addModelSystemOptions(cmd: Command): Command {
  return cmd
    .requiredOption('--hf-id <id>', 'model: bundled id, local directory or config.json, HF cache, or Hub id')
    .requiredOption('--system <name>', 'GPU system: h100_sxm, h200_sxm, b200_sxm, b300_sxm, gb200_sxm, gb300, a100_sxm, l40s (aliases: configure systems)')
    .addOption(new Option('--backend <name>', 'engine: vllm, sglang or trtllm').argParser(backendParser))
    .option('--backend-version <v>', "engine version (default: the system's default for the backend)")
    .addOption(new Option('--weight-dtype <dtype>', "override the checkpoint's weight format").argParser(dtypeParser('--weight-dtype')))
    .addOption(new Option('--kv-cache-dtype <dtype>', "override the checkpoint's KV-cache dtype").argParser(dtypeParser('--kv-cache-dtype')))
    .option('--perf-data <dir>', 'performance tables: a directory in our format or an aiconfigurator systems data directory')
    .option('--calibration <file>', 'apply a correction profile written by `configure calibrate`')
    .option('--strict', 'refuse (exit 2) a --calibration profile fitted for another model, system or backend instead of warning');
}

/** --hf-id and --system become optional (the command finds them elsewhere: a CSV, a plan file). */
export function relaxModelSystem(cmd: Command): void {
  for (const o of cmd.options) if (o.long === '--hf-id' || o.long === '--system') o.mandatory = false;
}

export function addWorkloadOptions(cmd: Command): Command {
  return cmd
    .option('--isl <tokens>', `input sequence length (default ${DEFAULTS.isl})`, positiveInt('--isl'))
    .option('--osl <tokens>', `output sequence length (default ${DEFAULTS.osl})`, positiveInt('--osl'))
    .option('--prefix <tokens>', 'prompt tokens already in the prefix cache (default 0)', nonNegativeInt('--prefix'));
}

export function addSlaOptions(cmd: Command): Command {
  return cmd
    .option('--ttft <ms>', `time-to-first-token target, ms (default ${DEFAULTS.ttft})`, positiveNumber('--ttft'))
    .option('--tpot <ms>', `time-per-output-token target, ms (default ${DEFAULTS.tpot})`, positiveNumber('--tpot'))
    .option('--request-latency <ms>', 'end-to-end request latency target, ms', positiveNumber('--request-latency'))
    .option(
      '--sla-confidence <p>',
      'judge each target against this quantile of its metric\'s error band: 0.5 = the prediction (default), 0.9 = the band\'s upper end',
      slaConfidenceParser,
    );
}

/** --sla-confidence: a probability strictly between 0 and 1. */
export function slaConfidenceParser(v: string): number {
  const p = Number(v);
  if (!(p > 0 && p < 1)) throw new InputError(`--sla-confidence "${v}" is not a probability; accepted: a number between 0 and 1, e.g. 0.5, 0.8, 0.9`);
  return p;
}

export const DYNAMO_VERSION_HELP =
  'Dynamo release of the manifests (image, flags, DGD API version): a release such as 0.9.1, 1.2.0 or 1.4.0, or a line such as 0.9 or 1.x (default: the newest release whose runtime image ships the engine version, else the nearest)';
export const IMAGE_HELP = 'container image for every component, replacing the Dynamo runtime image (flags still follow the Dynamo release)';

/** --dynamo-version: checked when parsed (InputError, exit 2, listing the releases), kept as given. */
export function dynamoVersionParser(v: string): string {
  parseDynamoVersion(v);
  return v;
}

/** --image: one container image reference (no spaces). */
export function imageParser(flag: string) {
  return (v: string): string => {
    const s = v.trim();
    if (s === '' || /\s/.test(s)) throw new InputError(`${flag} "${v}" is not an image reference (e.g. registry.example.com/dynamo/vllm-runtime:1.4.0)`);
    return s;
  };
}

export const PLANNER_HELP =
  "disagg plans: add Dynamo's SLA planner to k8s_deploy.yaml and write its profiles (JSON, NPZ, plots) and planner_profile_configmap.yaml (docs/planner.md)";

export function addSaveOptions(cmd: Command): Command {
  cmd
    .option('--save-dir <dir>', 'write the results directory here')
    .option('--force', 'replace an existing results directory')
    .option('--dynamo-version <v>', DYNAMO_VERSION_HELP, dynamoVersionParser)
    .option('--image <image>', IMAGE_HELP, imageParser('--image'))
    .option('--planner', PLANNER_HELP);
  // The planner files live in the results directory: asking for them without one is a usage error. A results
  // directory that cannot be written is reported before the search, not after it.
  cmd.hook('preAction', (c) => {
    const o = c.opts();
    if (o.planner === true && typeof o.saveDir !== 'string') throw new InputError('--planner writes the planner files into the results directory; add --save-dir DIR');
    if (typeof o.saveDir === 'string') checkOutputDir('--save-dir', o.saveDir);
  });
  return addClusterOptions(cmd);
}

/** Help of the cluster flags (defaults: docs/output.md, "Cluster settings"). */
const CLUSTER_HELP: Record<keyof ClusterOptions, [string, string]> = {
  namespace: ['<name>', "namespace of every object (default: kubectl's current namespace)"],
  imagePullSecret: ['<name>', 'Secret the pods pull images with (default: none)'],
  hfTokenSecret: ['<name>', 'Secret holding HF_TOKEN, or "none" (default: hf-token-secret)'],
  modelCachePvc: ['<name>', 'PersistentVolumeClaim holding the weights, mounted at /opt/models (default: model-cache)'],
  modelCacheSize: ['<size>', 'create that PVC with this size (e.g. 500Gi) in k8s_deploy.yaml (default: use an existing one)'],
  modelCachePath: ['<path>', 'weights inside the volume, relative (default: a local checkpoint folder\'s name; Hub ids download)'],
  servedModelName: ['<name>', 'model name clients send (default: the model id)'],
};

/** --target: what the results directory deploys with. */
export function targetParser(v: string): Target {
  const t = v.trim().toLowerCase() as Target;
  if (!TARGETS.includes(t)) throw new InputError(`--target "${v}" is not a deployment target; accepted: ${TARGETS.join(', ')}`);
  return t;
}

/** The deployment flags: --target and the cluster settings, each checked when parsed (one-line InputError, exit 2). */
export function addClusterOptions(cmd: Command): Command {
  cmd.option('--target <name>', 'what the bundles deploy with: dynamo (DynamoGraphDeployment, default) or llm-d (model service Helm values, vLLM)', targetParser);
  for (const [field, flag] of Object.entries(CLUSTER_FLAGS) as Array<[keyof ClusterOptions, string]>) {
    const [arg, help] = CLUSTER_HELP[field];
    cmd.option(`${flag} ${arg}`, help, (v: string) => CLUSTER_CHECKS[field](flag, v.trim()));
  }
  return cmd;
}

/** --target as parsed (undefined: dynamo). */
export function targetOf(o: Record<string, unknown>): Target | undefined {
  return typeof o.target === 'string' ? targetParser(o.target) : undefined;
}

/** The cluster flags given, for the results directory (undefined when none). */
export function clusterOptionsOf(o: Record<string, unknown>): ClusterOptions | undefined {
  const out: ClusterOptions = {};
  for (const field of Object.keys(CLUSTER_FLAGS) as Array<keyof ClusterOptions>) if (typeof o[field] === 'string') out[field] = o[field] as string;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The images --image gives, by component (all of them), for the results directory. */
export function imagesOf(o: Record<string, unknown>): { frontend: string; agg: string; prefill: string; decode: string } | undefined {
  const image = o.image as string | undefined;
  return image === undefined ? undefined : { frontend: image, agg: image, prefill: image, decode: image };
}

/** --nextn: a draft depth 0-8, or auto (default only). */
function nextnParser(v: string): number | 'auto' {
  if (v.trim().toLowerCase() === 'auto') return 'auto';
  const n = Number(v);
  if (!/^\s*\d+\s*$/.test(v) || n > MAX_NEXTN) throw new InputError(`--nextn "${v}" is not a draft depth; accepted: 0 to ${MAX_NEXTN} (0 = off), or auto`);
  return n;
}

/** --nextn-accept-rates: comma-separated acceptance of each draft position, each in (0, 1]. */
function acceptRatesParser(v: string): number[] {
  const rates = parseAcceptRates(v);
  if (!rates || rates.length === 0) {
    throw new InputError(`--nextn-accept-rates "${v}" is not a list of acceptance rates; accepted: numbers in (0, 1] separated by commas, one per draft position (e.g. 0.85,0.5,0.4)`);
  }
  return rates;
}

/** Speculative decoding: --nextn, --nextn-accept-rates, --speculative (read by readSpeculation). */
export function addSpeculationOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--nextn <n>', 'speculative draft tokens per decode step: 0 (off, default) to 8, or auto (default: search 0-3)').argParser(nextnParser))
    .addOption(new Option('--nextn-accept-rates <rates>', 'acceptance of each draft position, e.g. 0.85,0.5,0.4 (default: the model family\'s published figures, reported as assumed)').argParser(acceptRatesParser))
    .addOption(new Option('--speculative <method>', "draft: mtp (the checkpoint's own MTP layers), eagle3 (a known EAGLE-3 draft model) or off").choices(['mtp', 'eagle3', 'off']));
}

/** The speculation flags as a request (undefined when none was given). */
export function readSpeculation(o: Record<string, unknown>): SpeculationRequest | undefined {
  const nextn = o.nextn as number | 'auto' | undefined;
  const acceptRates = o.nextnAcceptRates as number[] | undefined;
  const method = o.speculative as SpeculationRequest['method'];
  if (nextn === undefined && acceptRates === undefined && method === undefined) return undefined;
  return { nextn, acceptRates, method };
}

/** --nextn auto belongs to `default`, which searches the depths; other commands price one. */
export function refuseAutoNextn(req: SpeculationRequest | undefined, command: string): void {
  if (req?.nextn === 'auto') throw new InputError(`--nextn auto searches draft depths and is accepted by default only; ${command} takes --nextn 0 to ${MAX_NEXTN}`);
}

/** Plain values of the shared flags, defaults applied. */
export interface CommonInputs {
  hfId: string;
  system: string;
  backend: Backend;
  backendVersion?: string;
  weightDtype?: Dtype;
  kvDtype?: Dtype;
  perfData?: string;
  calibration?: string;
  /** --strict: refuse a --calibration profile fitted for another model, system or backend. */
  strictCalibration?: boolean;
  isl: number;
  osl: number;
  prefix: number;
  ttft: number;
  tpot: number;
  requestLatency?: number;
  /** --sla-confidence, when given. */
  slaConfidence?: number;
  /** --nextn / --nextn-accept-rates / --speculative, when the command takes them and any was given. */
  speculation?: SpeculationRequest;
}

export function readCommonInputs(o: Record<string, unknown>): CommonInputs {
  const isl = (o.isl as number | undefined) ?? DEFAULTS.isl;
  const prefix = (o.prefix as number | undefined) ?? 0;
  if (prefix >= isl) throw new InputError(`--prefix (${prefix}) must be smaller than --isl (${isl})`);
  return {
    hfId: o.hfId as string,
    system: o.system as string,
    backend: (o.backend as Backend | undefined) ?? 'vllm',
    backendVersion: o.backendVersion as string | undefined,
    weightDtype: o.weightDtype as Dtype | undefined,
    kvDtype: o.kvCacheDtype as Dtype | undefined,
    perfData: o.perfData as string | undefined,
    calibration: o.calibration as string | undefined,
    strictCalibration: o.strict === true,
    isl,
    osl: (o.osl as number | undefined) ?? DEFAULTS.osl,
    prefix,
    ttft: (o.ttft as number | undefined) ?? DEFAULTS.ttft,
    tpot: (o.tpot as number | undefined) ?? DEFAULTS.tpot,
    requestLatency: o.requestLatency as number | undefined,
    slaConfidence: o.slaConfidence as number | undefined,
    speculation: readSpeculation(o),
  };
}

/** The SLA the search filters by, from the shared flags. */
export function slaOf(inputs: CommonInputs): Sla {
  return {
    ttftMs: inputs.ttft,
    tpotMs: inputs.tpot,
    requestLatencyMs: inputs.requestLatency,
    ...(inputs.slaConfidence !== undefined && { confidence: inputs.slaConfidence }),
  };
}
