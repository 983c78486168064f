// What the benchmark knows of each dev row's source, and the columns it sets from that knowledge. The dev rows
// record no speculative decoding nor server settings, and the disaggregated ones of InferenceX's sweeps record
// their deployment in part (no worker counts, attention DP folded into tp). For InferenceX's rows the source's own
// published configuration and launch scripts say these (bench/sources/inferencex.json, written by
// scripts/inferencex-configs.ts; sourceServerArgs); for the other sources, how they ran MTP checkpoints. The
// estimator never infers any of it: it prices the columns set here (docs/engine.md "Speculative decoding").
import { readFileSync } from 'node:fs';
import { RECIPE_MTP_DEPTH } from '../src/engine/speculation.js';
import { isKnownBuild, rowConcurrency, workersRecorded, type Row } from '../src/engine/rows.js';
import { measuredMeans } from '../test/support/e2e-reference.js';
import { engineShippedBy } from '../src/inputs/dynamo-runtime.js';
import { findBundled } from '../src/inputs/registry.js';
import type { Backend, ModelSpec } from '../src/inputs/types.js';
import { versionKey } from '../src/util/versions.js';

/** A pool of a disaggregated entry: workers, GPUs per worker (tp), expert parallelism and attention DP. */
export interface Pool { workers: number; tp: number; ep: number; dpAttn: boolean }
/**
 * What every InferenceX search-space entry names, and the first and last day a configuration version listed it:
 * `model` as its results name it (`model=` in the rows), `checkpoint` the checkpoint its scripts served (e.g.
 * zai-org/GLM-5-FP8).
 */
export interface Common { config: string; image: string; model: string; checkpoint: string; system: string; backend: string; precision: string; isl: number; osl: number; listed: [string, string] }
/** A single-node entry: its layout, loads (a doubling range or a list) and draft depth (0: none). */
export interface AggEntry extends Common { tp: number; ep: number; dpAttn: boolean; conc: number[]; concRange: boolean; nextn: number }
/** A disaggregated entry: its loads, pools and draft depth (null: MTP whose recipe names no depth). */
export interface DisaggEntry extends Common { conc: number[]; prefill: Pool; decode: Pool; nextn: number | null }

const INFERENCEX = JSON.parse(readFileSync(new URL('./sources/inferencex.json', import.meta.url), 'utf8')) as { agg: AggEntry[]; disagg: DisaggEntry[] };

/** Where the speculation (and, for InferenceX's disagg rows, the deployment) a row is priced with comes from. */
export type SourceBasis = 'recorded' | 'source configuration' | 'assumed';

/** The InferenceX run a row names: the model as its results name it, the container image and the clients. */
function inferencexRun(row: Row): { model: string; image: string; conc: number } | undefined {
  const src = row.silicon_data_source ?? '';
  const model = /(?:^|; )model=([^;]+)/.exec(src)?.[1];
  const image = /(?:^|; )image=([^;]+)/.exec(src)?.[1]?.trim().replace('#', '/');
  const conc = Number(/silicon_concurrency=(\d+)/.exec(src)?.[1]);
  return model && image && conc ? { model, image, conc } : undefined;
}

/** The day a row's source says it was measured (`measured=YYYY-MM-DD...`), if it says. */
const measuredDay = (row: Row): string | undefined => /measured=(\d{4}-\d{2}-\d{2})/.exec(row.silicon_data_source ?? '')?.[1];

const sameSweep = (e: Common, row: Row, run: { model: string; image: string }): boolean =>
  e.model === run.model && e.image === run.image && e.system === row.system && e.backend === row.backend && e.precision === row.precision;

/** Whether an agg entry's sweep ran concurrency `c`: a doubling range from its first to its last, or its list. */
function runsAt(e: AggEntry, c: number): boolean {
  if (!e.concRange) return e.conc.includes(c);
  for (let x = e.conc[0]!; x <= e.conc[1]!; x *= 2) if (x === c) return true;
  return false;
}

/**
 * The draft depth an InferenceX agg row ran (0: none), from the search-space entries of its sweep's configuration
 * that match what it records (model, image, GPU, engine, precision, lengths, tp, ep, attention DP, concurrency),
 * else from every entry of that image (a layout or load the configuration versions read do not list, but whose
 * image the sweep ran with one setting only). Undefined when the row is not from InferenceX or the entries disagree:
 * the same image, layout and load was swept both with and without MTP (DeepSeek-R1 FP8 on B200 with SGLang 0.5.9
 * up to 64 clients), and the row does not say which run it is.
 */
