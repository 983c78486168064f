// `configure exp --yaml FILE`: run every experiment of a YAML file (agg, disagg or both; heterogeneous
// prefill/decode systems for disagg), print one row per experiment side by side and the best overall.
import { existsSync, readFileSync } from 'node:fs';
import { autoDescription, depthContexts, speculationSuffix } from '../../engine/speculation.js';
import { searchDepths } from '../../search/nextn.js';
import { isMap, parseDocument } from 'yaml';
import type { Command } from 'commander';
import { log, positiveInt, printJson, runAction } from '../common.js';
import { progress } from '../../util/progress.js';
import { alignColumns } from '../../util/format.js';
import { addClusterOptions, addGlobalOptions, clusterOptionsOf, targetOf, DEFAULTS, DYNAMO_VERSION_HELP, dynamoVersionParser, imageParser, imagesOf, slaOf, type CommonInputs } from '../options.js';
import { clusterFromYaml, mergeCluster, type ClusterOptions } from '../../output/cluster.js';
import type { EngineContext } from '../../engine/types.js';
import type { SearchJson } from '../../search/json.js';
import type { ExperimentFile, Experiment as ExperimentEntry } from '../../output/exp-config.js';
import type { ImageOverrides } from '../../output/plan.js';
import type { Mode, RankedCandidate, SearchResult, SearchRestrict } from '../../search/types.js';
import { uniqueSegment, insideDir } from '../../output/naming.js';
import type { Dtype } from '../../inputs/types.js';
import { explain, noFeasibleMessage } from '../../search/explain.js';
import { ExitCode, InferplanError, InputError } from '../../util/errors.js';
import { capQuoted, quote } from '../../util/text.js';
import { yamlToJS } from '../../util/yaml.js';
import { checkOutputDir } from '../../util/files.js';

/** One experiment as this command runs it (plain values, defaults applied). */
export interface Experiment {
  name: string;
  modes: Mode[];
  inputs: CommonInputs;
  decodeSystem?: string;
  totalGpus: number;
  topN: number;
  restrict?: SearchRestrict;
  /** Images by component from the entry's `image`. */
  images?: ImageOverrides;
  /** The entry's `cluster:` settings. */
  cluster?: ClusterOptions;
}

/** Images by component from an entry's `image`: one image for all, or some components by name. */
function imagesOfEntry(image: ExperimentEntry['image']): ImageOverrides | undefined {
  if (image === undefined) return undefined;
  if (typeof image === 'string') return { frontend: image, agg: image, prefill: image, decode: image };
  return Object.fromEntries(Object.entries(image).filter(([, v]) => v !== undefined));
}

/** Plain values from one validated entry (schema: src/output/exp-config.ts; defaults already applied there). */
export function toExperiment(e: ExperimentEntry): Experiment {
  const search = e.search;
  const restrict: SearchRestrict | undefined = search
    ? { tp: search.tp, pp: search.pp, dp: search.dp, moeTp: search.moe_tp, moeEp: search.moe_ep, batch: search.batch }
    : undefined;
  return {
    name: e.name,
    modes: e.mode === 'both' ? ['agg', 'disagg'] : [e.mode],
    decodeSystem: e.decode_system,
    totalGpus: e.total_gpus,
    topN: e.top_n,
    restrict,
    images: imagesOfEntry(e.image),
    cluster: clusterFromYaml(e.cluster),
    inputs: {
      hfId: e.model,
      system: e.system,
      backend: e.backend,
      backendVersion: e.backend_version,
      weightDtype: e.weight_dtype,
      kvDtype: e.kv_cache_dtype,
      isl: e.isl,
      osl: e.osl,
      prefix: e.prefix,
      ttft: e.ttft,
      tpot: e.tpot,
      requestLatency: e.request_latency,
      ...((e.nextn !== undefined || e.nextn_accept_rates !== undefined || e.speculative !== undefined) && {
        speculation: { nextn: e.nextn, acceptRates: e.nextn_accept_rates, method: e.speculative },
      }),
    },
  };
}

/** One row of the side-by-side table. */
export interface ExpRow {
  name: string;
  requested: string;
  model: string;
  system: string;
  backend: string;
  totalGpus: number;
  status: 'ok' | 'none';
  bestMode?: Mode;
  parallel?: string;
  gpusUsed?: number;
  tokPerSPerGpu?: number;
  tokPerSPerUser?: number;
  ttftMs?: number;
  tpotMs?: number;
  verdict: string;
  savedTo?: string;
}

