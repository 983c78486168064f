// best_config_topn.csv and pareto.csv. Column names follow aiconfigurator where the meaning is the same
// (per-replica request_rate, seq/s, tokens/s and num_total_gpus), then ours: totals, error bands, memory.
// `concurrency` and `bs` mean what they mean everywhere else in inferplan (and in `estimate --concurrency /
// --batch-size`): clients over the whole deployment, sequences per worker over all its attention-DP ranks;
// the per-replica and per-rank values are the columns named so.
import { stringify } from 'csv-stringify/sync';
import { speculationSuffix } from '../engine/speculation.js';
import type { AggEstimate, DisaggEstimate, EngineContext, MemoryPicture } from '../engine/types.js';
import type { Mode, RankedCandidate, SearchInputs } from '../search/types.js';
import { round } from '../util/format.js';
import { csvSafeRecord } from '../util/text.js';
import { derivePlan } from './plan.js';
import { layoutName } from '../search/candidates.js';
import { budgetScale, deploymentConcurrency } from '../search/json.js';

const GIB = 1024 ** 3;

export const AGG_COLUMNS = [
  'model', 'isl', 'osl', 'prefix', 'concurrency', 'concurrency/replica', 'request_rate', 'bs', 'bs/dp_rank',
  'ttft', 'tpot', 'request_latency', 'seq/s', 'seq/s/gpu', 'tokens/s', 'tokens/s/gpu', 'tokens/s/user',
  'num_total_gpus', 'tp', 'pp', 'dp', 'moe_tp', 'moe_ep', 'parallel', 'gemm', 'kvcache', 'moe', 'memory',
  'backend', 'version', 'system', 'max_num_tokens', 'replicas', 'gpus/replica', 'total_gpus',
  'ttft_low', 'ttft_high', 'tpot_low', 'tpot_high', 'request_latency_low', 'request_latency_high',
  'tokens/s/gpu_low', 'tokens/s/gpu_high', 'tokens/s/user_low', 'tokens/s/user_high',
  'meets_sla', 'calibrated_on', 'mem_per_gpu_gib', 'kv_cache_gib', 'kv_tokens', 'max_sequences', 'tokens/s/gpu_cluster',
] as const;

const POOL_KEYS = ['tp', 'pp', 'dp', 'moe_tp', 'moe_ep', 'parallel', 'max_num_tokens', 'memory', 'mem_per_gpu_gib', 'kv_tokens', 'system'] as const;

export const DISAGG_COLUMNS = [
  'model', 'isl', 'osl', 'prefix', 'concurrency', 'concurrency/replica', 'request_rate',
  '(p)bs', '(p)bs/dp_rank', '(p)workers', '(d)bs', '(d)bs/dp_rank', '(d)workers',
  'ttft', 'tpot', 'request_latency', 'seq/s', 'seq/s/gpu', 'tokens/s', 'tokens/s/gpu', 'tokens/s/user',
  'num_total_gpus',
  ...POOL_KEYS.map((k) => `(p)${k}`),
  ...POOL_KEYS.map((k) => `(d)${k}`),
  'gemm', 'kvcache', 'moe', 'backend', 'version', 'kv_transfer_ms', 'replicas', 'gpus/replica', 'total_gpus',
  'ttft_low', 'ttft_high', 'tpot_low', 'tpot_high', 'request_latency_low', 'request_latency_high',
  'tokens/s/gpu_low', 'tokens/s/gpu_high', 'tokens/s/user_low', 'tokens/s/user_high',
  'meets_sla', 'calibrated_on', 'tokens/s/gpu_cluster',
] as const;

type Row = Record<string, string | number>;

/** GiB per GPU the simulated batch needs: weights, activations and the KV of `seqs` full sequences (aiconfigurator's `memory`). */
function memoryNeeded(m: MemoryPicture, seqs: number, seqLen: number): number {
  return (m.weightsGiB + m.activationGiB + (m.kvBytesPerTokenPerGpu * seqs * seqLen) / GIB);
}

/** GiB per GPU the engine will hold: weights, activations, reserve and the whole KV pool. */
function memoryAllocated(m: MemoryPicture): number {
  return m.weightsGiB + m.activationGiB + m.reserveGiB + m.kvCacheGiB;
}

function bandCells(c: RankedCandidate): Row {
  const b = c.estimate.bands;
  return {
    ttft_low: round(b.ttftMs.low), ttft_high: round(b.ttftMs.high),
    tpot_low: round(b.tpotMs.low), tpot_high: round(b.tpotMs.high),
    request_latency_low: round(b.requestLatencyMs.low), request_latency_high: round(b.requestLatencyMs.high),
    'tokens/s/gpu_low': round(b.tokPerSPerGpu.low), 'tokens/s/gpu_high': round(b.tokPerSPerGpu.high),
    'tokens/s/user_low': round(b.tokPerSPerUser.low), 'tokens/s/user_high': round(b.tokPerSPerUser.high),
    // Frontier rows may break a target; "" when the search did not say.
    meets_sla: c.meetsSla === undefined ? '' : c.meetsSla ? 'yes' : `no (${(c.broke ?? []).join(' ')})`.replace(' ()', ''),
  };
}

/**
 * Load and throughput columns: the estimate covers all agg replicas but one disagg unit, so both are first
 * scaled to the whole deployment, then split per replica where aiconfigurator's columns are per replica.
 */
