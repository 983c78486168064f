// What the search needs from the inference model. The real engine satisfies it (see ./engine-port.ts);
// tests pass a small fake with known answers.
import type {
  AggConfig,
  AggEstimate,
  DisaggConfig,
  DisaggEstimate,
  EngineContext,
  MemoryPicture,
  ParallelLayout,
  Refusal,
} from '../engine/types.js';
import type { BandBasis } from '../engine/bands.js';

export type Role = 'agg' | 'prefill' | 'decode';

export interface SearchEngine {
  estimateAgg(ctx: EngineContext, config: AggConfig, opts?: { concurrency?: number; replicas?: number }): AggEstimate | Refusal;
  estimateDisagg(ctx: EngineContext, config: DisaggConfig, opts?: { concurrency?: number }): DisaggEstimate | Refusal;
  /** Memory of one instance of `layout` with a step token budget; maxSequences = isl+osl sequences that fit. */
  memoryFor(ctx: EngineContext, layout: ParallelLayout, maxNumTokens: number, role?: Role): MemoryPicture | Refusal;
  /** Why the engine cannot run this layout in this role, or null. */
  layoutRule(ctx: EngineContext, layout: ParallelLayout, role: Role): string | null;
  /** Why the engine cannot pair these prefill and decode pools, or null. */
  disaggRule(ctx: EngineContext, config: DisaggConfig): string | null;
  /** The backend's default step token budget (max-num-batched-tokens). */
  defaultMaxNumTokens(ctx: EngineContext): number;
  /** The measured runs an estimate's error bands come from (the real engine's error bands). */
  bandBasis?(ctx: EngineContext, mode: 'agg' | 'disagg'): BandBasis;
}

// The engine's own helpers (rules.ts and types only: no engine code is loaded for a fake engine).
export { gpusOf } from '../engine/rules.js';

export function isRefusal<T extends object>(x: T | Refusal): x is Refusal {
  return (x as Refusal).refused === true;
}