/** The best SLA-meeting candidate of a result (its winner's rank 1), if any. */
export function bestOf(result: SearchResult): { mode: Mode; cand: RankedCandidate } | undefined {
  const w = result.verdict.winner;
  if (w === 'none') return undefined;
  const cand = result[w]?.top.find((c) => c.meetsSla !== false);
  return cand ? { mode: w, cand } : undefined;
}

export function rowOf(exp: Experiment, ctx: EngineContext, result: SearchResult): ExpRow {
  const best = bestOf(result);
  const base = {
    name: exp.name,
    requested: exp.modes.join('+'),
    model: ctx.model.id,
    system: exp.decodeSystem && exp.decodeSystem !== ctx.system.name ? `${ctx.system.name}/${exp.decodeSystem}` : ctx.system.name,
    backend: `${ctx.backend} ${ctx.version}`,
    totalGpus: exp.totalGpus,
    verdict: result.verdict.text,
  };
  // Nothing met the SLA: say which constraint removed how many candidates.
  if (!best) return { ...base, status: 'none', verdict: noFeasibleMessage(explain(result)) };
  const m = best.cand.estimate.metrics;
  return {
    ...base,
    status: 'ok',
    bestMode: best.mode,
    // The speculative setting the layout was priced with (" +mtp2"), as the default tables show it.
    parallel: best.cand.parallel + speculationSuffix(best.cand.estimate.speculation),
    gpusUsed: best.cand.gpusUsed,
    tokPerSPerGpu: best.cand.clusterTokPerSPerGpu,
    tokPerSPerUser: m.tokPerSPerUser,
    ttftMs: m.ttftMs,
    tpotMs: m.tpotMs,
  };
}

/** The row with the highest tokens/s/gpu among those that met their SLA. */
export function bestOverall(rows: ExpRow[]): ExpRow | undefined {
  let best: ExpRow | undefined;
  for (const r of rows) {
    if (r.status !== 'ok') continue;
    if (!best || (r.tokPerSPerGpu ?? 0) > (best.tokPerSPerGpu ?? 0)) best = r;
  }
  return best;
}

/** The side-by-side table as plain text. */
export function renderExpTable(rows: ExpRow[]): string {
  const head = ['experiment', 'modes', 'model', 'system', 'backend', 'gpus', 'best', 'tok/s/gpu', 'tok/s/user', 'TTFT ms', 'TPOT ms', 'layout'];
  const cells = rows.map((r) =>
    r.status === 'ok'
      ? [
          r.name,
          r.requested,
          r.model,
          r.system,
          r.backend,
          `${r.gpusUsed}/${r.totalGpus}`,
          r.bestMode!,
          r.tokPerSPerGpu!.toFixed(1),
          r.tokPerSPerUser!.toFixed(1),
          r.ttftMs!.toFixed(0),
          r.tpotMs!.toFixed(2),
          r.parallel!,
        ]
      : [r.name, r.requested, r.model, r.system, r.backend, `-/${r.totalGpus}`, 'none', '-', '-', '-', '-', 'nothing meets the SLA'],
  );
  const numeric = new Set([5, 7, 8, 9, 10]);
  const lines = alignColumns([head, ...cells], { right: (i) => numeric.has(i), rule: true });
  const best = bestOverall(rows);
  lines.push('');
  lines.push(
    best
      ? `best overall: ${best.name} (${best.bestMode} ${best.parallel}, ${best.tokPerSPerGpu!.toFixed(1)} tok/s/gpu at ${best.tokPerSPerUser!.toFixed(1)} tok/s/user)`
      : 'best overall: none (no experiment has a configuration that meets its SLA)',
  );
  for (const r of rows) if (r.status === 'none') lines.push(`${r.name}: ${r.verdict}`);
  return lines.join('\n') + '\n';
}

// aiconfigurator experiment files: `exps: [names]` plus one mapping per name with `serving_mode`. The nested
// v0.5+ format has `model_name`/`model_path`, `system_name`, `backend_name` and search lists under
// `config.*worker_config`; the flat v0.7+ format has `prefill_*`/`decode_*` keys and `*_candidates` lists.
const AIC_LISTS: Record<string, string> = { tp_list: 'tp', pp_list: 'pp', dp_list: 'dp', moe_tp_list: 'moe_tp', moe_ep_list: 'moe_ep' };

