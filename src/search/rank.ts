// SLA checks, ranking, the Pareto frontier and the verdict: pure functions over evaluated candidates.
import type { Sla } from '../inputs/types.js';
import type { ServingMetrics } from '../engine/types.js';
import type { Mode, ModeResult, NearMiss, RankedCandidate, RemovalReason, Verdict } from './types.js';
import { num } from '../util/format.js';

/** Every target a prediction breaks, in report order. */
export function slaBreaks(m: ServingMetrics, sla: Sla): RemovalReason[] {
  const out: RemovalReason[] = [];
  if (!(m.ttftMs <= sla.ttftMs)) out.push('ttft');
  if (!(m.tpotMs <= sla.tpotMs)) out.push('tpot');
  if (sla.requestLatencyMs !== undefined && !(m.requestLatencyMs <= sla.requestLatencyMs)) out.push('request_latency');
  return out;
}

/** How far past its worst target a prediction is (1 = on target); used to order near misses. */
export function missRatio(m: ServingMetrics, sla: Sla): { ratio: number; worst: RemovalReason } {
  let ratio = m.ttftMs / sla.ttftMs;
  let worst: RemovalReason = 'ttft';
  if (m.tpotMs / sla.tpotMs > ratio) {
    ratio = m.tpotMs / sla.tpotMs;
    worst = 'tpot';
  }
  if (sla.requestLatencyMs !== undefined && m.requestLatencyMs / sla.requestLatencyMs > ratio) {
    ratio = m.requestLatencyMs / sla.requestLatencyMs;
    worst = 'request_latency';
  }
  return { ratio, worst };
}


export function missDetail(m: ServingMetrics, sla: Sla, broke: RemovalReason[]): string {
  return broke
    .map((r) =>
      r === 'ttft'
        ? `ttft ${num(m.ttftMs)} ms > ${num(sla.ttftMs)} ms`
        : r === 'tpot'
          ? `tpot ${num(m.tpotMs)} ms > ${num(sla.tpotMs)} ms`
          : `request latency ${num(m.requestLatencyMs)} ms > ${num(sla.requestLatencyMs ?? 0)} ms`,
    )
    .join(', ');
}

/** Best first: cluster tokens/s/gpu, then tokens/s/user, then fewer GPUs, then the name (stable output). */
export function compareCandidates(a: RankedCandidate, b: RankedCandidate): number {
  return (
    b.clusterTokPerSPerGpu - a.clusterTokPerSPerGpu ||
    b.estimate.metrics.tokPerSPerUser - a.estimate.metrics.tokPerSPerUser ||
    a.gpusUsed - b.gpusUsed ||
    (a.parallel < b.parallel ? -1 : a.parallel > b.parallel ? 1 : 0)
  );
}

/** The N best candidates meeting the SLA, keeping only the best row of each parallel layout. */
export function topPerLayout(feasible: RankedCandidate[], n: number): RankedCandidate[] {
  const sorted = [...feasible].sort(compareCandidates);
  const seen = new Set<string>();
  const out: RankedCandidate[] = [];
  for (const c of sorted) {
    if (seen.has(c.parallel)) continue;
    seen.add(c.parallel);
    out.push(c);
    if (out.length >= n) break;
  }
  return out;
}

/**
 * Non-dominated points of (tokens/s/user, cluster tokens/s/gpu), both maximized, sorted by tokens/s/user.
 * A point is kept unless another is at least as good on both axes and better on one.
 */
export function paretoFrontier(points: RankedCandidate[]): RankedCandidate[] {
  const sorted = [...points].sort(
    (a, b) =>
      b.estimate.metrics.tokPerSPerUser - a.estimate.metrics.tokPerSPerUser ||
      b.clusterTokPerSPerGpu - a.clusterTokPerSPerGpu ||
      compareCandidates(a, b),
  );
  const out: RankedCandidate[] = [];
  let bestY = -Infinity;
  for (const p of sorted) {
    if (p.clusterTokPerSPerGpu > bestY) {
      out.push(p);
      bestY = p.clusterTokPerSPerGpu;
    }
  }
  return out.reverse();
}

/** Nearest misses: the candidates closest to the SLA (smallest worst ratio), one per parallel layout. */
export function nearestMisses(
  misses: { c: RankedCandidate; ratio: number; worst: RemovalReason }[],
  n: number,
  describe: (c: RankedCandidate) => string,
): NearMiss[] {
  const sorted = [...misses].sort((a, b) => a.ratio - b.ratio || compareCandidates(a.c, b.c));
  const seen = new Set<string>();
  const out: NearMiss[] = [];
  for (const m of sorted) {
    if (seen.has(m.c.parallel)) continue;
    seen.add(m.c.parallel);
    out.push({ parallel: m.c.parallel, broke: m.worst, detail: describe(m.c) });
    if (out.length >= n) break;
  }
  return out;
}

const whole = (v: number): string => v.toFixed(0);

/** Which mode wins on the best cluster tokens/s/gpu, named the right way round. */
export function verdictOf(agg?: ModeResult, disagg?: ModeResult): Verdict {
  const best = (r?: ModeResult): number | undefined => r?.top[0]?.clusterTokPerSPerGpu;
  const a = best(agg);
  const d = best(disagg);
  if (a === undefined && d === undefined) {
    const searched = [agg, disagg].filter((r): r is ModeResult => r !== undefined).map((r) => r.mode);
    return { winner: 'none', text: `no ${searched.join(' or ')} configuration meets the SLA` };
  }
  if (a === undefined || d === undefined) {
    const winner: Mode = a !== undefined ? 'agg' : 'disagg';
    const loser: Mode = winner === 'agg' ? 'disagg' : 'agg';
    const value = (a ?? d) as number;
    const other = winner === 'agg' ? disagg : agg;
    const why = other === undefined ? `${loser} not searched` : `no ${loser} configuration meets the SLA`;
    return { winner, text: `${winner} wins: ${whole(value)} tokens/s/gpu (${why})` };
  }
  const [winner, w, l] = a >= d ? (['agg', a, d] as const) : (['disagg', d, a] as const);
  const ratio = l > 0 ? w / l : Infinity;
  if (whole(w) === whole(l)) {
    return { winner, text: `agg and disagg tie: ${whole(w)} tokens/s/gpu each`, ratio: 1 };
  }
  return { winner, text: `${winner} wins: ${whole(w)} vs ${whole(l)} tokens/s/gpu, ${ratio.toFixed(2)}x`, ratio };
}
