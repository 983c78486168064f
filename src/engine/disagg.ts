// Disaggregated serving: a prefill pool and a decode pool, the KV cache moved between them.
// TTFT = request overhead + handoff + the decode rank's streams + prefill queueing + prefill + KV transfer +
// joining the decode batch;
// TPOT from the decode pool at its running batch; throughput bounded by the slower pool and the clients.
import type { PerfSource } from '../perf/types.js';
import { BENCH_ROUNDS, burstMeanSteps, sumTtftParts } from './agg.js';
import { kvBytesPerToken, memoryPicture } from './memory.js';
import { layoutRule } from './rules.js';
import { acceptedPerStep, decodeTpotMs, draftPrefillFactor } from './speculation.js';
import { profileOf, streamTtftMs } from './backends.js';
import { hostOverheadMs, mixedStepMs } from './steps.js';
import type { DisaggConfig, EngineContext, MemoryPicture, PoolConfig, Refusal, TtftParts } from './types.js';

/**
 * Fixed time a disaggregated request spends beyond an aggregated one's: Dynamo's front-end routes it to a prefill
 * worker, it enters a second engine on the decode worker, and the KV handoff is booked on both sides (fitted on
 * the disagg rows, every engine; docs/engine.md).
 */
export const DISAGG_HANDOFF_MS = 40;

export interface DisaggPoint {
  ttftMs: number;
  tpotMs: number;
  requestLatencyMs: number;
  requestsPerS: number;
  kvTransferMs: number;
  prefillMs: number;
  prefillQueueMs: number;
  decodeRunning: number;
  /** Where the mean TTFT goes. */
  ttftParts: TtftParts;
  /** Which pool limits throughput at this concurrency. */
  bound: 'prefill' | 'decode' | 'clients';
}

export function gpusOfPool(p: PoolConfig): number {
  return p.tp * p.pp * p.dp;
}

/** Seconds-free helper: KV bytes one prefill GPU sends for one prompt, and the transfer time. */
export function kvTransferMs(ctx: EngineContext, cfg: DisaggConfig): number {
  const { isl } = ctx.workload;
  const kv = kvBytesPerToken(ctx, cfg.prefill);
  // The draft layers' KV (MTP, EAGLE-3) moves with the main model's.
  // Linear-attention layers hand over their fixed recurrent state with the KV.
  const perGpu = kv.full * isl * draftPrefillFactor(ctx) + kv.sliding * Math.min(isl, kv.window || isl) + kv.fixed;
  const total = gpusOfPool(cfg.prefill) * cfg.prefill.workers + gpusOfPool(cfg.decode) * cfg.decode.workers;
  const hetero = ctx.decodeSystem !== undefined && ctx.decodeSystem.name !== ctx.system.name;
  const cross = hetero || total > ctx.system.gpusPerNode;
  return ctx.perf.p2p(perGpu, cross);
}

export function disaggMemory(ctx: EngineContext, cfg: DisaggConfig): { prefill: MemoryPicture | Refusal; decode: MemoryPicture | Refusal } {
  const seq = ctx.workload.isl + ctx.workload.osl;
  const pfTokens = Math.max(cfg.prefill.maxNumTokens, ctx.workload.isl);
  return {
    prefill: memoryPicture(ctx, cfg.prefill, pfTokens, ctx.workload.isl + 1),
    decode: memoryPicture(ctx, cfg.decode, Math.max(cfg.decode.batchSize, 256), seq, ctx.decodeSystem ?? ctx.system),
  };
}

/** One prefill step of `g` prompts (chunked when they exceed the token budget): latency, ms. */
function prefillBatchMs(ctx: EngineContext, p: PoolConfig, g: number): { ms: number; chunks: number } {
  const { isl, prefix } = ctx.workload;
  const isle = Math.max(1, isl - prefix);
  const budget = Math.max(1, p.maxNumTokens) * p.dp;
  const chunks = Math.max(1, Math.ceil((g * isle) / Math.max(budget, isle)), Math.ceil(isle / budget));
  const per = Math.ceil(g / p.pp);
  const chunk = Math.min(isle, Math.ceil((per * isle) / chunks));
  const rows = Math.max(1, Math.ceil(per / chunks));
  const seq = rows > 1 ? isle : chunk;
  // Later chunks of one long prompt attend to the earlier ones: price the mean chunk.
  const pfPrefix = rows === 1 && chunks > 1 ? prefix + Math.round(((chunks - 1) / 2) * chunk) : prefix;
  const step = mixedStepMs(ctx, p, { pfBatch: rows, pfSeq: seq, pfPrefix, dcBatch: 0, dcKv: 0 });
  return { ms: chunks * (step.ms + hostOverheadMs(ctx, p, Math.ceil(g / chunks))), chunks };
}

/**
 * Prompts one prefill step can take: the engine packs every waiting prompt into a step up to its token
 * budget on each attention-dp rank (a recorded prefill batch size of 1 is the planner's convention, not
 * an engine limit), and at least the recorded batch.
 */
