import type { TtftParts } from '../../src/engine/types.js';

/** A fake estimate's TTFT, all of it prefill. */
export function ttftPartsOf(ttftMs: number): TtftParts {
  return { request: 0, slotQueue: 0, balance: 0, stepInFlight: 0, engineQueue: 0, burst: 0, prefill: ttftMs, kvTransfer: 0, handout: 0 };
}
