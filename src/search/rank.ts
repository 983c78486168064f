// SLA checks, ranking, the Pareto frontier and the verdict: pure functions over evaluated candidates.
import type { Sla } from '../inputs/types.js';
import type { ServingMetrics } from '../engine/types.js';
import type { Mode, ModeResult, NearMiss, RankedCandidate, Relaxation, RemovalReason, Verdict } from './types.js';
import { num } from '../util/format.js';

/** The latencies SLA targets apply to. */
type Latencies = Pick<ServingMetrics, 'ttftMs' | 'tpotMs' | 'requestLatencyMs'>;

/** Every target a prediction breaks, in report order. */
export function slaBreaks(m: Latencies, sla: Sla): RemovalReason[] {
  const out: RemovalReason[] = [];
  if (!(m.ttftMs <= sla.ttftMs)) out.push('ttft');
  if (!(m.tpotMs <= sla.tpotMs)) out.push('tpot');
  if (sla.requestLatencyMs !== undefined && !(m.requestLatencyMs <= sla.requestLatencyMs)) out.push('request_latency');
  return out;
}

/** How far past its worst target a prediction is (1 = on target); used to order near misses. */
export function missRatio(m: Latencies, sla: Sla): { ratio: number; worst: RemovalReason } {
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


export function missDetail(m: Latencies, sla: Sla, broke: RemovalReason[]): string {
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

/**
 * How far a predicted throughput ratio of two layouts strays from the measured one, at the median of pairs run
 * in one sweep at one load (bench:ranking: agg vs disagg 32.9%, two layouts of one mode 10.5%). Two candidates
 * closer than this are a tie: the measurements would order them either way about as often.
 */
export const TIE_ACROSS_MODES = 0.33;
export const TIE_WITHIN_MODE = 0.1;

/** Which mode wins on the best cluster tokens/s/gpu, named the right way round; a tie when they are too close to call. */
export function verdictOf(agg?: ModeResult, disagg?: ModeResult): Verdict {
  const v = modeVerdict(agg, disagg);
  const notes = [...topTwoNote(v, agg, disagg), ...relaxNotes(agg, disagg)];
  return notes.length ? { ...v, notes } : v;
}

function modeVerdict(agg?: ModeResult, disagg?: ModeResult): Verdict {
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
    return { winner, text: `agg and disagg tie: ${whole(w)} tokens/s/gpu each`, ratio: 1, tie: true };
  }
  if (ratio < 1 + TIE_ACROSS_MODES) {
    const [first, second] = winner === 'agg' ? [agg!.top[0]!, disagg!.top[0]!] : [disagg!.top[0]!, agg!.top[0]!];
    return {
      winner,
      text:
        `agg and disagg tie within the prediction uncertainty (${Math.round(100 * TIE_ACROSS_MODES)}%): ${winner} ${first.parallel} ` +
        `${whole(w)} vs ${winner === 'agg' ? 'disagg' : 'agg'} ${second.parallel} ${whole(l)} tokens/s/gpu, ${ratio.toFixed(2)}x`,
      ratio,
      tie: true,
    };
  }
  return { winner, text: `${winner} wins: ${whole(w)} vs ${whole(l)} tokens/s/gpu, ${ratio.toFixed(2)}x`, ratio };
}

/** When the winning mode's two best layouts are closer than predictions of one mode can tell apart. */
function topTwoNote(v: Verdict, agg?: ModeResult, disagg?: ModeResult): string[] {
  if (v.winner === 'none' || v.tie) return [];
  const top = (v.winner === 'agg' ? agg : disagg)!.top;
  if (top.length < 2) return [];
  const [a, b] = [top[0]!.clusterTokPerSPerGpu, top[1]!.clusterTokPerSPerGpu];
  if (!(b > 0) || a / b >= 1 + TIE_WITHIN_MODE) return [];
  return [
    `${top[0]!.parallel} (${whole(a)}) and ${top[1]!.parallel} (${whole(b)} tokens/s/gpu) tie within the prediction uncertainty ` +
      `of two ${v.winner} layouts (${Math.round(100 * TIE_WITHIN_MODE)}%)`,
  ];
}

/** A target in three significant digits without trailing zeros (30, 37.5, 18.3). */
const shortMs = (v: number): string => String(Number(v.toPrecision(3)));

const TARGET_NAMES: Record<Relaxation['target'], string> = { ttft: 'TTFT', tpot: 'TPOT', request_latency: 'request latency' };

/** What relaxing each target buys over both modes, e.g. "TPOT 11 ms instead of 10: 1.21x tokens/s/gpu (5517 -> 6680)". */
export function relaxNotes(agg?: ModeResult, disagg?: ModeResult): string[] {
  const modes = [agg, disagg].filter((r): r is ModeResult => r !== undefined);
  const now = Math.max(0, ...modes.map((r) => r.top[0]?.clusterTokPerSPerGpu ?? 0));
  const byKey = new Map<string, Relaxation>();
  for (const r of modes) {
    for (const x of r.relaxed ?? []) {
      const k = `${x.target}|${x.factor}`;
      const seen = byKey.get(k);
      if (!seen || x.best > seen.best) byKey.set(k, x);
    }
  }
  const out: string[] = [];
  for (const x of byKey.values()) {
    const from = x.valueMs / x.factor;
    const head = `${TARGET_NAMES[x.target]} ${shortMs(x.valueMs)} ms instead of ${shortMs(from)} (+${Math.round(100 * (x.factor - 1))}%)`;
    if (now <= 0) out.push(x.best > 0 ? `${head}: ${whole(x.best)} tokens/s/gpu meet it` : `${head}: still nothing meets the SLA`);
    else if (x.best <= now * 1.005) out.push(`${head}: no gain`);
    else out.push(`${head}: ${(x.best / now).toFixed(2)}x tokens/s/gpu (${whole(now)} -> ${whole(x.best)})`);
  }
  return out;
}