/** aiconfigurator v0.5/v0.6 model enum names and the Hugging Face ids they stand for. */
export const AIC_MODEL_NAMES: Readonly<Record<string, string>> = {
  LLAMA2_7B: 'meta-llama/Llama-2-7b-hf',
  LLAMA2_13B: 'meta-llama/Llama-2-13b-hf',
  LLAMA2_70B: 'meta-llama/Llama-2-70b-hf',
  'LLAMA3.1_8B': 'meta-llama/Meta-Llama-3.1-8B',
  'LLAMA3.1_70B': 'meta-llama/Meta-Llama-3.1-70B',
  'LLAMA3.1_405B': 'meta-llama/Meta-Llama-3.1-405B',
  MOE_Mixtral8x7B: 'mistralai/Mixtral-8x7B-v0.1',
  MOE_Mixtral8x22B: 'mistralai/Mixtral-8x22B-v0.1',
  DEEPSEEK_V3: 'deepseek-ai/DeepSeek-V3',
  'QWEN2.5_1.5B': 'Qwen/Qwen2.5-1.5B',
  'QWEN2.5_7B': 'Qwen/Qwen2.5-7B',
  'QWEN2.5_32B': 'Qwen/Qwen2.5-32B',
  'QWEN2.5_72B': 'Qwen/Qwen2.5-72B',
  'QWEN3_0.6B': 'Qwen/Qwen3-0.6B',
  'QWEN3_1.7B': 'Qwen/Qwen3-1.7B',
  QWEN3_8B: 'Qwen/Qwen3-8B',
  QWEN3_32B: 'Qwen/Qwen3-32B',
  QWEN3_30B_A3B: 'Qwen/Qwen3-30B-A3B',
  QWEN3_235B: 'Qwen/Qwen3-235B-A22B',
  QWEN3_480B: 'Qwen/Qwen3-Coder-480B-A35B-Instruct',
  'Nemotron_super_v1.1': 'nvidia/Llama-3_3-Nemotron-Super-49B-v1',
  GPT_OSS_120B: 'openai/gpt-oss-120b',
  GPT_OSS_20B: 'openai/gpt-oss-20b',
};

const AIC_WORKERS = ['worker_config', 'prefill_worker_config', 'decode_worker_config'];

/** aiconfigurator's speculative-decoding keys (in `config:` or flat), taken as they are named here. */
const AIC_SPECULATION = ['nextn', 'nextn_accept_rates'];

/**
 * Search lists from an aiconfigurator `config:` block go to `add` (prefill and decode lists merge there), quant
 * modes to `quant`, `nextn` / `nextn_accept_rates` to `speculation`; the rest is listed as ignored.
 */
function aicSearchLists(
  config: unknown, prefix: string, ignored: string[], add: (key: string, values: unknown[]) => void, quant: QuantCollector,
  speculation: Record<string, unknown>,
): void {
  if (!config || typeof config !== 'object') return;
  for (const [key, w] of Object.entries(config as Record<string, unknown>)) {
    if (AIC_SPECULATION.includes(key)) {
      speculation[key] = w;
      continue;
    }
    if (!AIC_WORKERS.includes(key) || !w || typeof w !== 'object') {
      ignored.push(`${prefix}.${key}`);
      continue;
    }
    for (const [k, v] of Object.entries(w as Record<string, unknown>)) {
      if (quant.take(k, v, `${prefix}.${key}.${k}`)) continue;
      const ours = AIC_LISTS[k];
      if (!ours || !Array.isArray(v)) {
        ignored.push(`${prefix}.${key}.${k}`);
        continue;
      }
      add(ours, v);
    }
  }
}

/**
 * aiconfigurator pads `nextn_accept_rates` with zeros to five positions (`nextn: 1` with `[0.85, 0, 0, 0, 0]`):
 * only the first `nextn` are rates of draft positions that run. Values stay as given otherwise, so the
 * experiment schema reports a bad one by its key.
 */