export function sourceDepth(row: Row): number | undefined {
  const run = inferencexRun(row);
  if (row.mode === 'disagg' || !run) return undefined;
  const dp = Number(row.attention_dp_size || 1) > 1;
  const sameImage = INFERENCEX.agg.filter((e) => sameSweep(e, row, run));
  const sameRun = sameImage.filter((e) => e.isl === Number(row.isl) && e.osl === Number(row.osl) && e.tp === Number(row.tp_size) &&
    e.ep === Number(row.moe_ep_size || 1) && e.dpAttn === dp && runsAt(e, run.conc));
  const hits = sameRun.length ? sameRun : sameImage;
  if (!hits.length || !(hits.every((e) => e.nextn > 0) || hits.every((e) => e.nextn === 0))) return undefined;
  // All MTP: the depth its scripts set for the row's attention (TRT-LLM drafts less with attention DP).
  const depths = new Set(hits.filter((e) => e.dpAttn === dp || hits.every((h) => h.dpAttn !== dp)).map((e) => e.nextn));
  return depths.size === 1 ? [...depths][0] : undefined;
}

/**
 * The deployment an InferenceX disagg row ran, from the one entry of its sweep's configuration with its lengths,
 * concurrency and the GPUs per prefill and decode worker it records (its tp columns), else the one listed when the
 * row was measured; undefined when none or several different ones match. nextn null: MTP whose recipe names no depth.
 */
export function sourceDeployment(row: Row): { prefill: Pool; decode: Pool; nextn: number | null } | undefined {
  const run = inferencexRun(row);
  if (row.mode !== 'disagg' || !run) return undefined;
  // Attention DP over one GPU is no deployment: the configuration's placeholder where a recipe file sets it.
  const placeholder = (p: Pool): boolean => p.dpAttn && p.tp === 1;
  const hits = INFERENCEX.disagg.filter((e) => sameSweep(e, row, run) && e.isl === Number(row.isl) && e.osl === Number(row.osl) &&
    e.conc.includes(run.conc) && e.prefill.tp === Number(row.prefill_tp_size) && e.decode.tp === Number(row.decode_tp_size) &&
    !placeholder(e.prefill) && !placeholder(e.decode));
  const one = (es: DisaggEntry[]): DisaggEntry | undefined => (new Set(es.map((e) => JSON.stringify([e.prefill, e.decode, e.nextn]))).size === 1 ? es[0] : undefined);
  // Several deployments at that load over the configuration's history: the ones listed when the row was measured.
  const day = measuredDay(row);
  return one(hits) ?? (day ? one(hits.filter((e) => e.listed[0] <= day && day <= plusDays(e.listed[1], LISTED_GRACE_DAYS))) : undefined);
}

/**
 * Server settings of InferenceX's SGLang single-node launch scripts (benchmarks/single_node/*.sh of
 * github.com/SemiAnalysisAI/InferenceX, every version from 2025-09 to 2026-04) in the row format's columns:
 * - scheduler_recv_interval: DeepSeek-R1 and Qwen3.5 on B200 and B300 take requests in every 10 steps below 16
 *   clients and every 30 from 16, except DeepSeek-R1 FP8 at tp 4 and Qwen3.5 FP8 on B300 (10 at every load); the
 *   GLM-5 scripts, those for Hopper and attention-DP servers (which SGLang's recv skipper refused) leave it at 1.
 * - kv_cache_dtype: the quantized scripts pass --kv-cache-dtype fp8_e4m3 (as our rule for such rows assumes), but
 *   DeepSeek-R1's and GLM-5's FP8 scripts for H200 pass none: SGLang keeps the checkpoint's bf16 KV cache ("auto").
 * Undefined for rows not from InferenceX.
 */
export function sourceServerArgs(row: Row): Row | undefined {
  const run = inferencexRun(row);
  if (!run || row.backend !== 'sglang' || row.mode === 'disagg') return undefined;
  const out: Row = { scheduler_recv_interval: String(recvInterval(row, run)) };
  if (row.precision === 'fp8' && row.system === 'h200_sxm' && ['DeepSeek-R1', 'GLM-5'].includes(run.model)) out.kv_cache_dtype = 'auto';
  const fraction = memFractionStatic(row, run);
  if (fraction !== undefined) out.gpu_memory_fraction = String(fraction);
  return out;
}

