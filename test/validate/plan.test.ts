import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadPlan, planBenchDir, planGpus } from '../../src/validate/plan.js';
import { correctionProfileYaml, loadCorrectionProfile, profileMismatches } from '../../src/validate/profile.js';
import { InputError } from '../../src/util/errors.js';
import { PLAN } from './synthetic.js';

function write(doc: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'plan-'));
  writeFileSync(join(dir, 'generator_config.yaml'), YAML.stringify(doc));
  return dir;
}

describe('loadPlan', () => {
  it('reads an agg plan from the file or its results directory', () => {
    const dir = write(PLAN);
    const plan = loadPlan(dir);
    expect(plan.path).toBe(join(dir, 'generator_config.yaml'));
    expect(planBenchDir(plan)).toBe(join(dir, 'bench'));
    expect(plan.layout).toEqual({
      mode: 'agg',
      config: { tp: 2, pp: 1, dp: 1, moeTp: 2, moeEp: 1, batchSize: 64, maxNumTokens: 8192 },
      replicas: 4,
    });
    expect(planGpus(plan.layout)).toBe(8);
    expect(plan.workload).toEqual({ isl: 4000, osl: 500, prefix: 0 });
    expect(plan.predictedConcurrency).toBe(128);
    expect(loadPlan(plan.path).layout).toEqual(plan.layout);
  });

  it('reads a disagg plan', () => {
    const pool = (tp: number, workers: number) => ({ tp, pp: 1, dp: 1, moe_tp: tp, moe_ep: 1, batch_size: 8, max_num_tokens: 8192, workers });
    const { agg: _agg, ...rest } = PLAN;
    const plan = loadPlan(write({ ...rest, mode: 'disagg', disagg: { prefill: pool(2, 2), decode: pool(4, 1) } }));
    expect(plan.layout.mode).toBe('disagg');
    expect(planGpus(plan.layout)).toBe(8);
  });

  it('names what is wrong', () => {
    expect(() => loadPlan(write({ ...PLAN, kind: 'other' }))).toThrow(/kind/);
    expect(() => loadPlan(write({ ...PLAN, agg: undefined }))).toThrow(/"agg" section is missing/);
    expect(() => loadPlan(write({ ...PLAN, agg: { ...PLAN.agg, tp: 0 } }))).toThrow(InputError);
    expect(() => loadPlan('/nonexistent/generator_config.yaml')).toThrow(/no such file/);
  });
});

describe('correction profile YAML', () => {
  it('round-trips through loadCorrectionProfile with provenance kept alongside', () => {
    const dir = mkdtempSync(join(tmpdir(), 'prof-'));
    const file = join(dir, 'cal.yaml');
    const err = { ttftMapePct: 10, tpotMapePct: 12, rmsLogError: 0.1 };
    writeFileSync(
      file,
      correctionProfileYaml(
        { prefillFactor: 0.91234567, decodeFactor: 1.2, stepOverheadMs: 0.5 },
        {
          inferplanVersion: '0.1.0',
          created: '2026-12-02',
          model: 'Qwen/Qwen3-32B',
          system: 'h200_sxm',
          backend: 'vllm',
          mode: 'agg',
          fitted: ['prefill', 'decode', 'overhead'],
          runs: [{ label: 'c8', source: 'bench/c8/profile_export_aiperf.json', concurrency: 8, isl: 4000, osl: 500 }],
          errorBefore: err,
          errorAfter: { ...err, ttftMapePct: 1 },
        },
      ),
    );
    const p = loadCorrectionProfile(file);
    expect(p).toEqual({
      prefillFactor: 0.91235, decodeFactor: 1.2, stepOverheadMs: 0.5, source: file, fittedFor: { model: 'Qwen/Qwen3-32B', system: 'h200_sxm', backend: 'vllm' },
    });
    const doc = YAML.parse(readFileSync(file, 'utf8'));
    expect(doc.kind).toBe('inferplan-correction-profile');
    expect(doc.error_after.ttft_mape_pct).toBe(1);
    expect(doc.runs[0].concurrency).toBe(8);
    expect(profileMismatches(p, { model: 'qwen/qwen3-32b', system: 'h200_sxm', backend: 'vllm' })).toEqual([]);
    expect(profileMismatches(p, { model: 'Qwen/Qwen3-32B', system: 'b200_sxm', backend: 'vllm' })).toEqual([
      `calibration ${file} was fitted for system h200_sxm, applied to b200_sxm`,
    ]);
  });
});