function aicSpeculation(s: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (s.nextn !== undefined && s.nextn !== null) out.nextn = s.nextn;
  const rates = s.nextn_accept_rates;
  if (!Array.isArray(rates)) {
    if (rates !== undefined) out.nextn_accept_rates = rates;
    return out;
  }
  // Without nextn, the trailing zeros are padding.
  let n = typeof out.nextn === 'number' ? Math.min(out.nextn, rates.length) : rates.length;
  if (out.nextn === undefined) while (n > 0 && rates[n - 1] === 0) n--;
  if (n > 0) out.nextn_accept_rates = rates.slice(0, n);
  return out;
}

/** aiconfigurator GEMM (and MoE) quant modes and the weight dtype they are here. Modes absent are refused. */
export const AIC_GEMM_QUANT: Readonly<Record<string, Dtype>> = {
  bfloat16: 'bfloat16',
  float16: 'float16',
  fp8: 'fp8',
  fp8_static: 'fp8',
  fp8_ootb: 'fp8',
  fp8_block: 'fp8_block',
  nvfp4: 'nvfp4',
  mxfp4: 'mxfp4',
  w4a16_mxfp4: 'mxfp4',
  int8_wo: 'int8_wo',
  int4_wo: 'int4_wo',
};

/** aiconfigurator KV-cache quant modes and the KV dtype they are here (int8 KV is not modelled: refused). */
export const AIC_KV_QUANT: Readonly<Record<string, Dtype>> = { bfloat16: 'bfloat16', float16: 'float16', fp8: 'fp8' };

/**
 * Quant modes of one aiconfigurator experiment (`gemm_quant_mode`, `kvcache_quant_mode`, `moe_quant_mode`, with
 * or without a prefill_/decode_ prefix, flat or under `config.*worker_config`) become our weight_dtype and
 * kv_cache_dtype. Here one weight dtype covers GEMMs and MoE experts, and one KV dtype all workers: roles that
 * disagree, or a mode with no counterpart here, are refused (InputError, exit 2) rather than planned with
 * another format. A MoE mode that differs from the GEMM mode (gpt-oss: bfloat16 GEMMs, mxfp4 experts) cannot be
 * expressed by one override: the checkpoint's formats are used and the key is reported as ignored.
 */
class QuantCollector {
  private readonly slots: Partial<Record<'weight' | 'moe' | 'kv', { dtype: Dtype; where: string }>> = {};
  constructor(private readonly path: string) {}

  /** True when `key` is a quant-mode key (taken, or ignored when it has no bearing here). */
  take(key: string, value: unknown, where: string): boolean {
    const m = /^(?:prefill_|decode_|agg_)?(gemm|moe|kvcache|fmha|comm)_quant_mode$/.exec(key);
    if (!m) return false;
    if (value === null || value === undefined) return true;
    const kind = m[1]!;
    if (kind === 'fmha' || kind === 'comm') return true; // attention math and collectives follow the KV and weight dtypes here
    const v = String(value).toLowerCase();
    const table = kind === 'kvcache' ? AIC_KV_QUANT : AIC_GEMM_QUANT;
    const dtype = table[v];
    if (!dtype) {
      throw new InputError(`${this.path}: ${where} ${quote(String(value))} has no counterpart here (accepted: ${Object.keys(table).join(', ')}); use one of those or drop the key to plan the checkpoint's format`);
    }
    const slot = kind === 'kvcache' ? 'kv' : kind === 'moe' ? 'moe' : 'weight';
    const prev = this.slots[slot];
    if (prev && prev.dtype !== dtype) {
      throw new InputError(`${this.path}: ${prev.where} (${prev.dtype}) and ${where} (${dtype}) differ; an experiment here has one ${slot === 'kv' ? 'KV-cache' : 'weight'} dtype for all its workers`);
    }
    this.slots[slot] ??= { dtype, where };
    return true;
  }

  /** Set weight_dtype / kv_cache_dtype on the converted entry; a MoE mode that one override cannot carry goes to `ignored`. */
  apply(out: Record<string, unknown>, ignored: string[]): void {
    const { weight, moe, kv } = this.slots;
    if (weight) out.weight_dtype = weight.dtype;
    if (moe && moe.dtype !== weight?.dtype) {
      if (weight) delete out.weight_dtype;
      ignored.push(`${moe.where} (${moe.dtype} experts with ${weight ? `${weight.dtype} GEMMs` : 'no GEMM mode'}: one weight dtype covers both here, so the checkpoint's formats are used)`);
    }
    if (kv) out.kv_cache_dtype = kv.dtype;
  }
}

