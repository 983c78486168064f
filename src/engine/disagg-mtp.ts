// Multi-token prediction (speculative decoding with the checkpoint's own MTP layers) in a decode pool.
// An estimate runs it only when its context says so (`ctx.speculation`): our generated deployments do not
// enable it, while measured runs of MTP checkpoints on TRT-LLM and SGLang did (see `rowSpeculation`).
import type { ModelSpec, Backend } from '../inputs/types.js';
import type { PerfSource } from '../perf/types.js';
import { decodeStepMs, hostOverheadMs } from './steps.js';
import type { EngineContext, ParallelLayout } from './types.js';

/** Acceptance of each draft position (DeepSeek-V3 report: 85-90% for the first MTP token). */
export const MTP_ACCEPTANCE = 0.85;
/** Draft depth of the TRT-LLM and SGLang DeepSeek serving recipes (nextn 3 / speculative-num-steps 3). */
export const RECIPE_MTP_DEPTH = 3;

/** Expected draft tokens accepted per step: position k counts only when the k-1 before it were accepted. */
export function acceptedPerStep(spec: { draft: number; acceptance: number }): number {
  let accepted = 0;
  for (let k = 1; k <= spec.draft; k++) accepted += spec.acceptance ** k;
  return accepted;
}

/**
 * The speculation a measured run used: checkpoints that ship MTP layers on TRT-LLM or SGLang (vLLM needs an
 * explicit speculative config). Hand-written recipe sweeps (no worker counts) use the recipes' depth. Runs
 * whose record carries the planner's worker counts were generated with the checkpoint's own MTP depth on
 * SGLang; the TRT-LLM ones ran without it (their TPOT matches plain decoding: TPOT MAPE 27 -> 23% and TTFT
 * 62 -> 47% priced so, while SGLang's planner runs match MTP).
 */
export function rowSpeculation(model: ModelSpec, backend: Backend, plannerConfig: boolean): { draft: number; acceptance: number } | undefined {
  const layers = model.mtpLayers ?? 0;
  if (layers <= 0 || backend === 'vllm' || (plannerConfig && backend === 'trtllm')) return undefined;
  return { draft: plannerConfig ? layers : Math.max(layers, RECIPE_MTP_DEPTH), acceptance: MTP_ACCEPTANCE };
}

/**
 * Time per output token of a decode step over `running` sequences at KV length `kv`, ms. With speculation
 * each step verifies running x (1 + draft) tokens through the model, runs the draft layer `draft` times,
 * and yields 1 + accepted tokens per sequence.
 */
export function decodeTpotMs(ctx: EngineContext, layout: ParallelLayout, running: number, kv: number, perf?: PerfSource): number {
  const host = hostOverheadMs(ctx, layout, running);
  const spec = ctx.speculation;
  if (!spec || spec.draft <= 0) return decodeStepMs(ctx, layout, running, kv, perf) + host;
  const L = ctx.model.numLayers;
  const step = (decodeStepMs(ctx, layout, running * (1 + spec.draft), kv, perf) * (L + spec.draft)) / L;
  return (step + host) / (1 + acceptedPerStep(spec));
}
