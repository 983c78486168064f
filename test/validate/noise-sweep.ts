// Measurement, not a test: how well `calibrate` recovers a known distortion when the measurements are noisy.
// Run: npx tsx test/validate/noise-sweep.ts
// Synthetic sweeps (Qwen3-32B, h200_sxm, vLLM, agg tp2 x4, isl 4000 / osl 500, concurrency 4..256) are made
// from our own predictions with prefill 10% faster and decode 20% slower, then TTFT and TPOT are multiplied by
// uniform noise of the given amplitude (seeded). Prints the factor errors over 20 trials per noise level.
import { loadEngineContext } from '../../src/cli/context.js';
import { readCommonInputs } from '../../src/cli/options.js';
import { estimateAgg, estimateDisagg } from '../../src/engine/index.js';
import { enginePredictor } from '../../src/validate/predict.js';
import { fitCorrection } from '../../src/validate/fit.js';
import type { PlanLayout } from '../../src/validate/plan.js';
import { syntheticRun } from './fake.js';

const ctx = await loadEngineContext(readCommonInputs({ hfId: 'Qwen/Qwen3-32B', system: 'h200_sxm', backend: 'vllm', isl: 4000, osl: 500 }));
const layout: PlanLayout = { mode: 'agg', config: { tp: 2, pp: 1, dp: 1, moeTp: 2, moeEp: 1, batchSize: 64, maxNumTokens: 8192 }, replicas: 4 };
const predictor = enginePredictor(ctx, layout, { estimateAgg, estimateDisagg });
const truth = { prefillFactor: 0.9, decodeFactor: 1.2, stepOverheadMs: 0, source: 'truth' };
let seed = 12345;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const TRIALS = 20;

console.log(`engine: ${ctx.backend} ${ctx.version}, perf source ${ctx.perf.info.kind} (${ctx.perf.info.calibratedOn})`);
for (const noise of [0, 0.02, 0.05, 0.1]) {
  const errs: number[][] = [];
  let ms = 0;
  let calls = 0;
  for (let t = 0; t < TRIALS; t++) {
    const runs = [4, 16, 64, 128, 256].map((c) => {
      const r = syntheticRun(predictor, { concurrency: c, isl: 4000, osl: 500 }, truth);
      r.metrics.ttftMs.avg = (r.metrics.ttftMs.avg as number) * (1 + noise * (2 * rnd() - 1));
      r.metrics.tpotMs.avg = (r.metrics.tpotMs.avg as number) * (1 + noise * (2 * rnd() - 1));
      return r;
    });
    const t0 = performance.now();
    const fit = fitCorrection(runs, predictor, { isl: 4000, osl: 500 });
    ms += performance.now() - t0;
    calls += fit.evaluations;
    errs.push([Math.abs(fit.profile.prefillFactor / 0.9 - 1) * 100, Math.abs(fit.profile.decodeFactor / 1.2 - 1) * 100, fit.profile.stepOverheadMs]);
  }
  const mean = (i: number) => (errs.reduce((a, e) => a + e[i], 0) / errs.length).toFixed(2);
  const max = (i: number) => Math.max(...errs.map((e) => e[i])).toFixed(2);
  console.log(
    `noise ±${(noise * 100).toFixed(0)}%: prefill_factor error mean ${mean(0)}% max ${max(0)}%; decode_factor error mean ${mean(1)}% max ${max(1)}%; ` +
      `step_overhead max ${max(2)} ms; ${(ms / TRIALS).toFixed(0)} ms and ${(calls / TRIALS).toFixed(0)} engine calls per fit`,
  );
}
