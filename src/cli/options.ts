// Flags shared by the commands that plan (default, estimate, recommend, generate, support).
// Commands add the groups they need; `readCommonInputs` turns commander's values into plain typed values.
import { Command, Option } from 'commander';
import { nonNegativeInt, positiveInt, positiveNumber } from './common.js';
import { InputError } from '../util/errors.js';
import { BACKENDS, DTYPES, type Backend, type Dtype, type Sla } from '../inputs/types.js';
import { parseDynamoVersion } from '../output/images.js';

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
    .option('--request-latency <ms>', 'end-to-end request latency target, ms', positiveNumber('--request-latency'));
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

export function addSaveOptions(cmd: Command): Command {
  return cmd
    .option('--save-dir <dir>', 'write the results directory here')
    .option('--force', 'replace an existing results directory')
    .option('--dynamo-version <v>', DYNAMO_VERSION_HELP, dynamoVersionParser)
    .option('--image <image>', IMAGE_HELP, imageParser('--image'));
}

/** The images --image gives, by component (all of them), for the results directory. */
export function imagesOf(o: Record<string, unknown>): { frontend: string; agg: string; prefill: string; decode: string } | undefined {
  const image = o.image as string | undefined;
  return image === undefined ? undefined : { frontend: image, agg: image, prefill: image, decode: image };
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
  };
}

/** The SLA the search filters by, from the shared flags. */
export function slaOf(inputs: CommonInputs): Sla {
  return { ttftMs: inputs.ttft, tpotMs: inputs.tpot, requestLatencyMs: inputs.requestLatency };
}
