// Load matching: the fewest GPUs (and the layout) that serve a target request rate or concurrency under the
// SLA. One search prices every replica unit (an agg instance or a disagg xPyD unit) up to a unit budget;
// each unit that meets the SLA is then replicated until it carries the target.
import type { Sla } from '../inputs/types.js';
import type { EngineContext } from '../engine/types.js';
import type { Mode, RankedCandidate, SearchRestrict, SearchResult } from './types.js';
import { isRefusal, type SearchEngine } from './port.js';
import { runSearchWith } from './search.js';
import { InputError } from '../util/errors.js';
import { MAX_DEPLOYMENT_GPUS } from './limits.js';

export type LoadTarget = { kind: 'rate'; requestsPerS: number } | { kind: 'concurrency'; clients: number };

export interface RecommendSpec {
  target: LoadTarget;
  sla: Sla;
  /** Largest deployment allowed; also caps the unit search. */
  maxGpus?: number;
  topN: number;
  modes: Mode[];
  restrict?: SearchRestrict;
}

export interface Recommendation {
  mode: Mode;
  parallel: string;
  /** GPUs of one replica unit (agg instance or xPyD unit). */
  unitGpus: number;
  /** What one unit serves within the SLA. */
  unitRequestsPerS: number;
  unitConcurrency: number;
  replicas: number;
  gpus: number;
  /** Load served over the target (>= 1 when the target is met). */
  share: number;
  /** The deployment as a ranked candidate over its own GPUs (agg re-priced with `replicas` replicas). */
  candidate: RankedCandidate;
}

export interface RecommendResult {
  target: LoadTarget;
  maxGpus?: number;
  best?: Recommendation;
  agg: Recommendation[];
  disagg: Recommendation[];
  /** GPU budget of the unit search (units up to this size were priced). */
  unitBudget: number;
  /** The unit search (counts, frontier, and the explanation when no unit meets the SLA). */
  search: SearchResult;
  elapsedMs: number;
}

/** Largest unit searched when no smaller one meets the SLA. */
const MAX_UNIT_BUDGET = 128;

function targetValue(t: LoadTarget): number {
  return t.kind === 'rate' ? t.requestsPerS : t.clients;
}

function unitOf(c: RankedCandidate): { gpus: number; rate: number; concurrency: number } {
  const e = c.estimate;
  const copies = Math.max(1, e.replicas);
  return { gpus: e.metrics.gpus / copies, rate: e.metrics.requestsPerS / copies, concurrency: e.metrics.concurrency / copies };
}

/** Target met first; then fewest GPUs, more tokens/s/gpu, more headroom. Short of the target: largest share. */
export function compareRecommendations(a: Recommendation, b: Recommendation): number {
  const am = a.share >= 1 - 1e-9;
  const bm = b.share >= 1 - 1e-9;
  if (am !== bm) return am ? -1 : 1;
  if (!am) return b.share - a.share || a.gpus - b.gpus;
  return (
    a.gpus - b.gpus ||
    b.candidate.estimate.metrics.tokPerSPerGpu - a.candidate.estimate.metrics.tokPerSPerGpu ||
    b.share - a.share ||
    (a.parallel < b.parallel ? -1 : a.parallel > b.parallel ? 1 : 0)
  );
}

/** Replicate one SLA-meeting unit to the target (or to maxGpus). Null when not even one unit fits maxGpus. */
export function matchLoad(c: RankedCandidate, target: LoadTarget, maxGpus?: number): Omit<Recommendation, 'candidate'> & { unit: RankedCandidate } | null {
  const u = unitOf(c);
  const per = target.kind === 'rate' ? u.rate : u.concurrency;
  if (!(per > 0)) return null;
  const want = targetValue(target);
  let replicas = Math.max(1, Math.ceil(want / per - 1e-9));
  if (maxGpus !== undefined) replicas = Math.min(replicas, Math.floor(maxGpus / u.gpus));
  if (replicas < 1) return null;
  return {
    mode: c.estimate.mode,
    parallel: c.parallel,
    unitGpus: u.gpus,
    unitRequestsPerS: u.rate,
    unitConcurrency: u.concurrency,
    replicas,
    gpus: replicas * u.gpus,
    share: (replicas * per) / want,
    unit: c,
  };
}

