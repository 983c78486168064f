// The measured columns of the reference end-to-end corpus (../shared/reference/aic-silicon/e2e/*.csv).
// Support for the tests and the e2e benchmark only: nothing the project ships reads measured rows.
import type { Row } from '../../src/engine/rows.js';

/** Measured mean TTFT and TPOT of one run, ms (NaN or 0 when the row does not record them). */
export function measuredMeans(row: Row): { ttftMs: number; tpotMs: number } {
  return { ttftMs: Number(row.silicon_ttft_ms), tpotMs: Number(row.silicon_tpot_ms) };
}

/** A run's row without its measurements: what it records of the configuration. */
export function withoutMeasurements(row: Row): Row {
  const { silicon_ttft_ms: _t, silicon_tpot_ms: _p, ...recorded } = row;
  return recorded;
}
