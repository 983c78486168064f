// Re-prediction at a measured operating point. The estimator is injected so the comparison and the fit are
// pure and testable without the engine; src/cli/commands/validate.ts binds the real one.
import type { AiperfMetric } from '../inputs/aiperf.js';
import type { Band, CorrectionProfile, EngineContext, Estimate, Refusal } from '../engine/types.js';
import type { PlanLayout } from './plan.js';

/** Where a run was measured: total client concurrency and mean token lengths. */
export interface OperatingPoint {
  concurrency: number;
  isl: number;
  osl: number;
}

export interface Prediction {
  values: Record<AiperfMetric, number>;
  bands: Record<AiperfMetric, Band | null>;
}

export type PredictionOrRefusal = Prediction | { refused: true; reason: string };

/** Predicts the serving metrics of one fixed deployment at a point, under an optional correction profile. */
export type Predictor = (point: OperatingPoint, correction: CorrectionProfile | undefined) => PredictionOrRefusal;

/** The engine entry points, as `src/engine/index.ts` exports them. */
export interface EngineFns {
  estimateAgg(ctx: EngineContext, config: Extract<PlanLayout, { mode: 'agg' }>['config'], opts?: { concurrency?: number; replicas?: number }): Estimate | Refusal;
  estimateDisagg(ctx: EngineContext, config: Extract<PlanLayout, { mode: 'disagg' }>['config'], opts?: { concurrency?: number }): Estimate | Refusal;
}

function scaleBand(b: Band, value: number, ref: number): Band {
  // A band for a derived metric keeps the relative width of the band it is derived from.
  return ref > 0 ? { low: (b.low / ref) * value, high: (b.high / ref) * value } : { low: value, high: value };
}

export function predictionFromEstimate(est: Estimate): Prediction {
  const m = est.metrics;
  const b = est.bands;
  const thr = b.tokPerSPerGpu;
  return {
    values: {
      ttftMs: m.ttftMs,
      tpotMs: m.tpotMs,
      requestLatencyMs: m.requestLatencyMs,
      outputTokPerS: m.outputTokPerS,
      requestsPerS: m.requestsPerS,
      tokPerSPerUser: m.tokPerSPerUser,
    },
    bands: {
      ttftMs: b.ttftMs,
      tpotMs: b.tpotMs,
      requestLatencyMs: b.requestLatencyMs,
      outputTokPerS: scaleBand(thr, m.outputTokPerS, m.tokPerSPerGpu),
      requestsPerS: scaleBand(thr, m.requestsPerS, m.tokPerSPerGpu),
      tokPerSPerUser: b.tokPerSPerUser,
    },
  };
}

/** A predictor for one planned layout: the context's workload is replaced by the run's isl/osl. */
export function enginePredictor(
  ctx: EngineContext,
  layout: PlanLayout,
  engine: EngineFns,
  opts: { batchFromConcurrency?: boolean } = {},
): Predictor {
  return (point, correction) => {
    const c: EngineContext = { ...ctx, workload: { ...ctx.workload, isl: point.isl, osl: point.osl }, correction };
    if (c.workload.prefix >= c.workload.isl) c.workload.prefix = 0;
    // Without a configured batch size, each replica runs its share of the clients.
    const agg =
      layout.mode === 'agg' && opts.batchFromConcurrency
        ? { ...layout.config, batchSize: Math.max(1, Math.ceil(point.concurrency / layout.replicas)) }
        : layout.config;
    const est =
      layout.mode === 'agg'
        ? engine.estimateAgg(c, agg as typeof layout.config, { concurrency: point.concurrency, replicas: layout.replicas })
        : engine.estimateDisagg(c, layout.config, { concurrency: point.concurrency });
    if (est.refused) return { refused: true, reason: est.reason };
    return predictionFromEstimate(est);
  };
}
