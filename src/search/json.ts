// The machine-readable document of a search (`configure default --json`), reused by other commands.
import type { AggEstimate, DisaggEstimate, MetricBands, PoolConfig, ServingMetrics } from '../engine/types.js';
import { tokensPerStep } from '../engine/speculation.js';
import type { ModeResult, RankedCandidate, SearchResult } from './types.js';
import { explain, hasFeasible, type NoFeasibleDetail } from './explain.js';
import type { Recommendation, RecommendResult } from './recommend.js';
import { round } from '../util/format.js';
import { gpusOf } from './port.js';

export interface PoolJson {
  workers: number;
  parallel: string;
  tp: number;
  pp: number;
  dp: number;
  moeTp: number;
  moeEp: number;
  batchSize: number;
  maxNumTokens: number;
  gpusPerWorker: number;
}

export interface CandidateJson {
  rank?: number;
  mode: 'agg' | 'disagg';
  parallel: string;
  /** Speculative decoding the candidate runs: method, draft depth, acceptance rates and whether they are assumed. */
  speculation?: { method: string; nextn: number; acceptRates: number[]; tokensPerStep: number; assumed: boolean; source: string };
  meetsSla: boolean;
  broke: string[];
  /** Estimated chance (0-1) that each target holds as measured, from the error bands. */
  chance?: { ttft: number; tpot: number; requestLatency?: number; all: number };
  clusterTokPerSPerGpu: number;
  gpusUsed: number;
  replicas: number;
  gpusPerReplica: number;
  /** Clients over the whole budget (per-replica concurrency x replicas). */
  concurrency: number;
  concurrencyPerReplica: number;
  /** Whole-budget totals. */
  totalTokPerS: number;
  totalRequestsPerS: number;
  /**
   * Metrics as the inference model returned them: agg covers every replica, disagg one xPyD unit
   * (per-GPU and per-user figures do not depend on it; the totals above cover the budget).
   */
  metrics: ServingMetrics;
  bands: MetricBands;
  agg?: { tp: number; pp: number; dp: number; moeTp: number; moeEp: number; batchSize: number; maxNumTokens: number };
  prefill?: PoolJson;
  decode?: PoolJson;
  kvTransferMs?: number;
}

export interface ModeJson {
  evaluated: number;
  feasible: number;
  removed: ModeResult['removed'];
  engineCalls: number;
  /** Of `evaluated`, disagg worker splits scored by rate matching only. */
  screened: number;
  elapsedMs: number;
  top: CandidateJson[];
  frontier: CandidateJson[];
  nearMisses: ModeResult['nearMisses'];
}

export interface SearchJson {
  inputs: SearchResult['inputs'];
  verdict: SearchResult['verdict'];
  best: CandidateJson | null;
  agg: ModeJson | null;
  disagg: ModeJson | null;
  /** Candidates evaluated in both modes. */
  evaluated: number;
  /** Run-time measurements (the only non-deterministic part; dropped from saved summaries). */
  elapsed: { searchMs: number; searchCpuMs: number | null; candidatesPerS: number; candidatesPerCpuS: number | null };
  calibration: string;
  explanation: NoFeasibleDetail | null;
}

const r2 = (v: number): number => round(v, 2);

function roundMetrics(m: ServingMetrics): ServingMetrics {
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, r2(v as number)])) as unknown as ServingMetrics;
}

function roundBands(b: MetricBands): MetricBands {
  return Object.fromEntries(
    Object.entries(b).map(([k, v]) => [k, { low: r2(v.low), high: r2(v.high) }]),
  ) as unknown as MetricBands;
}

function poolJson(p: PoolConfig, parallel: string): PoolJson {
  return {
    workers: p.workers,
    parallel,
    tp: p.tp,
    pp: p.pp,
    dp: p.dp,
    moeTp: p.moeTp,
    moeEp: p.moeEp,
    batchSize: p.batchSize,
    maxNumTokens: p.maxNumTokens,
    gpusPerWorker: gpusOf(p),
  };
}

/** Prefill and decode layout names of a disagg candidate's "p:<prefill> d:<decode>" label. */
export function disaggParallelNames(c: RankedCandidate): [string, string] {
  const [p, d] = c.parallel.replace(/^p:/, '').split(' d:');
  return [p ?? '', d ?? ''];
}

/** Replicas of a candidate (agg estimates carry it; disagg units are replicated by the search). */
export function replicasOf(c: RankedCandidate): number {
  return c.replicas ?? c.estimate.replicas;
}

/** Scale from what the estimate covers (one disagg unit, or all agg replicas) to the whole budget. */
export function budgetScale(c: RankedCandidate): number {
  return c.gpusUsed / Math.max(1, c.estimate.metrics.gpus);
}

/** Clients over the whole deployment (every replica, one frontend): what `concurrency` means in every output. */
export function deploymentConcurrency(c: RankedCandidate): number {
  return Math.max(1, Math.round(c.estimate.metrics.concurrency * budgetScale(c)));
}

