// SLA targets judged with a margin: each latency is read at the --sla-confidence quantile of its error band
// (0.5: the prediction itself), and every candidate carries its chance of meeting each target.
import type { Sla } from '../inputs/types.js';
import type { Band, MetricBands, ServingMetrics } from '../engine/types.js';
import { chanceAtMost, valueAtConfidence } from '../engine/bands.js';
import type { SlaChance } from './types.js';

/**
 * The confidence used when none is given. bench:ranking (docs/default.md, "Confidence") measures that on sweeps
 * left out of the bands' fit every margin above the prediction costs more throughput (layouts chosen at lower
 * load, or none) than the SLA misses it avoids, as today's bands are wide against the TPOT steps between loads.
 */
export const DEFAULT_SLA_CONFIDENCE = 0.5;

/** The latencies an SLA is judged on. */
export type JudgedLatencies = Pick<ServingMetrics, 'ttftMs' | 'tpotMs' | 'requestLatencyMs'>;

export function confidenceOf(sla: Sla): number {
  return sla.confidence ?? DEFAULT_SLA_CONFIDENCE;
}

/** The latencies at confidence `p` (the prediction itself at 0.5, or without bands). */
export function latenciesAt(m: ServingMetrics, bands: MetricBands | undefined, p: number): JudgedLatencies {
  if (!bands || p === 0.5) return m;
  return {
    ttftMs: valueAtConfidence(m.ttftMs, bands.ttftMs, p),
    tpotMs: valueAtConfidence(m.tpotMs, bands.tpotMs, p),
    requestLatencyMs: valueAtConfidence(m.requestLatencyMs, bands.requestLatencyMs, p),
  };
}

/** TPOT at confidence `p`. */
export function tpotAt(m: ServingMetrics, bands: MetricBands | undefined, p: number): number {
  return bands && p !== 0.5 ? valueAtConfidence(m.tpotMs, bands.tpotMs, p) : m.tpotMs;
}

const certain = (pred: number, target: number): number => (pred <= target ? 1 : 0);

/** The chance that each target holds as measured; without bands, 1 or 0. */
export function slaChance(m: ServingMetrics, bands: MetricBands | undefined, sla: Sla): SlaChance {
  const of = (pred: number, b: Band | undefined, target: number) => (b ? chanceAtMost(pred, b, target) : certain(pred, target));
  const ttft = of(m.ttftMs, bands?.ttftMs, sla.ttftMs);
  const tpot = of(m.tpotMs, bands?.tpotMs, sla.tpotMs);
  if (sla.requestLatencyMs === undefined) return { ttft, tpot, all: Math.min(ttft, tpot) };
  const requestLatency = of(m.requestLatencyMs, bands?.requestLatencyMs, sla.requestLatencyMs);
  return { ttft, tpot, requestLatency, all: Math.min(ttft, tpot, requestLatency) };
}
