// `generate`: no sweep. The smallest layout that holds the model with room for the workload, predicted at
// the concurrency its KV cache can hold, wrapped as a one-candidate SearchResult so the usual writers apply.
import type { AggConfig, AggEstimate, EngineContext, MemoryPicture, ParallelLayout } from '../engine/types.js';
import type { Sla } from '../inputs/types.js';
import { NoFeasibleError } from '../util/errors.js';
import { gpusOf, isRefusal, type SearchEngine } from './port.js';
import { layoutName, maxTp, powersOfTwo } from './candidates.js';
import { slaBreaks } from './rank.js';
import type { ModeResult, RankedCandidate, SearchResult } from './types.js';
import { calibrationText } from './search.js';

/**
 * The headroom rule: a layout fits when, after weights, activations and the runtime reserve, its KV cache
 * holds at least this many full (isl + osl) sequences. Fewer would leave a deployment that queues at once.
 */
export const MIN_SEQUENCES = 16;
/** The batch per replica the prediction is made at never exceeds this (nor the engine's max-num-seqs). */
export const MAX_GENERATE_BATCH = 256;
/** Layouts larger than this many GPUs per instance are not tried. */
export const MAX_INSTANCE_GPUS = 64;

export type GenerateEngine = Pick<SearchEngine, 'memoryFor' | 'layoutRule' | 'estimateAgg' | 'defaultMaxNumTokens'>;

export interface LayoutTrial {
  parallel: string;
  gpus: number;
  /** Why it was passed over, or null for the chosen one. */
  rejected: string | null;
  maxSequences?: number;
}

export interface SmallestLayout {
  layout: ParallelLayout;
  memory: MemoryPicture;
  maxNumTokens: number;
  /** Every layout tried in order, with why the smaller ones were passed over. */
  trials: LayoutTrial[];
}

/** "tp2pp1", or for MoE "tp4pp1dp1etp1ep4" (the search's spelling). */
export function parallelName(ctx: EngineContext, l: ParallelLayout): string {
  return layoutName(l, ctx.model.moe !== undefined);
}

/**
 * Candidate shapes in the order generate tries them: tp 1, 2, 4, 8 (up to one node, 16 on NVL racks), then
 * pipeline stages of the largest tp. MoE experts go expert-parallel across the tp group when the expert
 * count divides, else tp.
 */
export function layoutOrder(ctx: EngineContext, maxGpus: number = MAX_INSTANCE_GPUS): ParallelLayout[][] {
  // The search's tp ceiling: one NVLink domain, at most 8 on HGX boxes and 16 on NVL racks.
  const tps = powersOfTwo(maxTp(ctx, maxGpus));
  const shapes: Array<{ tp: number; pp: number }> = tps.map((tp) => ({ tp, pp: 1 }));
  const fullTp = tps[tps.length - 1] ?? 1;
  for (let pp = 2; fullTp * pp <= maxGpus && pp <= ctx.model.numLayers; pp *= 2) shapes.push({ tp: fullTp, pp });
  return shapes.map(({ tp, pp }) => {
    const dense: ParallelLayout = { tp, pp, dp: 1, moeTp: tp, moeEp: 1 };
    const moe = ctx.model.moe;
    if (!moe || tp === 1) return [dense];
    const ep: ParallelLayout = { tp, pp, dp: 1, moeTp: 1, moeEp: tp };
    return moe.numExperts % tp === 0 ? [ep, dense] : [dense, ep];
  });
}

/**
 * The fewest-GPU layout that fits the weights with KV room for MIN_SEQUENCES full sequences.
 * Throws NoFeasibleError (exit 3) when nothing up to `maxGpus` fits, naming the largest layout tried.
 */
export function smallestLayout(engine: GenerateEngine, ctx: EngineContext, maxGpus: number = MAX_INSTANCE_GPUS): SmallestLayout {
  // The step token budget generate deploys with: the engine's default.
  const maxNumTokens = engine.defaultMaxNumTokens(ctx);
  const trials: LayoutTrial[] = [];
  for (const variants of layoutOrder(ctx, maxGpus)) {
    for (const layout of variants) {
      const parallel = parallelName(ctx, layout);
      const gpus = gpusOf(layout);
      const rule = engine.layoutRule(ctx, layout, 'agg');
      if (rule) {
        trials.push({ parallel, gpus, rejected: rule });
        continue;
      }
      const mem = engine.memoryFor(ctx, layout, maxNumTokens, 'agg');
      // Memory depends on how many GPUs share the weights, not on tp-vs-ep for experts: skip the other variant.
      if (isRefusal(mem)) {
        trials.push({ parallel, gpus, rejected: mem.reason });
        break;
      }
      if (mem.maxSequences < MIN_SEQUENCES) {
        const why = `KV cache holds ${Math.floor(mem.maxSequences)} sequences of ${ctx.workload.isl}+${ctx.workload.osl} tokens, fewer than ${MIN_SEQUENCES}`;
        trials.push({ parallel, gpus, rejected: why, maxSequences: mem.maxSequences });
        break;
      }
      trials.push({ parallel, gpus, rejected: null, maxSequences: mem.maxSequences });
      return { layout, memory: mem, maxNumTokens, trials };
    }
  }
  const last = trials[trials.length - 1];
  throw new NoFeasibleError(
    `no layout of up to ${maxGpus} GPUs holds ${ctx.model.id} with room for ${MIN_SEQUENCES} sequences of ${ctx.workload.isl}+${ctx.workload.osl} tokens` +
      (last ? ` (largest tried ${last.parallel}: ${last.rejected})` : ''),
    { trials },
  );
}

