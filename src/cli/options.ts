// Flags shared by the commands that plan (default, estimate, recommend, generate, support).
// Commands add the groups they need; `readCommonInputs` turns commander's values into plain typed values.
import { Command, Option } from 'commander';
import { nonNegativeInt, positiveInt, positiveNumber } from './common.js';
import { InputError } from '../util/errors.js';
import { BACKENDS, DTYPES, type Backend, type Dtype, type Sla } from '../inputs/types.js';

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

export function addGlobalOptions(cmd: Command): Command {
  return cmd
    .option('--json', 'print one JSON document on stdout (logs go to stderr)')
    .option('--verbose', 'show stack traces on internal errors');
}

export function addModelSystemOptions(cmd: Command): Command {
  return cmd
    .requiredOption('--hf-id <id>', 'model: bundled id, local directory or config.json, HF cache, or Hub id')
    .requiredOption('--system <name>', 'GPU system: h100_sxm, h200_sxm, b200_sxm, gb200_sxm, a100_sxm, l40s')
    .addOption(new Option('--backend <name>', 'engine: vllm, sglang or trtllm').argParser(backendParser))
    .option('--backend-version <v>', "engine version (default: the system's default for the backend)")
    .addOption(new Option('--weight-dtype <dtype>', "override the checkpoint's weight format").argParser(dtypeParser('--weight-dtype')))
    .addOption(new Option('--kv-cache-dtype <dtype>', "override the checkpoint's KV-cache dtype").argParser(dtypeParser('--kv-cache-dtype')))
    .option('--perf-data <dir>', 'performance tables: a directory in our format or an aiconfigurator systems data directory')
    .option('--calibration <file>', 'apply a correction profile written by `configure calibrate`');
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

export function addSaveOptions(cmd: Command): Command {
  return cmd
    .option('--save-dir <dir>', 'write the results directory here')
    .option('--force', 'replace an existing results directory')
    .option('--dynamo-version <v>', 'Dynamo flag profile for manifests: 0.9 or 1.x (default: the one matching the runtime image)');
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