/**
 * Convert an aiconfigurator (V1) experiment document into ours, or return null when it is not one.
 * Keys without a counterpart are listed in `ignored` (and reported), never silently dropped.
 */
export function convertAicExperiments(doc: unknown, path: string): { experiments: Record<string, unknown>[]; ignored: string[] } | null {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc) || 'experiments' in doc) return null;
  const d = doc as Record<string, unknown>;
  const names = Array.isArray(d.exps) ? d.exps.map(String) : Object.keys(d).filter((k) => k !== 'exps');
  const looksAic = names.some((n) => d[n] && typeof d[n] === 'object' && 'serving_mode' in (d[n] as object));
  if (!looksAic) return null;
  const ignored: string[] = [];
  const experiments = names.map((name) => {
    const e = d[name];
    if (!e || typeof e !== 'object' || Array.isArray(e)) throw new InputError(`${path}: exps lists ${quote(name)} but there is no mapping with that name`);
    const x = e as Record<string, unknown>;
    const out: Record<string, unknown> = { name };
    const lists: Record<string, Set<number>> = {};
    const quant = new QuantCollector(path);
    const speculation: Record<string, unknown> = {};
    const addList = (key: string, v: unknown): void => {
      const set = (lists[key] ??= new Set());
      if (Array.isArray(v)) for (const n of v) if (typeof n === 'number') set.add(n);
    };
    for (const [k, v] of Object.entries(x)) {
      // The flat (v0.7+) format names the same things per role: prefill_*, decode_*, agg_*_candidates.
      const candidates = /^(?:agg|prefill|decode)_(tp|pp|dp|moe_tp|moe_ep)_candidates$/.exec(k);
      if (candidates) {
        addList(candidates[1]!, v);
        continue;
      }
      if (quant.take(k, v, `${name}.${k}`)) continue;
      switch (k) {
        case 'serving_mode': out.mode = v; break;
        case 'model_name': case 'model_path': case 'prefill_model_path': case 'decode_model_path':
          out.model = typeof v === 'string' ? (AIC_MODEL_NAMES[v] ?? v) : v;
          break;
        case 'system_name': case 'prefill_system_name': out.system = v; break;
        case 'decode_system_name': out.decode_system = v; break;
        case 'backend_name': case 'prefill_backend_name': case 'decode_backend_name': out.backend = v; break;
        case 'prefill_backend_version': case 'decode_backend_version': out.backend_version = v; break;
        case 'backend_version': case 'total_gpus': case 'isl': case 'osl': case 'prefix': case 'ttft': case 'tpot':
        case 'request_latency':
          if (v !== null && v !== undefined) out[k] = v;
          break;
        case 'config':
          aicSearchLists(v, `${name}.config`, ignored, addList, quant, speculation);
          break;
        case 'nextn': case 'nextn_accept_rates':
          speculation[k] = v;
          break;
        default:
          // `mode: patch|replace` only says how `config` applies to aiconfigurator's defaults.
          if (!(k === 'mode' || (k === 'profiles' && Array.isArray(v) && v.length === 0))) ignored.push(`${name}.${k}`);
      }
    }
    const search = Object.entries(lists).filter(([, set]) => set.size > 0);
    if (search.length) out.search = Object.fromEntries(search.map(([key, set]) => [key, [...set].sort((a, b) => a - b)]));
    quant.apply(out, ignored);
    Object.assign(out, aicSpeculation(speculation));
    // aiconfigurator's defaults (backend trtllm, workload and SLA of `cli default`) keep their meaning.
    out.backend ??= 'trtllm';
    out.isl ??= DEFAULTS.isl;
    out.osl ??= DEFAULTS.osl;
    out.ttft ??= DEFAULTS.ttft;
    out.tpot ??= DEFAULTS.tpot;
    return out;
  });
  return { experiments, ignored };
}