export function candidateJson(c: RankedCandidate, rank?: number): CandidateJson {
  const e = c.estimate;
  const replicas = replicasOf(c);
  const scale = budgetScale(c);
  const concurrency = deploymentConcurrency(c);
  const base: CandidateJson = {
    ...(rank !== undefined ? { rank } : {}),
    mode: e.mode,
    parallel: c.parallel,
    ...(e.speculation && e.speculation.draft > 0 && {
      speculation: {
        method: e.speculation.method, nextn: e.speculation.draft, acceptRates: e.speculation.acceptRates,
        tokensPerStep: r2(tokensPerStep(e.speculation.acceptRates)), assumed: e.speculation.assumed, source: e.speculation.source,
      },
    }),
    meetsSla: c.meetsSla ?? true,
    broke: c.broke ?? [],
    ...(c.chance && { chance: Object.fromEntries(Object.entries(c.chance).map(([k, v]) => [k, r2(v as number)])) as CandidateJson['chance'] }),
    clusterTokPerSPerGpu: r2(c.clusterTokPerSPerGpu),
    gpusUsed: c.gpusUsed,
    replicas,
    gpusPerReplica: c.gpusUsed / replicas,
    concurrency,
    concurrencyPerReplica: Math.round(concurrency / replicas),
    totalTokPerS: r2(e.metrics.outputTokPerS * scale),
    totalRequestsPerS: r2(e.metrics.requestsPerS * scale),
    metrics: roundMetrics(e.metrics),
    bands: roundBands(e.bands),
  };
  if (e.mode === 'agg') {
    const { tp, pp, dp, moeTp, moeEp, batchSize, maxNumTokens } = (e as AggEstimate).config;
    base.agg = { tp, pp, dp, moeTp, moeEp, batchSize, maxNumTokens };
  } else {
    const d = e as DisaggEstimate;
    const [pName, dName] = disaggParallelNames(c);
    base.prefill = poolJson(d.config.prefill, pName);
    base.decode = poolJson(d.config.decode, dName);
    base.kvTransferMs = r2(d.kvTransferMs);
  }
  return base;
}

function modeJson(m: ModeResult | undefined): ModeJson | null {
  if (!m) return null;
  return {
    evaluated: m.evaluated,
    feasible: m.feasible,
    removed: m.removed,
    engineCalls: m.counters?.engineCalls ?? 0,
    screened: m.counters?.screened ?? 0,
    elapsedMs: r2(m.counters?.elapsedMs ?? 0),
    top: m.top.map((c, i) => candidateJson(c, i + 1)),
    frontier: m.frontier.map((c) => candidateJson(c)),
    nearMisses: m.nearMisses,
  };
}

/** The best candidate of the winning mode, if any. */
export function bestOf(result: SearchResult): RankedCandidate | undefined {
  const w = result.verdict.winner;
  if (w === 'agg') return result.agg?.top[0];
  if (w === 'disagg') return result.disagg?.top[0];
  return undefined;
}

export function searchToJson(result: SearchResult): SearchJson {
  const evaluated = (result.agg?.evaluated ?? 0) + (result.disagg?.evaluated ?? 0);
  const best = bestOf(result);
  return {
    inputs: result.inputs,
    verdict: result.verdict,
    best: best ? candidateJson(best, 1) : null,
    agg: modeJson(result.agg),
    disagg: modeJson(result.disagg),
    evaluated,
    elapsed: {
      searchMs: r2(result.elapsedMs),
      searchCpuMs: result.cpuMs !== undefined ? r2(result.cpuMs) : null,
      candidatesPerS: Math.round(evaluated / Math.max(result.elapsedMs / 1000, 1e-6)),
      candidatesPerCpuS: result.cpuMs !== undefined ? Math.round(evaluated / Math.max(result.cpuMs / 1000, 1e-6)) : null,
    },
    calibration: result.inputs.calibratedOn,
    explanation: hasFeasible(result) ? null : explain(result),
  };
}

// ---- recommend ----

export interface RecommendationJson {
  rank?: number;
  mode: 'agg' | 'disagg';
  parallel: string;
  gpus: number;
  replicas: number;
  unitGpus: number;
  unitRequestsPerS: number;
  unitConcurrency: number;
  /** Load served over the target (>= 1 when met). */
  share: number;
  meetsTarget: boolean;
  deployment: CandidateJson;
}

export interface RecommendJson {
  inputs: Omit<SearchResult['inputs'], 'totalGpus'>;
  target: RecommendResult['target'];
  maxGpus: number | null;
  best: RecommendationJson | null;
  agg: RecommendationJson[];
  disagg: RecommendationJson[];
  unitBudget: number;
  evaluated: number;
  elapsed: { searchMs: number };
  explanation: NoFeasibleDetail | null;
}

export function recommendationJson(r: Recommendation, rank?: number): RecommendationJson {
  return {
    ...(rank !== undefined ? { rank } : {}),
    mode: r.mode,
    parallel: r.parallel,
    gpus: r.gpus,
    replicas: r.replicas,
    unitGpus: r.unitGpus,
    unitRequestsPerS: r2(r.unitRequestsPerS),
    unitConcurrency: r2(r.unitConcurrency),
    share: r2(r.share),
    meetsTarget: r.share >= 1 - 1e-9,
    deployment: candidateJson(r.candidate),
  };
}

export function recommendToJson(result: RecommendResult): RecommendJson {
  const { totalGpus: _unitBudget, ...inputs } = result.search.inputs;
  const s = result.search;
  return {
    inputs,
    target: result.target,
    maxGpus: result.maxGpus ?? null,
    best: result.best ? recommendationJson(result.best, 1) : null,
    agg: result.agg.map((r, i) => recommendationJson(r, i + 1)),
    disagg: result.disagg.map((r, i) => recommendationJson(r, i + 1)),
    unitBudget: result.unitBudget,
    evaluated: (s.agg?.evaluated ?? 0) + (s.disagg?.evaluated ?? 0),
    elapsed: { searchMs: r2(result.elapsedMs) },
    explanation: hasFeasible(s) ? null : explain(s),
  };
}
