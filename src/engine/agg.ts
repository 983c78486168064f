// Aggregated serving at a concurrency: continuous batching with a token budget, chunked prefill riding on
// decode steps, and a closed loop of clients (each sends its next request when the last one ends).
//
// Steady state of one replica with n running sequences (n = min(clients, max-num-seqs, what the KV cache
// holds)): every request lives D = osl-1 decode iterations plus k prefill iterations (k chunks). New prompts
// are packed g to a step up to the token budget, so N_mix = n*k/g of the iterations in one request
// lifetime carry prefill work. When N_mix exceeds the lifetime the engine is prefill-bound and requests
// wait in its queue. Clients beyond n wait for a free slot (Little's law on the closed loop).
import { memoryPicture } from './memory.js';
import { profileOf, streamTtftMs, type BackendProfile } from './backends.js';
import { hostOverheadMs, mixedStepMs } from './steps.js';
import { speculationOf, speculativeDecodeStepMs } from './speculation.js';
import type { AggConfig, EngineContext, MemoryPicture, TtftParts } from './types.js';

export interface AggPoint {
  ttftMs: number;
  tpotMs: number;
  requestLatencyMs: number;
  /** Requests per second of one replica. */
  requestsPerS: number;
  /** Running sequences per replica. */
  running: number;
  /** Where the mean TTFT goes. */
  ttftParts: TtftParts;
  /** Mean step times, ms. */
  decodeStepMs: number;
  mixedStepMs: number;
}

/**
 * Requests each client sends in one benchmark run (AIPerf request-count = 10 x concurrency). The first round
 * starts as one burst, so its prompts queue behind each other; later rounds arrive staggered.
 */
export const BENCH_ROUNDS = 10;

/** Mean step at which a burst of n prompts is done, when prompt i is done at step ceil(i x stepsPerPrompt). */
export function burstMeanSteps(n: number, stepsPerPrompt: number): number {
  const g = Math.round(1 / stepsPerPrompt);
  if (g >= 1 && Math.abs(g * stepsPerPrompt - 1) < 1e-9) {
    // g whole prompts to a step: q full steps and r prompts in the last (a sweep asks this for thousands of clients).
    const q = Math.floor(n / g);
    const r = n - q * g;
    return ((g * q * (q + 1)) / 2 + r * (q + 1)) / Math.max(1, n);
  }
  let sum = 0;
  // The epsilon keeps exact multiples (i x 1/3 for i = 3) from rounding up a step.
  for (let i = 1; i <= n; i++) sum += Math.ceil(i * stepsPerPrompt - 1e-9);
  return sum / Math.max(1, n);
}

/**
 * TRT-LLM's attention-DP balancing (attention_dp_config.enable_balance, which its recipes and our engine config
 * set) holds new prompts until every rank has one, or until `timeout_iters` steps have passed since the last
 * release: prompts arriving faster than the ranks fill wait for (dp-1)/2 more arrivals, slower ones for half the
 * timeout. A rank left without decoding work releases at once, so ranks that serve one stream each hardly wait.
 */
export function adpBalanceWaitMs(prof: BackendProfile, dp: number, running: number, ratePerMs: number, stepMs: number): number {
  const timeoutIters = prof.adpBalanceTimeoutIters ?? 0;
  if (timeoutIters === 0 || dp <= 1 || ratePerMs <= 0) return 0;
  const busyShare = Math.min(1, Math.max(0, running / dp - 1));
  return busyShare * Math.min((timeoutIters * stepMs) / 2, (dp - 1) / (2 * ratePerMs));
}

/** The mean TTFT its parts make up. */
export function sumTtftParts(p: TtftParts): number {
  return p.request + p.slotQueue + p.balance + p.stepInFlight + p.engineQueue + p.burst + p.prefill + p.kvTransfer + p.handout;
}

/** Sequences that can run at once: KV allocated on demand holds sequences at their mean length. */
export function runningCapacity(ctx: EngineContext, mem: MemoryPicture): number {
  const { isl, osl } = ctx.workload;
  if (!profileOf(ctx).kvOnDemand) return mem.maxSequences;
  return Math.max(mem.maxSequences, Math.floor((mem.maxSequences * (isl + osl)) / (isl + osl / 2)));
}