/** Read and validate the file, then turn every entry into plain values. */
export async function readExperiments(path: string): Promise<Experiment[]> {
  const { parseExperimentFile, experimentFileSchema } = await import('../../output/exp-config.js');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read --yaml ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  // aiconfigurator experiment files are converted first (their keys map one to one onto ours).
  const doc = parseDocument(text);
  const aic = doc.errors.length === 0 && isMap(doc.contents) ? convertAicExperiments(yamlToJS(doc, path), path) : null;
  let parsed: ExperimentFile;
  if (aic) {
    if (aic.ignored.length) log(`${path}: aiconfigurator keys without a counterpart here, ignored: ${aic.ignored.join(', ')}`);
    const checked = experimentFileSchema.safeParse({ experiments: aic.experiments });
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      const [, i, ...rest] = issue.path as (string | number)[];
      const name = typeof i === 'number' ? aic.experiments[i]?.name : undefined;
      throw new InputError(`${path}: experiment ${quote(String(name))}: ${rest.join('.') || 'entry'}: ${issue.message} (aiconfigurator format)`);
    }
    parsed = checked.data;
  } else {
    parsed = parseExperimentFile(text, path);
  }
  // Names are unique (the schema checks it), so results directories never collide.
  return parsed.experiments.map(toExperiment);
}

/** Prefix an experiment's name to errors raised while preparing it, keeping the exit code. */
function inExperiment(name: string, err: unknown): unknown {
  if (err instanceof InferplanError) return new InferplanError(`experiment ${quote(name)}: ${capQuoted(err.message)}`, err.exitCode, err.detail);
  return err;
}