export function prefillBatchCap(ctx: EngineContext, p: PoolConfig): number {
  const isle = Math.max(1, ctx.workload.isl - ctx.workload.prefix);
  const perRank = Math.max(1, Math.floor(Math.max(1, p.maxNumTokens) / isle));
  return Math.max(1, p.batchSize, perRank * p.dp * p.pp);
}

/**
 * A recorded MoE layout whose tensor-parallel width cannot split the attention heads, or spans more than
 * one 8-GPU board, ran its attention data parallel (wide expert parallelism): engines shard attention by
 * heads only within a board, so such a record names the GPUs of the expert-parallel group.
 */
export function wideEpLayout<T extends PoolConfig>(ctx: EngineContext, p: T): T {
  if (!ctx.model.moe || p.dp > 1 || p.tp <= 1) return p;
  if (ctx.model.numHeads % p.tp === 0 && p.tp <= 8) return p;
  const wide = { ...p, dp: p.tp, tp: 1 };
  // Experts split by tensor parallelism over more than a board would leave each GPU a sliver of every
  // expert; such deployments place whole experts per GPU (expert parallelism, redundant slots as needed).
  if (p.moeEp === 1 && p.moeTp > 8) Object.assign(wide, { moeTp: 1, moeEp: p.moeTp });
  // Keep a runnable record when the engine could not run it data parallel.
  return layoutRule(ctx, wide, 'decode') !== null && layoutRule(ctx, p, 'decode') === null ? p : wide;
}

/**
 * Running sequences a decode rank is given in the engines' disaggregated serving recipes (max_batch_size /
 * max-running-requests with CUDA graphs captured up to it); used only where a record leaves the workers out.
 */
export const RECIPE_DECODE_BATCH_PER_RANK = 256;

/**
 * Worker counts of a deployment whose record leaves them blank (measured sweeps resize the deployment to
 * the concurrency): enough decode workers to hold every client within KV memory and the recipes' batch per
 * rank, and enough prefill workers to feed them at the decode pool's pace. Recorded counts are the minimum.
 */
export function sizeUnrecordedPools(ctx: EngineContext, cfg: DisaggConfig, clients: number): DisaggConfig {
  const mem = disaggMemory(ctx, cfg);
  if ('refused' in mem.decode || 'refused' in mem.prefill) return cfg;
  const { isl, osl } = ctx.workload;
  const slots = Math.max(1, Math.min(mem.decode.maxSequences, RECIPE_DECODE_BATCH_PER_RANK * cfg.decode.dp * cfg.decode.pp));
  const dWorkers = Math.max(cfg.decode.workers, Math.ceil(clients / slots));
  const batch = Math.max(1, Math.ceil(clients / dWorkers));
  const decode: PoolConfig = { ...cfg.decode, workers: dWorkers, batchSize: batch };
  const tpot = decodeTpotMs(ctx, decode, batch, isl + Math.floor(osl / 2), ctx.decodePerf);
  const demand = clients / (Math.max(1, osl - 1) * tpot); // requests per ms the decode pool completes
  const g = prefillBatchCap(ctx, cfg.prefill);
  const perWorker = g / prefillBatchMs(ctx, cfg.prefill, g).ms;
  let out: DisaggConfig = { prefill: { ...cfg.prefill, workers: Math.max(cfg.prefill.workers, Math.ceil(demand / perWorker)) }, decode };
  // A lighter decode batch speeds decoding up and raises the demand: add workers until prefill keeps up.
  const sized = disaggMemory(ctx, out);
  if ('refused' in sized.prefill || 'refused' in sized.decode) return out;
  const mems = { prefill: sized.prefill, decode: sized.decode };
  for (let i = 0; i < 16 && disaggPoint(ctx, out, clients, mems).bound === 'prefill'; i++) {
    out = { ...out, prefill: { ...out.prefill, workers: out.prefill.workers + 1 } };
  }
  return out;
}

