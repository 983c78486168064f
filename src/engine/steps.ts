// Step latencies with the engine's host overheads, memoized per context so that a search over many layouts
// and batch sizes prices each distinct (layout, shape) once.
import type { PerfSource } from '../perf/types.js';
import { graphPaddedBatch, profileOf } from './backends.js';
import { stepCost, type StepCost, type StepShape } from './ops.js';
import { draftPrefillFactor } from './speculation.js';
import type { EngineContext, ParallelLayout } from './types.js';

const memo = new WeakMap<EngineContext, Map<string, StepCost>>();

function layoutKey(l: ParallelLayout): string {
  return `${l.tp},${l.pp},${l.dp},${l.moeTp},${l.moeEp}`;
}

/** Memoized raw compute+communication cost of one step (no host overhead). */
export function cachedStep(ctx: EngineContext, layout: ParallelLayout, shape: StepShape, perf: PerfSource = ctx.perf): StepCost {
  let m = memo.get(ctx);
  if (!m) memo.set(ctx, (m = new Map()));
  const key = `${perf === ctx.perf ? 'p' : 'd'}|${layoutKey(layout)}|${shape.pfBatch},${shape.pfSeq},${shape.pfPrefix},${shape.dcBatch},${shape.dcKv},${shape.dcQuery ?? 1}`;
  let v = m.get(key);
  if (!v) {
    v = stepCost(ctx, layout, shape, perf);
    m.set(key, v);
  }
  return v;
}

/**
 * Host time of one engine step with `running` sequences in the instance, ms (includes a user correction if
 * given). Each attention-dp rank runs a scheduler of its own over its share of the sequences, and a pipeline
 * step carries one micro-batch of them.
 */
export function hostOverheadMs(ctx: EngineContext, layout: Pick<ParallelLayout, 'pp' | 'dp'>, running: number): number {
  const p = profileOf(ctx);
  const perScheduler = Math.ceil(running / (layout.pp * layout.dp));
  return p.stepOverheadMs + p.perSeqOverheadMs * perScheduler + (ctx.correction?.stepOverheadMs ?? 0);
}

/**
 * A decode-only step of `batch` sequences at KV length `kv` (whole instance), each running `queries` tokens (a
 * speculative verify pass: 1 + draft). Batches that fit a captured CUDA graph are padded to the captured size
 * per dp rank.
 */
export function decodeStepMs(ctx: EngineContext, layout: ParallelLayout, batch: number, kv: number, perf?: PerfSource, queries = 1): number {
  const p = profileOf(ctx);
  const perRank = Math.ceil(batch / (layout.dp * layout.pp));
  const padded = graphPaddedBatch(p, perRank) * layout.dp;
  const c = cachedStep(ctx, layout, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: padded, dcKv: kv, dcQuery: queries }, perf);
  return c.ms * (ctx.correction?.decodeFactor ?? 1);
}

/**
 * A step that prefills `pfBatch` chunks of `pfSeq` tokens (after `pfPrefix` cached) while `dcBatch`
 * sequences decode. Returns the whole step and the prefill share (for TTFT and correction).
 */
export function mixedStepMs(
  ctx: EngineContext,
  layout: ParallelLayout,
  shape: StepShape,
  perf?: PerfSource,
): { ms: number; prefillMs: number } {
  const c = cachedStep(ctx, layout, shape, perf);
  const dec = shape.dcBatch > 0
    ? cachedStep(ctx, layout, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: shape.dcBatch, dcKv: shape.dcKv, dcQuery: shape.dcQuery }, perf).ms
    : 0;
  // Speculative decoding's draft layers run over the prompt too (their KV and the first draft).
  const pf = Math.max(0, c.ms - dec) * (ctx.correction?.prefillFactor ?? 1) * draftPrefillFactor(ctx);
  const d = dec * (ctx.correction?.decodeFactor ?? 1);
  return { ms: pf + d, prefillMs: pf };
}
