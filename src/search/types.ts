// What a search returns; output/ renders it, cli/ prints it as JSON.
import type { Backend, Sla, Workload } from '../inputs/types.js';
import type { AggEstimate, DisaggEstimate } from '../engine/types.js';

export type Mode = 'agg' | 'disagg';

/** A candidate that was evaluated, with what the whole GPU budget would deliver. */
export interface RankedCandidate {
  estimate: AggEstimate | DisaggEstimate;
  /** e.g. "tp2pp1", or for disagg "p:tp2pp1 d:tp4pp1". */
  parallel: string;
  gpusUsed: number;
  /** Throughput per GPU over the whole budget: tokPerSPerGpu * gpusUsed / totalGpus. */
  clusterTokPerSPerGpu: number;
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
}

export interface Verdict {
  winner: Mode | 'none';
  /** e.g. "agg wins: 3785 vs 3068 tokens/s/gpu, 1.23x". */
  text: string;
  ratio?: number;
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
}

export interface SearchResult {
  inputs: SearchInputs;
  agg?: ModeResult;
  disagg?: ModeResult;
  verdict: Verdict;
  elapsedMs: number;
}
