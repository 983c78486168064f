// Why nothing met the SLA: per mode, how many candidates each constraint removed and the nearest misses.
import type { Sla } from '../inputs/types.js';
import type { Mode, ModeResult, NearMiss, RemovalReason, SearchResult } from './types.js';

export interface ModeExplanation {
  mode: Mode;
  evaluated: number;
  feasible: number;
  /** Of `evaluated`, worker splits scored by rate matching only (never priced, so never removed). */
  screened: number;
  /**
   * Candidates removed per constraint. Memory and engine refusals are exclusive (the candidate was not
   * priced); a priced candidate that breaks several targets counts under each of them.
   */
  removed: Record<RemovalReason, number>;
  nearMisses: NearMiss[];
}

export interface NoFeasibleDetail {
  sla: Sla;
  totalGpus: number;
  modes: ModeExplanation[];
}

export function hasFeasible(result: SearchResult): boolean {
  return (result.agg?.top.length ?? 0) > 0 || (result.disagg?.top.length ?? 0) > 0;
}

export function explain(result: SearchResult): NoFeasibleDetail {
  const modes = [result.agg, result.disagg]
    .filter((m): m is ModeResult => m !== undefined)
    .map((m) => ({ mode: m.mode, evaluated: m.evaluated, feasible: m.feasible, screened: m.counters?.screened ?? 0, removed: m.removed, nearMisses: m.nearMisses }));
  return { sla: result.inputs.sla, totalGpus: result.inputs.totalGpus, modes };
}

/** One line for the error message: which constraint removed the most candidates. */
export function noFeasibleMessage(detail: NoFeasibleDetail): string {
  const totals: Record<string, number> = {};
  let evaluated = 0;
  for (const m of detail.modes) {
    evaluated += m.evaluated;
    for (const [k, v] of Object.entries(m.removed)) totals[k] = (totals[k] ?? 0) + v;
  }
  const parts = Object.entries(totals)
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`);
  const sla = `ttft <= ${detail.sla.ttftMs} ms, tpot <= ${detail.sla.tpotMs} ms` +
    (detail.sla.requestLatencyMs !== undefined ? `, request latency <= ${detail.sla.requestLatencyMs} ms` : '');
  return `no configuration on ${detail.totalGpus} GPUs meets ${sla} (${evaluated} candidates; removed by ${parts.join(', ') || 'nothing'})`;
}
