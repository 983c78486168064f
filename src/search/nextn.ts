// `--nextn auto`: the same search at several speculative draft depths, ranked together. Each depth is a search
// of its own context (speculation changes every step's price and the memory picture); the candidates carry their
// depth in their estimate (`estimate.speculation`), so merged rankings, frontiers and deployments keep it.
import type { EngineContext } from '../engine/types.js';
import type { ModeResult, RemovalReason, SearchResult } from './types.js';
import { compareCandidates, paretoFrontier, verdictOf } from './rank.js';

/** A candidate's identity across depths: its layout and its speculative setting. */
function candidateKey(c: ModeResult['top'][number]): string {
  const s = c.estimate.speculation;
  return `${c.parallel}|${s ? `${s.method}${s.draft}` : 'off'}`;
}

function mergeMode(results: (ModeResult | undefined)[], topN: number): ModeResult | undefined {
  const rs = results.filter((r): r is ModeResult => r !== undefined);
  if (rs.length === 0) return undefined;
  const removed = { ...rs[0]!.removed };
  for (const r of rs.slice(1)) for (const k of Object.keys(removed) as RemovalReason[]) removed[k] += r.removed[k];
  const seen = new Set<string>();
  const top = rs.flatMap((r) => r.top).sort(compareCandidates).filter((c) => !seen.has(candidateKey(c)) && seen.add(candidateKey(c))).slice(0, topN);
  const merged: ModeResult = {
    mode: rs[0]!.mode,
    evaluated: rs.reduce((a, r) => a + r.evaluated, 0),
    feasible: rs.reduce((a, r) => a + r.feasible, 0),
    removed,
    top,
    frontier: paretoFrontier(rs.flatMap((r) => r.frontier)),
    nearMisses: rs.flatMap((r) => r.nearMisses).slice(0, rs[0]!.nearMisses.length),
  };
  if (rs.every((r) => r.counters)) {
    merged.counters = {
      engineCalls: rs.reduce((a, r) => a + r.counters!.engineCalls, 0),
      elapsedMs: rs.reduce((a, r) => a + r.counters!.elapsedMs, 0),
      ...(rs.some((r) => r.counters!.screened !== undefined) && { screened: rs.reduce((a, r) => a + (r.counters!.screened ?? 0), 0) }),
    };
  }
  if (rs.some((r) => r.feasibleAll)) merged.feasibleAll = rs.flatMap((r) => r.feasibleAll ?? []);
  // What relaxing a target buys: the best over every depth at each relaxed target.
  const relaxed = new Map<string, NonNullable<ModeResult['relaxed']>[number]>();
  for (const x of rs.flatMap((r) => r.relaxed ?? [])) {
    const k = `${x.target}|${x.factor}`;
    const had = relaxed.get(k);
    if (!had || x.best > had.best) relaxed.set(k, x);
  }
  if (relaxed.size > 0) merged.relaxed = [...relaxed.values()];
  return merged;
}

/**
 * Search `contexts` (one per draft depth, the first without speculation) and rank every candidate together:
 * the top N of all depths, the frontier of all points, counts summed.
 */
export function searchDepths(contexts: EngineContext[], search: (ctx: EngineContext) => SearchResult, topN: number): SearchResult {
  const results = contexts.map(search);
  const first = results[0]!;
  if (results.length === 1) return first;
  const agg = mergeMode(results.map((r) => r.agg), topN);
  const disagg = mergeMode(results.map((r) => r.disagg), topN);
  return {
    inputs: first.inputs,
    agg,
    disagg,
    verdict: verdictOf(agg, disagg),
    elapsedMs: results.reduce((a, r) => a + r.elapsedMs, 0),
    ...(results.every((r) => r.cpuMs !== undefined) && { cpuMs: results.reduce((a, r) => a + r.cpuMs!, 0) }),
  };
}
