// The search space: parallel layouts within a GPU budget, batch-size grids and token budgets.
import type { EngineContext, ParallelLayout } from '../engine/types.js';
import { expressRule } from '../engine/rules.js';
import type { SearchRestrict } from './types.js';
import { gpusOf } from './port.js';

export function powersOfTwo(max: number): number[] {
  const out: number[] = [];
  for (let v = 1; v <= max; v *= 2) out.push(v);
  return out;
}

function allowed(values: number[], only?: number[]): number[] {
  return only && only.length > 0 ? values.filter((v) => only.includes(v)) : values;
}

/** Largest TP the search tries: one NVLink domain, at most 8 on HGX boxes, 16 on NVL racks. */
export function maxTp(ctx: EngineContext, budget: number): number {
  const perNode = ctx.system.gpusPerNode;
  return Math.min(budget, perNode >= 16 ? 16 : Math.max(1, perNode));
}

/**
 * Layouts of one model instance that fit in `budget` GPUs. Dense: tp x pp. MoE: also attention dp and the
 * (moe_tp, moe_ep) splits of tp*dp. PP may span nodes (the engine prices the inter-node hop). Only layouts the
 * engine's flags can deploy as priced (`expressRule`) are offered: vLLM's experts are all expert parallel or all
 * tensor parallel, TRT-LLM's attention DP runs tp 1 in one pipeline stage. A search the user pinned to some
 * layout values keeps the others, so that the engine's refusal says why they are not offered.
 */
export function enumerateLayouts(ctx: EngineContext, budget: number, restrict?: SearchRestrict): ParallelLayout[] {
  const out: ParallelLayout[] = [];
  const tps = allowed(powersOfTwo(maxTp(ctx, budget)), restrict?.tp);
  const pps = allowed(
    powersOfTwo(budget).filter((p) => p <= ctx.model.numLayers),
    restrict?.pp,
  );
  const moe = ctx.model.moe !== undefined;
  const dps = moe ? allowed(powersOfTwo(Math.min(budget, 64)), restrict?.dp) : [1];
  const pinned = [restrict?.tp, restrict?.pp, restrict?.dp, restrict?.moeTp, restrict?.moeEp].some((v) => v !== undefined && v.length > 0);
  for (const tp of tps) {
    for (const dp of dps) {
      if (tp * dp > budget) continue;
      const width = tp * dp;
      for (const pp of pps) {
        if (tp * dp * pp > budget) continue;
        if (!moe) {
          out.push({ tp, pp, dp: 1, moeTp: tp, moeEp: 1 });
          continue;
        }
        for (const moeEp of powersOfTwo(width)) {
          const moeTp = width / moeEp;
          if (restrict?.moeTp?.length && !restrict.moeTp.includes(moeTp)) continue;
          if (restrict?.moeEp?.length && !restrict.moeEp.includes(moeEp)) continue;
          // Deployments we write place whole experts evenly (no redundant-expert flags): widths that divide them.
          if (ctx.model.moe!.numExperts % moeEp !== 0) continue;
          const layout = { tp, pp, dp, moeTp, moeEp };
          if (!pinned && expressRule(ctx, layout) !== null) continue;
          out.push(layout);
        }
      }
    }
  }
  return out;
}

/** Round up to a "nice" batch size: multiples of 4 to 64, of 8 to 256, of 16 beyond. */
function nice(v: number): number {
  const step = v <= 64 ? 4 : v <= 256 ? 8 : 16;
  return Math.ceil(v / step) * step;
}

/** Upper bound on running sequences per attention rank the search tries (engines cap them near here). */
export const MAX_BATCH = 1024;

/**
 * Batch sizes from 1 to `maxSequences`: every value to 16, then ~1.25x steps on round numbers, and the
 * largest that fits, so the memory limit itself is always a candidate.
 */
export function batchGrid(maxSequences: number, only?: number[], dp = 1): number[] {
  const cap = Math.min(Math.floor(maxSequences), MAX_BATCH * dp);
  if (only && only.length > 0) return only.filter((b) => b >= 1 && b <= cap).sort((a, b) => a - b);
  const out: number[] = [];
  for (let b = 1; b <= Math.min(16, cap); b++) out.push(b);
  let b = 16;
  while (b < cap) {
    b = nice(b * 1.25);
    if (b >= cap) break;
    out.push(b);
  }
  if (cap > 16) out.push(cap);
  return out;
}

/**
 * Step token budgets for chunked prefill: small (2048, favours TPOT), the engine default and a large one
 * (favours TTFT and throughput), plus a budget that takes a whole prompt in one chunk for long prompts.
 */
export function tokenBudgets(d: number, isl: number, only?: number[]): number[] {
  if (only && only.length > 0) return [...new Set(only)].sort((a, b) => a - b);
  const set = new Set<number>([2048, d, Math.max(16384, d)]);
  if (isl > d && isl <= 32768) set.add(Math.ceil(isl / 256) * 256);
  return [...set].filter((t) => t >= 512).sort((a, b) => a - b);
}

/** Prefill batch sizes of a disaggregated prefill worker (prompts per step). */
export function prefillBatches(isl: number, only?: number[]): number[] {
  const base = [1, 2, 4, 8].filter((b) => b === 1 || b * isl <= 32768);
  return only && only.length > 0 ? base.filter((b) => only.includes(b)) : base;
}

/** "tp2pp1", or for MoE "tp1pp1dp8etp1ep8" (aiconfigurator's spelling). */
export function layoutName(l: ParallelLayout, moe: boolean): string {
  const base = `tp${l.tp}pp${l.pp}`;
  return moe ? `${base}dp${l.dp}etp${l.moeTp}ep${l.moeEp}` : base;
}

export function layoutKey(l: ParallelLayout): string {
  return `${l.tp}/${l.pp}/${l.dp}/${l.moeTp}/${l.moeEp}`;
}

export { gpusOf };