/**
 * --mem-fraction-static of the B200 and H200 scripts (B300 scripts came later than its rows: undefined, the
 * engine's default): DeepSeek-R1 FP4 0.85, FP8 0.82 (at tp 4 from 2026-01-13 0.95); GLM-5 FP8 0.85, NVFP4 0.80
 * (0.9 from 2026-04-09); Qwen3.5 0.82 on B200 (NVFP4 0.85, the MTP script 0.8) and 0.8 on H200.
 */
function memFractionStatic(row: Row, run: { model: string }): number | undefined {
  if (!['b200_sxm', 'h200_sxm'].includes(row.system ?? '')) return undefined;
  const day = measuredDay(row) ?? '';
  const fp4 = row.precision === 'fp4' || row.precision === 'nvfp4';
  if (run.model === 'DeepSeek-R1') return fp4 ? 0.85 : Number(row.tp_size) === 4 && day >= '2026-01-13' ? 0.95 : 0.82;
  if (run.model === 'GLM-5') return fp4 ? (day >= '2026-04-09' ? 0.9 : 0.8) : 0.85;
  if (run.model.startsWith('Qwen3.5')) {
    if (row.system === 'h200_sxm') return 0.8;
    return fp4 ? 0.85 : (sourceDepth(row) ?? 0) > 0 ? 0.8 : 0.82;
  }
  return undefined;
}

function recvInterval(row: Row, run: { model: string; conc: number }): number {
  const deepseek = run.model === 'DeepSeek-R1';
  const qwen = run.model.startsWith('Qwen3.5');
  if (!(deepseek || qwen) || !['b200_sxm', 'b300_sxm'].includes(row.system ?? '') || Number(row.attention_dp_size || 1) > 1) return 1;
  const fp8 = row.precision === 'fp8';
  if (fp8 && ((deepseek && Number(row.tp_size) === 4) || (qwen && row.system === 'b300_sxm'))) return 10;
  return run.conc >= 16 ? 30 : 10;
}

/** Days after a configuration version last listed an entry that runs measured then may still have used it. */
const LISTED_GRACE_DAYS = 14;

function plusDays(day: string, n: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
}

/** A pool's columns in the row format: attention DP splits the worker's GPUs into ranks of attention tp 1. */
function poolColumns(side: 'prefill' | 'decode', p: Pool): Row {
  return {
    [`${side}_num_workers`]: String(p.workers), [`${side}_tp_size`]: String(p.dpAttn ? 1 : p.tp), [`${side}_attention_dp_size`]: String(p.dpAttn ? p.tp : 1),
    [`${side}_moe_ep_size`]: String(p.ep), [`${side}_moe_tp_size`]: String(Math.max(1, Math.floor(p.tp / p.ep))),
  };
}

/**
 * An InferenceX row names the base model (model_path zai-org/GLM-5) while its sweep served a quantized checkpoint
 * (zai-org/GLM-5-FP8, nvidia/GLM-5-NVFP4), whose config says which layers keep which format: the row takes the
 * checkpoint its sweep served when that is one bundled checkpoint, and keeps its model otherwise.
 */
export function withServedCheckpoint(row: Row): Row {
  const run = inferencexRun(row);
  if (!run) return row;
  const served = new Set([...INFERENCEX.agg, ...INFERENCEX.disagg].filter((e) => sameSweep(e, row, run)).map((e) => e.checkpoint));
  const [checkpoint] = served;
  return served.size === 1 && findBundled(checkpoint!)?.id === checkpoint && checkpoint !== row.model_path ? { ...row, model_path: checkpoint! } : row;
}

/**
 * A dev row with the columns the benchmark sets from its source, and where they come from. Rows that state
 * `nextn` keep it. InferenceX's rows take their sweep's configuration: agg rows their speculation (sourceDepth),
 * disagg rows their deployment and speculation (sourceDeployment). Otherwise agg rows run plain decoding (no source
 * says otherwise: the SGLang sweeps that InferenceX's configuration describes ran MTP only where named so), and
 * disagg rows as each source ran MTP checkpoints: TRT-LLM and SGLang recipe sweeps the recipes' depth 3, SGLang's
 * planner-generated runs the checkpoint's own depth, TRT-LLM's planner-generated runs (config_id= in the source, or
 * recorded worker counts) and vLLM (which needs an explicit speculative config) plain decoding. InferenceX's SGLang
 * agg rows also take their launch scripts' request intake and KV cache format (sourceServerArgs), unless the row states its own.
 */