export function registerExp(program: Command): void {
  const cmd = program
    .command('exp')
    .description('run the experiments of a YAML file and compare them side by side')
    .option('--yaml <file>', 'experiment file (see the format below)')
    .option('--yaml-path <file>', 'alias of --yaml (aiconfigurator spelling)')
    .option('--save-dir <dir>', "write each experiment's results directory under <dir>/<experiment name>/")
    .option('--force', 'replace existing results directories')
    .option('--dynamo-version <v>', DYNAMO_VERSION_HELP, dynamoVersionParser)
    .option('--image <image>', "container image for every component of every experiment, overriding each experiment's image", imageParser('--image'))
    .option('--top-n <n>', "configurations kept per mode, overriding each experiment's top_n", positiveInt('--top-n'))
    .option('--report', 'also print the full report of every experiment');
  // Flags override each experiment's cluster: keys one by one.
  addClusterOptions(cmd);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
File format:
  experiments:
    - name: agg_h200
      mode: agg                # agg | disagg | both
      model: Qwen/Qwen3-32B
      system: h200_sxm
      decode_system: b200_sxm  # optional, disagg: decode workers on another system
      backend: vllm
      backend_version: 0.12.0  # optional
      total_gpus: 8
      isl: 4000
      osl: 500
      ttft: 600
      tpot: 16.67
      top_n: 5                 # optional (default 5); also optional: prefix, request_latency,
                               # weight_dtype, kv_cache_dtype, search (tp, pp, dp, moe_tp, moe_ep, batch)
      search: { tp: [1, 2, 4], batch: [8, 16, 32, 64] }
      image: { prefill: registry.example.com/vllm-runtime:1.4.0-custom }  # optional: one image for every
                               # component, or by component (frontend, agg, prefill, decode)
      cluster: { namespace: llm, model_cache_pvc: models, model_cache_path: qwen3-32b }  # optional: also
                               # image_pull_secret, hf_token_secret, model_cache_size, served_model_name

The <mode>/exp_config.yaml that \`configure default --save-dir\` writes runs unchanged here, and so do
aiconfigurator experiment files (exps: [...], serving_mode, model_name/model_path, system_name, ...).
Exit status: 0 when every experiment has a configuration that meets its SLA, 3 when one has none,
2 for an invalid file (the message names the key and line), 4 for an unsupported combination.

Examples:
  configure exp --yaml experiments.yaml
  configure exp --yaml results/Qwen--Qwen3-32B_h200_sxm_vllm_gpus8_isl4000_osl500_ttft600_tpot16.67_<hash>/agg/exp_config.yaml --json
  configure cli exp --yaml_path aiconfigurator_exps.yaml`,
  );
  cmd.action(async (opts: Record<string, unknown>) =>
    runAction(opts, async () => {
      const path = (opts.yaml ?? opts.yamlPath) as string | undefined;
      if (!path) throw new InputError('exp needs --yaml FILE (the experiment file)');
      // A results directory that cannot be written is reported before any experiment runs.
      if (typeof opts.saveDir === 'string') checkOutputDir('--save-dir', opts.saveDir);
      const exps = await readExperiments(path);
      // searchToJson: the same document `default --json` prints, so summary.json reads the same for both.
      const [{ loadEngineContext }, { runSearch }, { resultsFolder, writeResultsDir }, { renderReport }, { searchToJson }] = await Promise.all([
        import('../context.js'),
        import('../../search/index.js'),
        import('../../output/results-dir.js'),
        import('../../output/console.js'),
        import('../../search/json.js'),
      ]);
      // Prepare every experiment before running any, so a bad entry fails fast.
      const prepared: Array<{ exp: Experiment; ctx: EngineContext }> = [];
      for (const exp of exps) {
        if (exp.decodeSystem && !exp.modes.includes('disagg')) log(`experiment "${exp.name}": decode_system applies to disagg only; ignored for mode agg`);
        try {
          const ctx = await loadEngineContext(exp.inputs, exp.decodeSystem ? { decodeSystem: exp.decodeSystem } : undefined);
          prepared.push({ exp, ctx });
        } catch (err) {
          throw inExperiment(exp.name, err);
        }
      }
      const done: Array<{ exp: Experiment; ctx: EngineContext; result: SearchResult; row: ExpRow; reportText: string; json: SearchJson }> = [];
      const shown = progress('experiments', prepared.length, { json: opts.json === true });
      for (const { exp, ctx } of prepared) {
        shown.tick(done.length);
        const sla = slaOf(exp.inputs);
        const topN = (opts.topN as number | undefined) ?? exp.topN;
        const spec = { totalGpus: exp.totalGpus, sla, topN, modes: exp.modes, restrict: exp.restrict };
        const req = exp.inputs.speculation;
        // nextn: auto searches every draft depth the checkpoint can run and ranks them together (as default does).
        const result = req?.nextn === 'auto' ? searchDepths(depthContexts(ctx, req), (c) => runSearch(c, spec), topN) : runSearch(ctx, spec);
        if (req?.nextn === 'auto') result.inputs = { ...result.inputs, speculation: autoDescription(depthContexts(ctx, req)) };
        done.push({ exp, ctx, result, row: rowOf(exp, ctx, result), reportText: renderReport(result, { color: false }), json: searchToJson(result) });
      }
      shown.end();
      // Every experiment's folder is checked before any is written, so a refused one leaves no others behind.
      const saveDirOf = (exp: Experiment) => insideDir(opts.saveDir as string, uniqueSegment(exp.name));
      if (opts.saveDir && !opts.force) {
        for (const { exp, ctx, result } of done) {
          const target = resultsFolder(saveDirOf(exp), result, ctx, {});
          if (existsSync(target)) throw new InputError(`${target} already exists; pass --force to replace the files inferplan wrote there`);
        }
      }
      const rows: ExpRow[] = [];
      const docs: Record<string, unknown>[] = [];
      const reports: string[] = [];
      for (const { exp, ctx, result, row, reportText, json } of done) {
        if (opts.saveDir) {
          row.savedTo = await writeResultsDir(saveDirOf(exp), result, ctx, {
            force: opts.force as boolean | undefined,
            dynamoVersion: opts.dynamoVersion as string | undefined,
            images: imagesOf(opts) ?? exp.images,
            cluster: mergeCluster(exp.cluster, clusterOptionsOf(opts)),
            target: targetOf(opts),
            reportText,
            json,
          });
        }
        rows.push(row);
        docs.push({ name: exp.name, modes: exp.modes, result: json, savedTo: row.savedTo ?? null });
        reports.push(`== ${exp.name} ==\n${reportText}`);
      }
      const best = bestOverall(rows);
      if (opts.json) {
        printJson({ command: 'exp', file: path, rows, best: best?.name ?? null, experiments: docs });
      } else {
        if (opts.report) process.stdout.write(reports.join('\n') + '\n');
        process.stdout.write(renderExpTable(rows));
        for (const r of rows) if (r.savedTo) log(`${r.name}: saved to ${r.savedTo}`);
      }
      return rows.every((r) => r.status === 'ok') ? ExitCode.ok : ExitCode.noneMeetsSla;
    }),
  );
}