/** Largest power of two <= n (at least 1). */
function floorPow2(n: number): number {
  let v = 1;
  while (v * 2 <= n) v *= 2;
  return v;
}

/** The batch per replica generate predicts at: the largest power of two the KV cache holds, capped. */
export function generateBatch(memory: MemoryPicture, engineMaxBatch?: number): number {
  const cap = Math.min(MAX_GENERATE_BATCH, engineMaxBatch ?? MAX_GENERATE_BATCH);
  return floorPow2(Math.max(1, Math.min(Math.floor(memory.maxSequences), cap)));
}

export interface GenerateRequest {
  /** GPU budget; default: one instance of the chosen layout. */
  totalGpus?: number;
  sla: Sla;
  /** Optional cap on the engine's running sequences (backend default max-num-seqs). */
  engineMaxBatch?: number;
}

export interface GenerateResult {
  /** One-candidate result in the shape every writer understands. */
  result: SearchResult;
  candidate: RankedCandidate;
  chosen: SmallestLayout;
  batch: number;
  replicas: number;
}

/** Run generate: smallest layout, one prediction, a SearchResult around it. */
export function generate(engine: GenerateEngine, ctx: EngineContext, req: GenerateRequest): GenerateResult {
  const started = performance.now();
  const maxGpus = Math.min(MAX_INSTANCE_GPUS, req.totalGpus ?? MAX_INSTANCE_GPUS);
  const chosen = smallestLayout(engine, ctx, maxGpus);
  const gpus = gpusOf(chosen.layout);
  const totalGpus = req.totalGpus ?? gpus;
  const replicas = Math.max(1, Math.floor(totalGpus / gpus));
  let batch = generateBatch(chosen.memory, req.engineMaxBatch);
  let estimate: AggEstimate | undefined;
  // The KV picture already bounds the batch; halving only guards against an engine that refuses it anyway.
  for (; batch >= 1; batch = Math.floor(batch / 2)) {
    const config: AggConfig = { ...chosen.layout, batchSize: batch, maxNumTokens: chosen.maxNumTokens };
    // Every replica runs its full batch: `batch` clients each.
    const est = engine.estimateAgg(ctx, config, { concurrency: batch * replicas, replicas });
    if (!isRefusal(est)) {
      estimate = est;
      break;
    }
  }
  if (!estimate) {
    throw new NoFeasibleError(`the engine refuses every batch size on ${parallelName(ctx, chosen.layout)}`, { trials: chosen.trials });
  }
  const broke = slaBreaks(estimate.metrics, req.sla);
  const gpusUsed = replicas * gpus;
  const candidate: RankedCandidate = {
    estimate,
    parallel: parallelName(ctx, chosen.layout),
    gpusUsed,
    clusterTokPerSPerGpu: (estimate.metrics.tokPerSPerGpu * gpusUsed) / totalGpus,
    meetsSla: broke.length === 0,
    broke,
  };
  const agg: ModeResult = {
    mode: 'agg',
    evaluated: 1,
    feasible: broke.length === 0 ? 1 : 0,
    removed: { memory: 0, engine: 0, ttft: 0, tpot: 0, request_latency: 0 },
    top: [candidate],
    frontier: [candidate],
    nearMisses: [],
  };
  const result: SearchResult = {
    inputs: {
      model: ctx.model.id,
      system: ctx.system.name,
      backend: ctx.backend,
      version: ctx.version,
      totalGpus,
      workload: ctx.workload,
      sla: req.sla,
      calibratedOn: calibrationText(ctx),
      topN: 1,
    },
    agg,
    verdict: {
      winner: 'agg',
      text:
        `generate: smallest layout ${candidate.parallel} x${replicas} batch ${batch} per replica (no sweep)` +
        (broke.length ? `; breaks ${broke.join(', ')}` : '; meets the SLA'),
    },
    elapsedMs: performance.now() - started,
  };
  return { result, candidate, chosen, batch, replicas };
}
