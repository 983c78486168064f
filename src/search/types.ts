// What a search returns; output/ renders it, cli/ prints it as JSON.
import type { Backend, Sla, Workload } from '../inputs/types.js';
import type { AggEstimate, DisaggEstimate } from '../engine/types.js';
import type { BandBasis } from '../engine/bands.js';

export type Mode = 'agg' | 'disagg';

/** A candidate that was evaluated, with what the whole GPU budget would deliver. */
export interface RankedCandidate {
  estimate: AggEstimate | DisaggEstimate;
  /** e.g. "tp2pp1", or for disagg "p:tp2pp1 d:tp4pp1". */
  parallel: string;
  gpusUsed: number;
  /** Throughput per GPU over the whole budget: tokPerSPerGpu * gpusUsed / totalGpus. */
  clusterTokPerSPerGpu: number;
  /** Copies of the layout (agg) or of the xPyD unit (disagg) deployed in the budget. */
  replicas?: number;
  /** Whether it meets every SLA target (frontier points may not). */
  meetsSla?: boolean;
  /** Targets it breaks, when it does not meet the SLA. */
  broke?: RemovalReason[];
  /** Estimated chance that each target holds as measured (from the estimate's error bands). */
  chance?: SlaChance;
}

/** Chance (0-1) that a measured run meets each target; `all` is the smallest (every target holds at most that often). */
export interface SlaChance {
  ttft: number;
  tpot: number;
  requestLatency?: number;
  all: number;
}

export type RemovalReason = 'memory' | 'engine' | 'ttft' | 'tpot' | 'request_latency';

export interface NearMiss {
  parallel: string;
  broke: RemovalReason;
  /** e.g. "ttft 2450 ms > 2000 ms". */
  detail: string;
}

export interface ModeResult {
  mode: Mode;
  evaluated: number;
  feasible: number;
  removed: Record<RemovalReason, number>;
  top: RankedCandidate[];
  frontier: RankedCandidate[];
  nearMisses: NearMiss[];
  /** Engine calls and time spent in this mode. */
  counters?: ModeCounters;
  /** Every candidate meeting the SLA, when the spec asked for them (keepFeasible). */
  feasibleAll?: RankedCandidate[];
  /** The best this mode's evaluated candidates reach with each target relaxed by 10% and 25%. */
  relaxed?: Relaxation[];
}

export interface Verdict {
  winner: Mode | 'none';
  /** e.g. "agg wins: 3785 vs 3068 tokens/s/gpu, 1.23x", or a tie within the prediction uncertainty naming both. */
  text: string;
  ratio?: number;
  /** The best agg and disagg differ by less than predictions of two layouts err relative to each other. */
  tie?: boolean;
  /**
   * What else to know: the winning mode's two best layouts tying, and what relaxing each target by 10% and 25%
   * buys ("TPOT 11 ms instead of 10 (+10%): 1.21x tokens/s/gpu (5517 -> 6680)").
   */
  notes?: string[];
}

/** The best throughput with one target relaxed by `factor` (the others as given). */
export interface Relaxation {
  target: 'ttft' | 'tpot' | 'request_latency';
  factor: number;
  /** The relaxed target, ms. */
  valueMs: number;
  /** Best cluster tokens/s/gpu among the candidates evaluated that meet the relaxed SLA (0: none). */
  best: number;
}

export interface SearchInputs {
  model: string;
  system: string;
  decodeSystem?: string;
  backend: Backend;
  version: string;
  totalGpus: number;
  workload: Workload;
  sla: Sla;
  calibratedOn: string;
  topN: number;
  /** The speculative decoding searched ("MTP nextn 3 (...assumed)"), with where its acceptance rates come from; absent: none. */
  speculation?: string;
  /** Which measured runs the error bands of each mode come from (absent with an engine that has no bands). */
  bandBasis?: { agg: BandBasis; disagg: BandBasis };
}

export interface SearchResult {
  inputs: SearchInputs;
  agg?: ModeResult;
  disagg?: ModeResult;
  verdict: Verdict;
  elapsedMs: number;
  /** CPU time of the search (user + system), ms: a speed figure that other processes do not inflate. */
  cpuMs?: number;
}

// ---- Additions (search issue): the search request, SLA marks and counters. ----

/** Optional restrictions of the search space (from `exp` files or tests). */
export interface SearchRestrict {
  tp?: number[];
  pp?: number[];
  dp?: number[];
  moeTp?: number[];
  moeEp?: number[];
  /** Batch sizes (concurrency per replica for agg, decode batch for disagg). */
  batch?: number[];
  maxNumTokens?: number[];
}

export interface SearchSpec {
  totalGpus: number;
  sla: Sla;
  topN: number;
  modes: Mode[];
  restrict?: SearchRestrict;
  /** Also return every candidate meeting the SLA (ModeResult.feasibleAll), e.g. for load matching. */
  keepFeasible?: boolean;
  /**
   * What disagg rate matching maximizes: 'budget' (default) the throughput of as many xPyD units as fit in
   * totalGpus; 'perGpu' the throughput per GPU of one unit (load matching replicates units itself).
   */
  rateMatch?: 'budget' | 'perGpu';
}

/** Per-candidate SLA marks (set on every ranked candidate the search keeps). */
export interface SlaMarks {
  meetsSla: boolean;
  /** Every target this candidate breaks (empty when it meets the SLA). */
  broke: RemovalReason[];
}

export interface ModeCounters {
  /** Calls into the inference model (evaluated counts every candidate scored, including pruned tails). */
  engineCalls: number;
  /** Of `evaluated`, the disagg worker splits scored by rate matching only (not priced by the engine). */
  screened?: number;
  elapsedMs: number;
}