export function disaggPoint(ctx: EngineContext, cfg: DisaggConfig, clients: number, mem: { prefill: MemoryPicture; decode: MemoryPicture }): DisaggPoint {
  const prof = profileOf(ctx);
  const { isl, osl } = ctx.workload;
  const D = Math.max(1, osl - 1);
  const { prefill: P, decode: Dp } = cfg;
  const decodePerf: PerfSource | undefined = ctx.decodePerf;
  const nMax = Math.max(1, Math.min(Dp.batchSize, mem.decode.maxSequences));
  const kvMid = isl + Math.floor(osl / 2);
  const transfer = kvTransferMs(ctx, cfg);
  const gMax = prefillBatchCap(ctx, P);
  const full = prefillBatchMs(ctx, P, gMax);
  const prefillCap = (P.workers * gMax) / full.ms; // requests per ms
  const single = prefillBatchMs(ctx, P, 1).ms;
  // Prefill step of g prompts on one worker, memoized (single and full steps already priced).
  const pfMemo = new Map<number, number>([[1, single], [gMax, full.ms]]);
  const prefillAt = (g: number): number => {
    let v = pfMemo.get(g);
    if (v === undefined) pfMemo.set(g, (v = prefillBatchMs(ctx, P, g).ms));
    return v;
  };
  // The first round's burst: each worker's share of the clients, gMax prompts to a step (fewer when they are fewer).
  const perWorkerBurst = Math.ceil(clients / P.workers);
  const gBurst = Math.min(gMax, perWorkerBurst);
  const burst = burstMeanSteps(perWorkerBurst, 1 / gBurst) * prefillAt(gBurst);

  const stepTokens = 1 + (ctx.speculation ? acceptedPerStep(ctx.speculation) : 0);
  const tpotMemo = new Map<number, number>();
  const tpotAt = (running: number): number => {
    let v = tpotMemo.get(running);
    if (v === undefined) {
      v = decodeTpotMs(ctx, Dp, running, kvMid, decodePerf);
      tpotMemo.set(running, v);
    }
    return v;
  };
  // The pair at an assumed request rate (requests per ms): decode batch and prefill queueing follow from it.
  const at = (rate: number): DisaggPoint & { rate: number } => {
    // Little's law on a decode worker: running = rate x time in decode, where the time grows with running.
    // running / (rate x D x tpot(running)) rises with running, so the fixed point is found by bisection.
    const inDecode = (r: number): number => (rate * D * tpotAt(r)) / Dp.workers;
    let running = nMax;
    if (inDecode(nMax) < nMax) {
      let lo = 1;
      let hi = nMax;
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if (inDecode(mid) >= mid) lo = mid;
        else hi = mid;
      }
      running = lo;
    }
    const tpot = tpotAt(running);
    // Decode slots bound the rate only when there are more clients than slots.
    const decodeCap = clients <= Dp.workers * nMax ? Infinity : (Dp.workers * nMax) / (D * tpotAt(nMax));
    // Prefill batch grows with load: prompts waiting while a step runs join the next one, and a bigger step
    // takes longer, so more wait for the step after it (fixed point, from the single-prompt step up).
    const perWorker = rate / P.workers;
    let g = Math.max(1, Math.min(gMax, Math.ceil(perWorker * single)));
    for (let i = 0; i < 8; i++) {
      const next = Math.max(1, Math.min(gMax, Math.ceil(perWorker * prefillAt(g))));
      if (next <= g) break;
      g = next;
    }
    const pf = prefillAt(g);
    const rho = Math.min(0.95, perWorker * (pf / g));
    const pQueue = (rho / (2 * (1 - rho))) * pf;
    // The first round arrives as one burst of every client's prompt and drains through the prefill pool.
    const burstShare = Math.max(0, burst - (pQueue + pf)) / BENCH_ROUNDS;
    // The transferred request joins the decode batch at the next step boundary (half a step on average) and
    // its first token leaves with that step; a speculative step yields several tokens, so it lasts longer.
    const parts: TtftParts = {
      request: prof.requestOverheadMs + DISAGG_HANDOFF_MS + streamTtftMs(prof, running, Dp.dp),
      stepInFlight: 0, slotQueue: 0, engineQueue: pQueue, balance: 0, burst: burstShare, prefill: pf, kvTransfer: transfer,
      handout: 1.5 * tpot * stepTokens,
    };
    const ttftBase = sumTtftParts(parts);
    const cycle = ttftBase + D * tpot;
    const clientRate = clients / cycle;
    const newRate = Math.min(clientRate, prefillCap, decodeCap);
    const bound: DisaggPoint['bound'] = newRate === clientRate ? 'clients' : newRate === prefillCap ? 'prefill' : 'decode';
    const queue = Math.max(0, clients / newRate - cycle);
    return {
      rate: newRate,
      ttftMs: ttftBase + queue,
      tpotMs: tpot,
      requestLatencyMs: ttftBase + queue + D * tpot,
      requestsPerS: newRate * 1000,
      kvTransferMs: transfer,
      prefillMs: pf,
      prefillQueueMs: pQueue + queue,
      decodeRunning: running,
      bound,
      ttftParts: { ...parts, slotQueue: queue },
    };
  };
  // The achieved rate falls as the assumed rate rises (bigger batches, longer queues): bisect the fixed point.
  let lo = 0;
  let hi = Math.min(prefillCap, (clients / (single + transfer + D * tpotAt(1))) * 1.0001 + 1e-12);
  let out = at(hi);
  if (out.rate < hi) {
    for (let i = 0; i < 30 && hi - lo > 1e-4 * hi; i++) {
      const mid = (lo + hi) / 2;
      const r = at(mid);
      if (r.rate >= mid) lo = mid;
      else hi = mid;
    }
    out = at(lo > 0 ? lo : hi);
  }
  const { rate: _rate, ...point } = out;
  return point;
}
