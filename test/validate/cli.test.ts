// End to end on a synthetic sweep: AIPerf exports written from our own predictions with known distortions,
// then `validate` and `calibrate` run in-process against the real inference model.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { registerCalibrate } from '../../src/cli/commands/calibrate.js';
import { registerValidate } from '../../src/cli/commands/validate.js';
import { loadEngineContext } from '../../src/cli/context.js';
import { readCommonInputs } from '../../src/cli/options.js';
import { estimateAgg, estimateDisagg } from '../../src/engine/index.js';
import type { CorrectionProfile } from '../../src/engine/types.js';
import { loadPlan } from '../../src/validate/plan.js';
import { enginePredictor, type Predictor } from '../../src/validate/predict.js';
import { loadCorrectionProfile } from '../../src/validate/profile.js';
import { UnsupportedError } from '../../src/util/errors.js';
import { PLAN, writeSyntheticBench } from './synthetic.js';

const TRUTH: CorrectionProfile = { prefillFactor: 0.9, decodeFactor: 1.2, stepOverheadMs: 0, source: 'truth' };

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const program = new Command('configure').exitOverride();
  registerValidate(program);
  registerCalibrate(program);
  for (const c of program.commands) c.exitOverride();
  let out = '';
  let err = '';
  const so = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((out += String(s)), true));
  const se = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((err += String(s)), true));
  process.exitCode = 0;
  try {
    await program.parseAsync(args, { from: 'user' });
  } finally {
    so.mockRestore();
    se.mockRestore();
  }
  const code = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { code, out, err };
}

let dir: string;
let predictor: Predictor;

// The commands load the project's performance tables; without tables for the plan's system the CLI cannot run
// (the engine-level test in engine-fit.test.ts covers the fit without them).
const ctx = await loadEngineContext(
  readCommonInputs({ hfId: PLAN.model, system: PLAN.system, backend: PLAN.backend, isl: PLAN.workload.isl, osl: PLAN.workload.osl }),
).catch((e: unknown) => {
  if (e instanceof UnsupportedError) return null;
  throw e;
});
if (!ctx) console.log(`skipping validate/calibrate CLI tests: no performance tables for ${PLAN.system} ${PLAN.backend} in data/perf`);

