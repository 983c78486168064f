// The fit against the real inference model, with a roofline perf source so it needs no table files:
// a sweep made from our own predictions with prefill 10% faster and decode 20% slower, written as AIPerf
// exports and read back through the importer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importAiperf } from '../../src/inputs/aiperf.js';
import { effectiveDtypes } from '../../src/inputs/dtypes.js';
import { resolveModel } from '../../src/inputs/models.js';
import { loadSystem, resolveEngine } from '../../src/inputs/systems.js';
import { estimateAgg, estimateDisagg } from '../../src/engine/index.js';
import type { EngineContext } from '../../src/engine/types.js';
import { RooflinePerfSource } from '../../src/perf/roofline.js';
import { validateRuns } from '../../src/validate/compare.js';
import { fitCorrection } from '../../src/validate/fit.js';
import { loadPlan } from '../../src/validate/plan.js';
import { enginePredictor } from '../../src/validate/predict.js';
import { PLAN, writeSyntheticBench } from './synthetic.js';

const model = await resolveModel(PLAN.model);
const system = loadSystem(PLAN.system);
const { backend, version } = resolveEngine(system, 'vllm', undefined);
const dt = effectiveDtypes(model, {});
const ctx: EngineContext = {
  model,
  system,
  backend,
  version,
  perf: new RooflinePerfSource(system, { system: system.name, backend, version, kind: 'synthesized', calibratedOn: 'roofline' }),
  gemmDtype: dt.gemmDtype,
  moeDtype: dt.moeDtype,
  kvDtype: dt.kvDtype,
  workload: { isl: PLAN.workload.isl, osl: PLAN.workload.osl, prefix: 0 },
};

const dir = mkdtempSync(join(tmpdir(), 'inferplan-fit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('calibrate against the inference model (agg, Qwen3-32B on h200_sxm)', () => {
  const plan0 = { ...PLAN, backend_version: version };
  const truth = { prefillFactor: 0.9, decodeFactor: 1.2, stepOverheadMs: 0, source: 'truth' };

  it('recovers decode 20% slower and prefill 10% faster within 2%, and validate shows the errors go away', () => {
    const planPath = writeSyntheticBench(dir, () => ({ refused: true, reason: 'unused' }), truth, plan0, []);
    const plan = loadPlan(planPath);
    const predictor = enginePredictor(ctx, plan.layout, { estimateAgg, estimateDisagg });
    writeSyntheticBench(dir, predictor, truth, plan0);
    const runs = importAiperf(join(dir, 'bench'));
    expect(runs.map((r) => r.concurrency)).toEqual(PLAN.bench.concurrencies);
    const defaults = { isl: plan.workload.isl, osl: plan.workload.osl };

    const before = validateRuns(runs, predictor, defaults);
    const tpot = before.summary.perMetric.find((m) => m.metric === 'tpotMs')!;
    const ttft = before.summary.perMetric.find((m) => m.metric === 'ttftMs')!;
    expect(tpot.meanErrorPct!).toBeLessThan(-2); // decode slower than predicted: TPOT under-predicted
    expect(ttft.meanErrorPct!).toBeGreaterThan(2); // prefill faster than predicted: TTFT over-predicted

    const fit = fitCorrection(runs, predictor, defaults);
    expect(Math.abs(fit.profile.prefillFactor / 0.9 - 1)).toBeLessThan(0.02);
    expect(Math.abs(fit.profile.decodeFactor / 1.2 - 1)).toBeLessThan(0.02);
    expect(fit.profile.stepOverheadMs).toBeLessThan(0.05);

    const after = validateRuns(runs, predictor, defaults, { correction: fit.profile });
    expect(after.summary.maxAbsErrorPct!).toBeLessThan(1);
    expect(after.summary.compared).toBe(before.summary.compared);
  });

  it('recovers a per-step overhead together with the factors', () => {
    const sub = join(dir, 'overhead');
    const planPath = writeSyntheticBench(sub, () => ({ refused: true, reason: 'unused' }), truth, plan0, []);
    const predictor = enginePredictor(ctx, loadPlan(planPath).layout, { estimateAgg, estimateDisagg });
    const t2 = { prefillFactor: 1.3, decodeFactor: 0.85, stepOverheadMs: 1, source: 'truth' };
    writeSyntheticBench(sub, predictor, t2, plan0);
    const fit = fitCorrection(importAiperf(join(sub, 'bench')), predictor, { isl: 4000, osl: 500 });
    expect(fit.fitted).toEqual(['prefill', 'decode', 'overhead']);
    expect(Math.abs(fit.profile.prefillFactor / 1.3 - 1)).toBeLessThan(0.02);
    expect(Math.abs(fit.profile.decodeFactor / 0.85 - 1)).toBeLessThan(0.02);
    expect(Math.abs(fit.profile.stepOverheadMs - 1)).toBeLessThan(0.05);
  });
});