/** The deployment of `replicas` units as a candidate over exactly its GPUs (agg re-priced by the model). */
function deploy(engine: SearchEngine, ctx: EngineContext, r: Omit<Recommendation, 'candidate'> & { unit: RankedCandidate }): RankedCandidate {
  const e = r.unit.estimate;
  if (e.mode === 'agg') {
    const again = engine.estimateAgg(ctx, e.config, { replicas: r.replicas });
    const est = isRefusal(again) ? e : again;
    return { ...r.unit, estimate: est, gpusUsed: r.gpus, replicas: r.replicas, clusterTokPerSPerGpu: est.metrics.tokPerSPerGpu };
  }
  return { ...r.unit, gpusUsed: r.gpus, replicas: r.replicas, clusterTokPerSPerGpu: e.metrics.tokPerSPerGpu };
}

export function recommendWith(engine: SearchEngine, ctx: EngineContext, spec: RecommendSpec): RecommendResult {
  const started = performance.now();
  const cap = Math.min(spec.maxGpus ?? MAX_UNIT_BUDGET, MAX_UNIT_BUDGET);
  let unitBudget = Math.min(cap, Math.max(1, 2 * ctx.system.gpusPerNode));
  let search: SearchResult;
  // Grow the unit budget until some unit meets the SLA (large models need multi-node units).
  for (;;) {
    search = runSearchWith(engine, ctx, { totalGpus: unitBudget, sla: spec.sla, topN: spec.topN, modes: spec.modes, restrict: spec.restrict, keepFeasible: true, rateMatch: 'perGpu' });
    const any = (search.agg?.feasible ?? 0) + (search.disagg?.feasible ?? 0) > 0;
    if (any || unitBudget >= cap) break;
    unitBudget = Math.min(cap, unitBudget * 2);
  }
  const perMode = (m: Mode): Recommendation[] => {
    const res = m === 'agg' ? search.agg : search.disagg;
    const matched = (res?.feasibleAll ?? [])
      .map((c) => matchLoad(c, spec.target, spec.maxGpus))
      .filter((r): r is NonNullable<typeof r> => r !== null)
      .map((r) => ({ ...r, candidate: r.unit }));
    matched.sort(compareRecommendations);
    const seen = new Set<string>();
    const out: Recommendation[] = [];
    for (const r of matched) {
      if (seen.has(r.parallel)) continue;
      seen.add(r.parallel);
      const { unit: _unit, ...rest } = r;
      out.push({ ...rest, candidate: deploy(engine, ctx, r) });
      if (out.length >= spec.topN) break;
    }
    return out;
  };
  const agg = spec.modes.includes('agg') ? perMode('agg') : [];
  const disagg = spec.modes.includes('disagg') ? perMode('disagg') : [];
  const best = [...agg.slice(0, 1), ...disagg.slice(0, 1)].sort(compareRecommendations)[0];
  if (best && spec.maxGpus === undefined && best.gpus > MAX_DEPLOYMENT_GPUS) {
    const what = spec.target.kind === 'rate' ? `--target-request-rate ${spec.target.requestsPerS}` : `--target-concurrency ${spec.target.clients}`;
    throw new InputError(
      `${what} needs ${best.gpus} GPUs (${best.replicas} x ${best.mode} ${best.parallel}), more than the ${MAX_DEPLOYMENT_GPUS} inferplan plans; lower the target, or give --max-gpus to plan the share that many GPUs serve`,
    );
  }
  // Unit frontiers and feasible lists are not needed past this point.
  for (const m of [search.agg, search.disagg]) if (m) delete m.feasibleAll;
  return { target: spec.target, maxGpus: spec.maxGpus, best, agg, disagg, unitBudget, search, elapsedMs: performance.now() - started };
}
