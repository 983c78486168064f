// A small analytical stand-in for the engine, with the same shape of dependence on the correction profile:
// TTFT is mostly prefill, TPOT mostly decode, and each leaks into the other as in a mixed-batch scheduler.
import type { AiperfRun, AiperfMetric } from '../../src/inputs/aiperf.js';
import type { CorrectionProfile } from '../../src/engine/types.js';
import type { OperatingPoint, Prediction, Predictor } from '../../src/validate/predict.js';

export function fakePredictor(): Predictor {
  return (pt: OperatingPoint, c: CorrectionProfile | undefined): Prediction => {
    const p = c?.prefillFactor ?? 1;
    const d = c?.decodeFactor ?? 1;
    const s = c?.stepOverheadMs ?? 0;
    const prefill = 0.05 * pt.isl * p + s;
    const step = (8 + 0.04 * pt.concurrency) * d + s;
    const ttft = prefill * (1 + pt.concurrency / 64) + 0.5 * step;
    const tpot = step + (prefill * pt.concurrency) / (pt.osl * 4);
    const lat = ttft + tpot * (pt.osl - 1);
    const rps = pt.concurrency / (lat / 1000);
    const values: Record<AiperfMetric, number> = {
      ttftMs: ttft,
      tpotMs: tpot,
      requestLatencyMs: lat,
      outputTokPerS: rps * pt.osl,
      requestsPerS: rps,
      tokPerSPerUser: 1000 / tpot,
    };
    const bands = Object.fromEntries(
      Object.entries(values).map(([k, v]) => [k, { low: v * 0.85, high: v * 1.15 }]),
    ) as Prediction['bands'];
    return { values, bands };
  };
}

/** A run whose metrics are exactly the prediction at `pt` under `truth`. */
export function syntheticRun(predictor: Predictor, pt: OperatingPoint, truth: CorrectionProfile | undefined, label = `c${pt.concurrency}`): AiperfRun {
  const pred = predictor(pt, truth);
  if ('refused' in pred) throw new Error(pred.reason);
  const stat = (v: number) => ({ avg: v, p50: v, p90: v, p99: v });
  const single = (v: number) => ({ avg: v, p50: null, p90: null, p99: null });
  return {
    source: `${label}/profile_export_aiperf.json`,
    format: 'json',
    label,
    model: null,
    concurrency: pt.concurrency,
    concurrencySource: 'config',
    isl: pt.isl,
    osl: pt.osl,
    requestCount: 100,
    errorCount: 0,
    durationS: 60,
    metrics: {
      ttftMs: stat(pred.values.ttftMs),
      tpotMs: stat(pred.values.tpotMs),
      requestLatencyMs: stat(pred.values.requestLatencyMs),
      outputTokPerS: single(pred.values.outputTokPerS),
      requestsPerS: single(pred.values.requestsPerS),
      tokPerSPerUser: stat(pred.values.tokPerSPerUser),
    },
  };
}