/** Serving metrics of one replica at `clients` concurrent clients. */
export function aggPoint(ctx: EngineContext, cfg: AggConfig, clients: number, mem: MemoryPicture): AggPoint {
  const prof = profileOf(ctx);
  const { isl, osl, prefix } = ctx.workload;
  const isle = Math.max(1, isl - prefix);
  const outTok = Math.max(1, osl - 1);
  // With speculative decoding (MTP) every decode step verifies `draft` extra tokens per sequence and
  // emits `perStep` tokens on average, so a request needs fewer, heavier steps.
  const spec = speculationOf(ctx);
  const D = Math.max(1, Math.ceil(outTok / spec.perStep));
  const pp = cfg.pp;
  const n = Math.max(1, Math.min(clients, cfg.batchSize, runningCapacity(ctx, mem)));
  const kvMid = isl + Math.floor(osl / 2);
  const micro = (x: number) => Math.ceil(x / pp);
  const host = hostOverheadMs(ctx, cfg, n);
  const tokPerSeq = 1 + spec.draft;
  const tDec = speculativeDecodeStepMs(ctx, cfg, n, kvMid);

  // Token budget per step across the instance (each attention-dp rank schedules its own budget).
  const budget = Math.max(1, cfg.maxNumTokens) * cfg.dp;
  const mixes = prof.mixesPrefill;
  const pfBudget = mixes ? Math.max(budget - micro(n), Math.ceil(budget / 4)) : budget;
  let g: number;
  let chunk: number;
  let k: number;
  if (isle <= pfBudget) {
    g = Math.max(1, Math.min(n, Math.floor(pfBudget / isle)));
    chunk = isle;
    k = 1;
  } else {
    // A long prompt is cut into k chunks; pricing k equal chunks keeps the total work at isle tokens
    // (k full-budget chunks would price a short tail chunk as a full one).
    g = 1;
    k = Math.ceil(isle / pfBudget);
    chunk = Math.ceil(isle / k);
  }
  const avgPrefix = prefix + (k > 1 ? ((k - 1) / 2) * chunk : 0);
  const eager = prof.eagerLayerMs * ctx.model.numLayers;
  /** One prefill step of `prompts` prompt chunks of `tokens` each (riding on the other sequences' decode when the engine mixes). */
  const pfStep = (prompts: number, tokens = Math.min(chunk, isle)): number => {
    const dc = mixes ? Math.max(0, n - prompts) : 0;
    const st = mixedStepMs(ctx, cfg, {
      pfBatch: micro(prompts), pfSeq: tokens, pfPrefix: Math.round(avgPrefix), dcBatch: micro(dc), dcKv: kvMid, dcQuery: tokPerSeq,
    });
    return st.ms + host + eager;
  };
  const tFull = pfStep(g);
  const life = D + k;
  // Steady state: completions are spread out, so a new prompt mostly shares its step with the few that
  // arrived during the previous step (the previous `recvEvery`, where the scheduler takes requests in only so often).
  const recvEvery = ctx.schedulerRecvInterval ?? 1;
  const gSteady = Math.max(1, Math.min(g, Math.round(1 + ((n - 1) * recvEvery) / life)));
  const tOwn = gSteady === g ? tFull : pfStep(gSteady);
  // Marginal cost of one prompt chunk on top of the decode work the step does anyway, at the grouping the
  // prompts arrive in: a step's fixed costs (weights, all experts at prefill sizes) are shared by gSteady
  // prompts, not by a full budget of them; pipeline stages each run a micro-batch of their own. Attention-dp
  // ranks and lockstep rounds batch their prompts together.
  const gPriced = cfg.dp === 1 && !prof.lockstep ? Math.min(g, gSteady * pp) : g;
  const tPriced = gPriced === g ? tFull : gPriced === gSteady ? tOwn : pfStep(gPriced);
  const perChunk = (tPriced - (mixes ? tDec : 0)) / gPriced;
  // Prefill chunks of one request lifetime of all n sequences, and the iterations they need at g per step.
  // Prompts longer than the budget are chunked, and chunked prefill fills each step's budget with tokens of
  // whichever prompts wait (the tail of one and the head of the next), so the steps needed are the prompt
  // tokens over the budget (at least k for one prompt). Shorter prompts go whole, g to a step.
  const nMix = k > 1 ? Math.max(k, (n * isle) / pfBudget) : (n * k) / g;
  const prefillWork = n * k * perChunk; // ms per lifetime
  // Mixed steps: a lifetime needs at least nMix iterations. Separate prefill steps just lengthen the cycle.
  const iters = mixes ? Math.max(life, nMix) : life;
  const tIter = tDec + prefillWork / iters;
  const engineWait = (iters - life) * tIter;
  // A new prompt waits for the step in flight, which is length-biased: it arrives during a long mixed step more
  // often than that step's share of the steps, so the mean remaining time is E[step^2] / (2 E[step]) over a
  // request lifetime's steps. An overlap scheduler has already scheduled the next step as well (and hands the
  // prompt's first token out a step late: outputLagSteps below).
  const mixSteps = Math.min(iters, ((n - 1) * k) / gSteady); // the other clients' prompts
  const decSteps = iters - mixSteps;
  const inFlight = (mixSteps * tOwn * tOwn + decSteps * tDec * tDec) / (2 * (mixSteps * tOwn + decSteps * tDec));
  // A scheduler taking requests in every `recvEvery` steps leaves a new prompt (recvEvery - 1) / 2 more steps waiting.
  const residual = inFlight + ((recvEvery - 1) / 2) * tIter + (prof.outputLagSteps ?? 0) * tDec;
  // The first round arrives at once and queues behind the whole burst of prompts. Chunked prompts pack the
  // burst's steps to the full budget (the tail of one prompt and the head of the next), so those steps cost a
  // full budget of prompt tokens, and prompt i is done at step ceil(i x isle / budget); whole prompts go g to a step.
  const tBurst = k > 1 ? pfStep(1, pfBudget) : tFull;
  const burstTtft = burstMeanSteps(n, k > 1 ? isle / pfBudget : 1 / g) * tBurst;
  // The engine's part of TTFT: waiting for the step in flight, its own queue, the burst and the prompt's own prefill.
  let engine: Pick<TtftParts, 'stepInFlight' | 'engineQueue' | 'burst' | 'prefill'>;
  let tpot: number;
  if (!prof.lockstep) {
    // Completions spread out over the steps, so later rounds mostly find a free step.
    tpot = tIter;
    const steadyTtft = residual + engineWait + k * tOwn;
    engine = { stepInFlight: residual, engineQueue: engineWait, burst: Math.max(0, burstTtft - steadyTtft) / BENCH_ROUNDS, prefill: k * tOwn };
  } else {
    // Prefill-first scheduling keeps the clients in lockstep: every round is a burst of prompts followed by
    // uninterrupted decode steps. A request whose prompt went early still waits for the rest of the burst
    // before its second token, so the round (burst + decode) is every request's latency and TPOT carries
    // the part of the burst after its own first token.
    const ttftPrefill = Math.max(burstTtft, k * tFull);
    engine = { stepInFlight: 0, engineQueue: 0, burst: ttftPrefill - k * tFull, prefill: k * tFull };
    const burstAll = Math.max(Math.ceil(nMix), k) * tBurst;
    tpot = tDec + Math.max(0, burstAll - ttftPrefill) / D;
  }
  const request = prof.requestOverheadMs + streamTtftMs(prof, n, cfg.dp);
  const handout = (prof.outputLagSteps ?? 0) * tIter;
  // The parts known before the waits that depend on the request rate (attention-DP balancing, free slots).
  const parts: TtftParts = { request, slotQueue: 0, balance: 0, kvTransfer: 0, handout, ...engine };
  const unbalanced = sumTtftParts(parts);
  const cycleMs = iters * tIter;
  // Slots turn over once per cycle; clients beyond the running slots queue for one.
  const slotRate = n / (cycleMs + prof.requestOverheadMs);
  // The balancing wait follows the request rate, taken here without the wait itself.
  const balance = adpBalanceWaitMs(prof, cfg.dp, n, Math.min(slotRate, clients / (unbalanced + D * tpot)), tIter);
  const baseTtft = unbalanced + balance;
  const running = baseTtft + D * tpot;
  const clientRate = clients / running;
  const rate = Math.min(slotRate, clientRate);
  const queue = Math.max(0, clients / rate - running);
  const ttft = baseTtft + queue;
  // Time between output tokens: D steps emit outTok tokens.
  const tpotTok = (tpot * D) / outTok;
  return {
    ttftMs: ttft,
    tpotMs: tpotTok,
    requestLatencyMs: ttft + outTok * tpotTok,
    requestsPerS: rate * 1000,
    running: n,
    ttftParts: { ...parts, slotQueue: queue, balance },
    decodeStepMs: tDec,
    mixedStepMs: tFull,
  };
}

/** Memory picture of an agg replica (token budget activations, sequences of isl+osl). */
export function aggMemory(ctx: EngineContext, cfg: AggConfig) {
  return memoryPicture(ctx, cfg, cfg.maxNumTokens, ctx.workload.isl + ctx.workload.osl);
}
