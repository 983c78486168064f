// Disaggregated serving: prefill pools x decode pools x worker counts (x prefill + y decode workers form one
// xPyD unit, replicated over the budget). Three stages: probe each pool alone for its capacity and latency;
// rate-match every worker split of every pool pair from those capacities; price the promising units
// exactly with the inference model (prefill queueing, KV transfer, the client loop).
import type { DisaggConfig, EngineContext, ParallelLayout, PoolConfig } from '../engine/types.js';
import type { ModeResult, SearchSpec } from './types.js';
import { isRefusal, type SearchEngine } from './port.js';
import { batchGrid, enumerateLayouts, gpusOf, layoutName, prefillBatches } from './candidates.js';
import { ModeCollector } from './collect.js';
import { walkBatches } from './walk.js';
import { confidenceOf, tpotAt } from './confidence.js';

/** aiconfigurator's caps on workers per pool in one unit. */
const MAX_WORKERS = 32;

interface PrefillOption {
  layout: ParallelLayout;
  name: string;
  gpus: number;
  batchSize: number;
  maxNumTokens: number;
}

interface DecodeOption {
  layout: ParallelLayout;
  name: string;
  gpus: number;
  maxNumTokens: number;
  grid: number[];
}

/** Workers given to the partner pool, and clients, when probing one pool's capacity alone. */
const PROBE_WORKERS = 1000;
const UNLIMITED = 1e7;
/** Prefill capacity over decode demand kept as headroom in the second split tried (queueing grows near 1). */
const HEADROOM = 1.25;
/** Pairs outside the pool frontiers that are still priced exactly, best rate-matched value first. */
const EXTRA_EXACT = 20;

interface PoolPoint<T> {
  option: T;
  gpus: number;
  /** Prefill: TTFT of a lone request; decode: TPOT at full batch. */
  latencyMs: number;
  /** Requests per second one worker sustains. */
  capacity: number;
}

/** Per GPU count, the pools that no other beats on both latency and capacity per GPU. */
export function poolFrontier<P extends { gpus: number; latencyMs: number; capacity: number }>(points: P[]): P[] {
  const out: P[] = [];
  const byGpus = new Map<number, P[]>();
  for (const p of points) {
    const list = byGpus.get(p.gpus) ?? [];
    list.push(p);
    byGpus.set(p.gpus, list);
  }
  for (const list of byGpus.values()) {
    list.sort((a, b) => a.latencyMs - b.latencyMs || b.capacity - a.capacity);
    let bestCap = -Infinity;
    for (const p of list) {
      if (p.capacity > bestCap) {
        out.push(p);
        bestCap = p.capacity;
      }
    }
  }
  return out;
}

/** Worker splits per (prefill GPUs, decode GPUs, budget): a small set, kept for the process. */
const pairMemo = new Map<number, [number, number][]>();
function workerPairsMemo(p: number, d: number, budget: number): [number, number][] {
  const key = (p * 4096 + d) * 4096 + budget;
  let v = pairMemo.get(key);
  if (!v) pairMemo.set(key, (v = workerPairs(p, d, budget)));
  return v;
}

/** The best min(x*cp, y*cd) * replicas over the splits (no allocation: the hot loop of rate matching). */
function bestSplitValue(cp: number, p: number, cd: number, d: number, budget: number, pairs: [number, number][], perGpu: boolean): number {
  let best = 0;
  for (let i = 0; i < pairs.length; i++) {
    const x = pairs[i][0];
    const y = pairs[i][1];
    const a = x * cp;
    const b = y * cd;
    const unit = x * p + y * d;
    const v = (a < b ? a : b) * (perGpu ? 1 / unit : Math.floor(budget / unit));
    if (v > best) best = v;
  }
  return best;
}

/**
 * Worker splits of one (prefill, decode) pair ranked by what the whole budget would deliver,
 * min(x*cp, y*cd) * replicas. Returns how many splits were scored and the best one, plus the best with
 * prefill headroom (lower TTFT under load).
 */