beforeAll(() => {
  if (!ctx) return;
  dir = mkdtempSync(join(tmpdir(), 'inferplan-validate-'));
  const plan = { ...PLAN, backend_version: ctx.version };
  const planPath = join(dir, 'plan-only.yaml');
  writeFileSync(planPath, JSON.stringify(plan)); // JSON is YAML
  predictor = enginePredictor(ctx, loadPlan(planPath).layout, { estimateAgg, estimateDisagg });
  writeSyntheticBench(dir, predictor, TRUTH, plan);
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!ctx)('validate and calibrate on a synthetic sweep (decode 20% slower, prefill 10% faster)', () => {
  it('validate finds the runs under <plan dir>/bench and reports the errors the distortion implies', async () => {
    const { code, out } = await run(['validate', '--plan', join(dir, 'generator_config.yaml'), '--json']);
    expect(code).toBe(0);
    const doc = JSON.parse(out);
    expect(doc.calibrated).toBeNull();
    expect(doc.runs.map((r: { point: { concurrency: number } }) => r.point.concurrency)).toEqual(PLAN.bench.concurrencies);
    for (const r of doc.runs) {
      const pt = r.point;
      const plain = predictor(pt, undefined);
      const measured = predictor(pt, TRUTH);
      if ('refused' in plain || 'refused' in measured) throw new Error('refused');
      for (const m of r.metrics) {
        const want = ((plain.values[m.metric as keyof typeof plain.values] - measured.values[m.metric as keyof typeof plain.values]) / measured.values[m.metric as keyof typeof plain.values]) * 100;
        expect(m.errorPct).toBeCloseTo(want, 6);
      }
      // Decode 20% slower than predicted: we under-predict TPOT.
      expect(r.metrics.find((m: { metric: string }) => m.metric === 'tpotMs').errorPct).toBeLessThan(-1);
    }
    expect(doc.summary.runs).toBe(PLAN.bench.concurrencies.length);
  });

  it('--fail-over makes it a gate (exit 3) and --metrics restricts the comparison', async () => {
    const plan = join(dir, 'generator_config.yaml');
    const gate = await run(['validate', '--plan', plan, '--fail-over', '2', '--metrics', 'ttft,tpot']);
    expect(gate.code).toBe(3);
    expect(gate.out).toMatch(/FAIL: largest error/);
    expect(gate.out).not.toMatch(/requests\/s/);
    const loose = await run(['validate', '--plan', plan, '--fail-over', '500']);
    expect(loose.code).toBe(0);
    expect(loose.out).toMatch(/PASS: every error within 500% \(largest/);
  });

  it('calibrate recovers the distortion within 2% and validate --calibration then agrees', async () => {
    const out = join(dir, 'calibration.yaml');
    const cal = await run(['calibrate', '--plan', dir, '--out', out, '--json']);
    expect(cal.code).toBe(0);
    const doc = JSON.parse(cal.out);
    expect(doc.fit.before.tpotMape).toBeGreaterThan(2);
    expect(doc.fit.after.rmsLogError).toBeLessThan(0.005);
    const prof = loadCorrectionProfile(out);
    expect(Math.abs(prof.prefillFactor / 0.9 - 1)).toBeLessThan(0.02);
    expect(Math.abs(prof.decodeFactor / 1.2 - 1)).toBeLessThan(0.02);
    expect(prof.stepOverheadMs).toBeLessThan(0.05);

    const after = await run(['validate', '--plan', dir, '--calibration', out, '--json', '--fail-over', '2']);
    expect(after.code).toBe(0);
    const v = JSON.parse(after.out);
    expect(v.calibrated).toBe(out);
    expect(v.summary.maxAbsErrorPct).toBeLessThan(1);
    expect(v.passed).toBe(true);
  });

  it('without a plan, estimate-style flags describe the same agg deployment', async () => {
    const c64 = join(dir, 'bench', 'c64');
    const flags = await run([
      'validate', '--hf-id', PLAN.model, '--system', PLAN.system, '--backend', 'vllm', '--tp', '2', '--replicas', '4',
      '--isl', '4000', '--osl', '500', '--aiperf', c64, '--json',
    ]);
    const viaPlan = await run(['validate', '--plan', dir, '--aiperf', c64, '--json']);
    expect(flags.code).toBe(0);
    const a = JSON.parse(flags.out).runs[0].metrics;
    const b = JSON.parse(viaPlan.out).runs[0].metrics;
    for (let i = 0; i < a.length; i++) expect(a[i].predicted / b[i].predicted).toBeCloseTo(1, 2);
  });

  it('bad input exits 2 with a one-line message', async () => {
    const r = await run(['validate', '--plan', join(dir, 'missing.yaml')]);
    expect(r.code).toBe(2);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/--plan .*missing\.yaml: cannot read/);
    const noRuns = await run(['validate', '--hf-id', PLAN.model, '--system', PLAN.system, '--tp', '2']);
    expect(noRuns.code).toBe(2);
    expect(noRuns.err).toMatch(/--aiperf PATH is required/);
    mkdirSync(join(dir, 'nobench'));
    copyFileSync(join(dir, 'plan-only.yaml'), join(dir, 'nobench', 'generator_config.yaml'));
    const noBench = await run(['validate', '--plan', join(dir, 'nobench')]);
    expect(noBench.code).toBe(2);
    expect(noBench.err).toMatch(/no AIPerf runs: .*bench does not exist; run bench.sh/);
    const clash = await run(['validate', '--plan', dir, '--tp', '4']);
    expect(clash.code).toBe(2);
    expect(clash.err).toMatch(/--tp cannot be combined with --plan/);
  });
});