export function withSourceKnowledge(recorded: Row, model: ModelSpec): { row: Row; basis: SourceBasis } {
  // Columns the row states itself are kept.
  const args = Object.entries(sourceServerArgs(recorded) ?? {}).filter(([k]) => (recorded[k] ?? '').trim() === '');
  const row = args.length ? { ...recorded, ...Object.fromEntries(args) } : recorded;
  if ((row.nextn ?? '').trim() !== '') return { row, basis: 'recorded' };
  const layers = model.mtpLayers ?? 0;
  const agg = row.mode !== 'disagg';
  // No source records how often its drafts were accepted: blank rates, priced at the family's published defaults.
  const at = (r: Row, depth: number): Row => (depth > 0 && layers > 0 ? { ...r, nextn: String(depth), nextn_accept_rates: '' } : r);
  const depth = sourceDepth(row);
  if (depth !== undefined) return { row: at(row, depth), basis: 'source configuration' };
  const deployed = sourceDeployment(row);
  if (deployed) {
    const r = { ...row, ...poolColumns('prefill', deployed.prefill), ...poolColumns('decode', deployed.decode) };
    return { row: at(r, deployed.nextn ?? RECIPE_MTP_DEPTH), basis: 'source configuration' };
  }
  const planner = /config_id=/.test(row.silicon_data_source ?? '') || workersRecorded(row);
  if (layers <= 0 || agg || row.backend === 'vllm' || (planner && row.backend === 'trtllm')) return { row, basis: 'assumed' };
  return { row: at(row, planner ? layers : Math.max(layers, RECIPE_MTP_DEPTH)), basis: 'assumed' };
}

/**
 * A dev row that names no engine release (blank, a nightly tag) but records when it was measured: the benchmark
 * prices it with the release the newest Dynamo release of that date ships (engineShippedBy), not with today's
 * default, which did not exist yet (most such rows date from 2025-10 to 2026-04). Named builds the estimator knows
 * (gpt-oss-dev) keep their name. The estimator itself never reads provenance: a row without a release is priced
 * with the system's default.
 */
export function releaseOfMeasurement(row: Row): Row {
  const v = row.backend_version ?? '';
  if (versionKey(v) || !(['vllm', 'sglang', 'trtllm'] as string[]).includes(row.backend ?? '')) return row;
  if (isKnownBuild(row.backend as Backend, v)) return row;
  const date = measuredDay(row);
  return date ? { ...row, backend_version: engineShippedBy(row.backend as Backend, date) } : row;
}

/**
 * Dev rows priced as the runs they restate. Some sources restate InferenceX's runs (its results reappear in the
 * gap-analysis files, rounded to 0.01 ms) without the run's provenance (image and date: so not its speculative
 * decoding, release or server settings), and would be priced as a different deployment than the one measured.
 * Rows of one model, system, engine, mode, lengths and concurrency with the same TTFT and TPOT to 0.01 ms are one
 * run: a row whose source does not name it takes the columns of the row whose source does (keeping its own id).
 */
export function asRunsTheyRestate(rows: Row[]): { rows: Row[]; restated: number } {
  const runs = rows.map((r) => {
    const { ttftMs, tpotMs } = measuredMeans(r);
    const conc = rowConcurrency(r);
    const key = ttftMs > 0 && tpotMs > 0 && conc ? [r.model_path, r.system, r.backend, r.mode, r.isl, r.osl, conc, ttftMs.toFixed(2), tpotMs.toFixed(2)].join('|') : undefined;
    return { row: r, key, named: inferencexRun(r) !== undefined };
  });
  const named = new Map<string, Row>();
  for (const r of runs) if (r.key !== undefined && r.named && !named.has(r.key)) named.set(r.key, r.row);
  let restated = 0;
  const out = runs.map(({ row, key, named: isNamed }) => {
    const run = key === undefined || isNamed ? undefined : named.get(key);
    if (!run) return row;
    restated++;
    return { ...run, id: row.id };
  });
  return { rows: out, restated };
}