export function rateMatch(cp: number, p: number, cd: number, d: number, budget: number, perGpu = false): { scored: number; best: [number, number][]; value: number } {
  let scored = 0;
  let best: [number, number] | undefined;
  let bestVal = -Infinity;
  let roomy: [number, number] | undefined;
  let roomyVal = -Infinity;
  for (const [x, y] of workerPairsMemo(p, d, budget)) {
    scored++;
    const unit = x * p + y * d;
    const val = Math.min(x * cp, y * cd) * (perGpu ? 1 / unit : Math.floor(budget / unit));
    const tie = (v: number, cur: number, cand: [number, number] | undefined) => v > cur * (1 + 1e-9) || (cand !== undefined && v >= cur * (1 - 1e-9) && unit < cand[0] * p + cand[1] * d);
    if (tie(val, bestVal, best)) {
      bestVal = val;
      best = [x, y];
    }
    if (x * cp >= HEADROOM * y * cd && tie(val, roomyVal, roomy)) {
      roomyVal = val;
      roomy = [x, y];
    }
  }
  const out: [number, number][] = [];
  if (best) out.push(best);
  if (roomy && (!best || roomy[0] !== best[0] || roomy[1] !== best[1])) out.push(roomy);
  return { scored, best: out, value: Math.max(bestVal, 0) };
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/**
 * Worker counts (x, y) with x*P + y*D <= budget. Pairs with a common factor are the same deployment as
 * more replicas of the reduced pair, so only coprime pairs are tried.
 */
export function workerPairs(p: number, d: number, budget: number): [number, number][] {
  const out: [number, number][] = [];
  for (let x = 1; x <= MAX_WORKERS && x * p + d <= budget; x++) {
    for (let y = 1; y <= MAX_WORKERS && x * p + y * d <= budget; y++) {
      if (gcd(x, y) === 1) out.push([x, y]);
    }
  }
  return out;
}

function pool(layout: ParallelLayout, batchSize: number, maxNumTokens: number, workers: number): PoolConfig {
  return { ...layout, batchSize, maxNumTokens, workers };
}

export function searchDisagg(engine: SearchEngine, ctx: EngineContext, spec: SearchSpec): ModeResult {
  const col = new ModeCollector('disagg', spec.sla, spec.totalGpus);
  const moe = ctx.model.moe !== undefined;
  const { isl, osl } = ctx.workload;
  const budget = spec.totalGpus;
  if (budget < 2) return col.finish(spec.topN, spec.keepFeasible);
  const layouts = enumerateLayouts(ctx, budget - 1, spec.restrict);
  const fixedBatches = spec.restrict?.batch;
  const perGpu = spec.rateMatch === 'perGpu';
  const confidence = confidenceOf(spec.sla);

  const prefill: PrefillOption[] = [];
  for (const layout of layouts) {
    const name = layoutName(layout, moe);
    const gpus = gpusOf(layout);
    const rule = engine.layoutRule(ctx, layout, 'prefill');
    if (rule) {
      col.refuse('engine', `p:${name}`, rule, gpus);
      continue;
    }
    for (const batchSize of prefillBatches(isl)) {
      const maxNumTokens = Math.max(batchSize * isl, 1024);
      col.engineCalls++;
      const mem = engine.memoryFor(ctx, layout, maxNumTokens, 'prefill');
      if (isRefusal(mem)) {
        col.refuse(mem.constraint, `p:${name}`, mem.reason, gpus);
        break;
      }
      if (mem.maxSequences < batchSize) break;
      prefill.push({ layout, name, gpus, batchSize, maxNumTokens });
    }
  }

  const decode: DecodeOption[] = [];
  const decodeTokens = engine.defaultMaxNumTokens(ctx);
  for (const layout of layouts) {
    const name = layoutName(layout, moe);
    const gpus = gpusOf(layout);
    const rule = engine.layoutRule(ctx, layout, 'decode');
    if (rule) {
      col.refuse('engine', `d:${name}`, rule, gpus);
      continue;
    }
    col.engineCalls++;
    const mem = engine.memoryFor(ctx, layout, decodeTokens, 'decode');
    if (isRefusal(mem)) {
      col.refuse(mem.constraint, `d:${name}`, mem.reason, gpus);
      continue;
    }
    const grid = batchGrid(mem.maxSequences, fixedBatches, layout.dp);
    if (grid.length === 0) {
      col.refuse('memory', `d:${name}`, `no sequence of ${isl}+${osl} tokens fits in the KV cache`, gpus);
      continue;
    }
    decode.push({ layout, name, gpus, maxNumTokens: decodeTokens, grid });
  }

  // Probe every pool alone (its partner pool oversized, clients unlimited) for its capacity, then keep the
  // pools no other pool of the same GPU count beats on both latency and capacity per GPU.
  const pairRule = new Map<ParallelLayout, Map<ParallelLayout, string | null>>();
  const ruleOf = (pl: ParallelLayout, dl: ParallelLayout, pt: number, dt: number): string | null => {
    let inner = pairRule.get(pl);
    if (!inner) pairRule.set(pl, (inner = new Map()));
    let rule = inner.get(dl);
    if (rule === undefined) {
      rule = engine.disaggRule(ctx, { prefill: pool(pl, 1, pt, 1), decode: pool(dl, 1, dt, 1) });
      inner.set(dl, rule);
    }
    return rule;
  };
  const probe = (config: DisaggConfig, concurrency: number) => {
    col.engineCalls++;
    col.probes++;
    col.evaluated++;
    return engine.estimateDisagg(ctx, config, { concurrency });
  };

  // Prefill: one lone-request latency probe per layout (a lone prompt runs alone whatever the batch cap),
  // then one capacity probe per batch cap.
  const prefillPoints: PoolPoint<PrefillOption>[] = [];
  const latencyOf = new Map<ParallelLayout, number | null>();
  for (const p of prefill) {
    const partner = decode.find((d) => ruleOf(p.layout, d.layout, p.maxNumTokens, d.maxNumTokens) === null);
    if (!partner) continue;
    let latency = latencyOf.get(p.layout);
    if (latency === undefined) {
      const lat = probe({ prefill: pool(p.layout, 1, Math.max(isl, 1024), 1), decode: pool(partner.layout, 1, partner.maxNumTokens, 1) }, 1);
      latency = isRefusal(lat) ? null : lat.metrics.ttftMs;
      latencyOf.set(p.layout, latency);
      if (isRefusal(lat)) col.refuse(lat.constraint, `p:${p.name}`, lat.reason, p.gpus);
    }
    if (latency === null) continue;
    const dMax = partner.grid[partner.grid.length - 1];
    const cap = probe({ prefill: pool(p.layout, p.batchSize, p.maxNumTokens, 1), decode: pool(partner.layout, dMax, partner.maxNumTokens, PROBE_WORKERS) }, UNLIMITED);
    if (isRefusal(cap)) {
      col.refuse(cap.constraint, `p:${p.name}`, cap.reason, p.gpus);
      continue;
    }
    prefillPoints.push({ option: p, gpus: p.gpus, latencyMs: latency, capacity: cap.metrics.requestsPerS });
  }
  const decodePoints: (PoolPoint<DecodeOption> & { batchSize: number })[] = [];
  for (const d of decode) {
    const partner = prefill.find((p) => ruleOf(p.layout, d.layout, p.maxNumTokens, d.maxNumTokens) === null);
    if (!partner) continue;
    const walked: (PoolPoint<DecodeOption> & { batchSize: number })[] = [];
    const { edges } = walkBatches(
      d.grid,
      (bd) => {
        const est = probe({ prefill: pool(partner.layout, partner.batchSize, partner.maxNumTokens, PROBE_WORKERS), decode: pool(d.layout, bd, d.maxNumTokens, 1) }, UNLIMITED);
        if (isRefusal(est)) {
          col.refuse(est.constraint, `d:${d.name}`, est.reason, d.gpus);
          return null;
        }
        walked.push({ option: d, batchSize: bd, gpus: d.gpus, latencyMs: est.metrics.tpotMs, capacity: est.metrics.requestsPerS });
        // A decode pool alone decides TPOT, judged at the SLA's confidence as the priced units are.
        const tpot = tpotAt(est.metrics, est.bands, confidence);
        return { value: est.metrics.requestsPerS / d.gpus, meetsSla: tpot <= spec.sla.tpotMs, margin: tpot / spec.sla.tpotMs };
      },
      fixedBatches !== undefined,
      d.layout.dp,
    );
    // Off-grid sizes tried on the way to an SLA edge are not worth rate matching; the edge itself is.
    const onGrid = new Set([...d.grid, ...edges]);
    for (const w of walked) if (onGrid.has(w.batchSize)) decodePoints.push(w);
  }
  const prefillKept = new Set(poolFrontier(prefillPoints));
  const decodeKept = new Set(poolFrontier(decodePoints));

  // Rate matching: score every worker split of every probed (prefill, decode) pair from the pool
  // capacities. The exact model (queueing, KV transfer, the client loop) then prices the best split of each
  // pair whose pools are on their frontiers, plus the best-scoring pairs overall; when that split breaks
  // the TTFT (or request latency) target, also the best split with prefill headroom.
  const exact: { p: PoolPoint<PrefillOption>; d: PoolPoint<DecodeOption> & { batchSize: number }; splits: [number, number][]; value: number }[] = [];
  const extra: typeof exact = [];
  let extraFloor = -Infinity;
  for (const p of prefillPoints) {
    const pKept = prefillKept.has(p);
    for (const d of decodePoints) {
      if (p.gpus + d.gpus > budget) continue;
      if (ruleOf(p.option.layout, d.option.layout, p.option.maxNumTokens, d.option.maxNumTokens)) continue;
      const kept = pKept && decodeKept.has(d);
      const pairs = workerPairsMemo(p.gpus, d.gpus, budget);
      col.evaluated += pairs.length;
      col.screened += pairs.length;
      if (!kept && bestSplitValue(p.capacity, p.gpus, d.capacity, d.gpus, budget, pairs, perGpu) <= extraFloor) continue;
      const picks = rateMatch(p.capacity, p.gpus, d.capacity, d.gpus, budget, perGpu);
      const entry = { p, d, splits: picks.best, value: picks.value };
      if (kept) {
        exact.push(entry);
        continue;
      }
      extra.push(entry);
      if (extra.length >= 4 * EXTRA_EXACT) {
        extra.sort((a, b) => b.value - a.value);
        extra.length = EXTRA_EXACT;
        extraFloor = extra[EXTRA_EXACT - 1].value;
      }
    }
  }
  extra.sort((a, b) => b.value - a.value);
  exact.push(...extra.slice(0, EXTRA_EXACT));
  for (const { p, d, splits } of exact) {
    const parallel = `p:${p.option.name} d:${d.option.name}`;
    for (const [x, y] of splits) {
      const unitGpus = x * p.gpus + y * d.gpus;
      const replicas = Math.floor(budget / unitGpus);
      col.engineCalls++;
      const est = engine.estimateDisagg(ctx, {
        prefill: pool(p.option.layout, p.option.batchSize, p.option.maxNumTokens, x),
        decode: pool(d.option.layout, d.batchSize, d.option.maxNumTokens, y),
      });
      if (isRefusal(est)) {
        col.refuse(est.constraint, parallel, est.reason, unitGpus);
        continue;
      }
      const c = col.add(est, parallel, replicas, unitGpus);
      // The split with prefill headroom only helps when the best one queues past the TTFT target.
      if (c.meetsSla || !(c.broke ?? []).some((r) => r === 'ttft' || r === 'request_latency')) break;
    }
  }
  // Pairs the engine cannot run, counted once per layout pair.
  for (const [pl, inner] of pairRule) {
    for (const [dl, rule] of inner) {
      if (rule) col.refuse('engine', `p:${layoutName(pl, moe)} d:${layoutName(dl, moe)}`, rule, gpusOf(pl) + gpusOf(dl));
    }
  }
  return col.finish(spec.topN, spec.keepFeasible);
}