function loadCells(c: RankedCandidate, replicas: number): Row {
  const m = c.estimate.metrics;
  const scale = budgetScale(c);
  const concurrency = deploymentConcurrency(c);
  const rate = round((m.requestsPerS * scale) / replicas);
  return {
    concurrency, 'concurrency/replica': round(concurrency / replicas), request_rate: rate,
    'seq/s': rate, 'seq/s/gpu': round(m.requestsPerS / m.gpus),
    'tokens/s': round((m.outputTokPerS * scale) / replicas), 'tokens/s/gpu': round(m.tokPerSPerGpu), 'tokens/s/user': round(m.tokPerSPerUser),
  };
}

function aggRow(c: RankedCandidate, inputs: SearchInputs, ctx: EngineContext): Row {
  const e = c.estimate as AggEstimate;
  const m = e.metrics;
  const { replicas, gpusPerReplica: g } = derivePlan({ inputs, ctx, candidate: c });
  const seqLen = inputs.workload.isl + inputs.workload.osl;
  const moe = ctx.model.moe !== undefined;
  return {
    model: inputs.model, isl: inputs.workload.isl, osl: inputs.workload.osl, prefix: inputs.workload.prefix,
    ...loadCells(c, replicas),
    bs: e.config.batchSize, 'bs/dp_rank': round(e.config.batchSize / e.config.dp),
    ttft: round(m.ttftMs), tpot: round(m.tpotMs), request_latency: round(m.requestLatencyMs),
    num_total_gpus: g, tp: e.config.tp, pp: e.config.pp, dp: e.config.dp, moe_tp: e.config.moeTp, moe_ep: e.config.moeEp,
    parallel: (c.parallel || layoutName(e.config, moe)) + speculationSuffix(e.speculation),
    gemm: ctx.gemmDtype, kvcache: ctx.kvDtype, moe: moe ? ctx.moeDtype : '',
    // Each attention-DP rank holds only its own sequences.
    memory: round(memoryNeeded(e.memory, e.config.batchSize / e.config.dp, seqLen)),
    backend: inputs.backend, version: inputs.version, system: inputs.system,
    max_num_tokens: e.config.maxNumTokens, replicas, 'gpus/replica': g, total_gpus: inputs.totalGpus,
    ...bandCells(c),
    calibrated_on: inputs.calibratedOn,
    mem_per_gpu_gib: round(memoryAllocated(e.memory)), kv_cache_gib: round(e.memory.kvCacheGiB),
    kv_tokens: Math.round(e.memory.kvTokens), max_sequences: Math.round(e.memory.maxSequences),
    'tokens/s/gpu_cluster': round(c.clusterTokPerSPerGpu),
  };
}

function disaggRow(c: RankedCandidate, inputs: SearchInputs, ctx: EngineContext): Row {
  const e = c.estimate as DisaggEstimate;
  const m = e.metrics;
  const { prefill: p, decode: d } = e.config;
  const { replicas, gpusPerReplica: perReplica } = derivePlan({ inputs, ctx, candidate: c });
  const seqLen = inputs.workload.isl + inputs.workload.osl;
  const moe = ctx.model.moe !== undefined;
  const pool = (tag: '(p)' | '(d)', cfg: typeof p, mem: MemoryPicture, system: string): Row => ({
    [`${tag}tp`]: cfg.tp, [`${tag}pp`]: cfg.pp, [`${tag}dp`]: cfg.dp, [`${tag}moe_tp`]: cfg.moeTp, [`${tag}moe_ep`]: cfg.moeEp,
    // The decode pool runs the speculative decoding (" +mtp3").
    [`${tag}parallel`]: layoutName(cfg, moe) + (tag === '(d)' ? speculationSuffix(e.speculation) : ''), [`${tag}max_num_tokens`]: cfg.maxNumTokens,
    [`${tag}memory`]: round(memoryNeeded(mem, cfg.batchSize / cfg.dp, tag === '(p)' ? inputs.workload.isl : seqLen)),
    [`${tag}mem_per_gpu_gib`]: round(memoryAllocated(mem)), [`${tag}kv_tokens`]: Math.round(mem.kvTokens),
    [`${tag}system`]: system,
  });
  return {
    model: inputs.model, isl: inputs.workload.isl, osl: inputs.workload.osl, prefix: inputs.workload.prefix,
    ...loadCells(c, replicas),
    '(p)bs': p.batchSize, '(p)bs/dp_rank': round(p.batchSize / p.dp), '(p)workers': p.workers,
    '(d)bs': d.batchSize, '(d)bs/dp_rank': round(d.batchSize / d.dp), '(d)workers': d.workers,
    ttft: round(m.ttftMs), tpot: round(m.tpotMs), request_latency: round(m.requestLatencyMs),
    num_total_gpus: perReplica,
    ...pool('(p)', p, e.memory.prefill, inputs.system),
    ...pool('(d)', d, e.memory.decode, inputs.decodeSystem ?? inputs.system),
    gemm: ctx.gemmDtype, kvcache: ctx.kvDtype, moe: moe ? ctx.moeDtype : '',
    backend: inputs.backend, version: inputs.version, kv_transfer_ms: round(e.kvTransferMs),
    replicas, 'gpus/replica': perReplica, total_gpus: inputs.totalGpus,
    ...bandCells(c),
    calibrated_on: inputs.calibratedOn,
    'tokens/s/gpu_cluster': round(c.clusterTokPerSPerGpu),
  };
}

/** CSV text of candidates of one mode, header always present; text cells neutralised against formula injection. */
export function buildCandidatesCsv(mode: Mode, rows: RankedCandidate[], inputs: SearchInputs, ctx: EngineContext): string {
  const columns = mode === 'agg' ? [...AGG_COLUMNS] : [...DISAGG_COLUMNS];
  const records = rows.map((c) => csvSafeRecord(mode === 'agg' ? aggRow(c, inputs, ctx) : disaggRow(c, inputs, ctx)));
  return stringify(records, { header: true, columns, record_delimiter: 'unix' });
}
