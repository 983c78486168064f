// The CLI as a CI gate: refused fits exit 3 and write nothing, malformed CSV rows exit 2 naming the line and
// column, plans beyond the model's context exit 2, mismatched profiles warn (or exit 2 with --strict), and
// every CSV written is neutralised against formula injection.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../modes/cli.js';
import { registerCalibrate } from '../../src/cli/commands/calibrate.js';
import { registerEstimate } from '../../src/cli/commands/estimate.js';
import { registerValidate } from '../../src/cli/commands/validate.js';
import { loadEngineContext } from '../../src/cli/context.js';
import { readCommonInputs } from '../../src/cli/options.js';
import { estimateAgg, estimateDisagg } from '../../src/engine/index.js';
import type { EngineContext } from '../../src/engine/types.js';
import { enginePredictor } from '../../src/validate/predict.js';
import { loadPlan } from '../../src/validate/plan.js';
import { InferplanError } from '../../src/util/errors.js';
import { dataPath } from '../../src/util/paths.js';
import { PLAN, writeSyntheticBench } from './synthetic.js';

/** The commands in this process (test/modes/cli.ts runInProcess), with the output names these tests use. */
async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await runInProcess([registerValidate, registerCalibrate, registerEstimate], args);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'inferplan-gates-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A vLLM release of the plan's system that has performance tables here (the newest that loads).
async function workingContext(): Promise<EngineContext | null> {
  const perfDir = dataPath('perf', PLAN.system, PLAN.backend);
  const versions = existsSync(perfDir) ? readdirSync(perfDir).sort().reverse() : [];
  for (const v of versions) {
    const inputs = readCommonInputs({ hfId: PLAN.model, system: PLAN.system, backend: PLAN.backend, backendVersion: v, isl: PLAN.workload.isl, osl: PLAN.workload.osl });
    try {
      return await loadEngineContext(inputs);
    } catch (e) {
      if (!(e instanceof InferplanError)) throw e;
    }
  }
  return null;
}
const ctx = await workingContext();
if (!ctx) console.log(`skipping engine-backed gate tests: no loadable performance tables for ${PLAN.system} ${PLAN.backend}`);

describe('estimate --from-csv: malformed numbers', () => {
  const header = 'id,model_path,system,backend,backend_version,mode,isl,osl,batch_size,tp_size,attention_dp_size';
  it('a row whose isl is "abc" exits 2 naming the line and column, and writes nothing', async () => {
    const csv = join(dir, 'rows.csv');
    writeFileSync(csv, `${header}\n1,Qwen/Qwen3-32B,h200_sxm,vllm,,agg,4000,500,8,2,\n2,Qwen/Qwen3-32B,h200_sxm,vllm,,agg,abc,500,8,2,\n`);
    const out = join(dir, 'priced.csv');
    const r = await run(['estimate', '--from-csv', csv, '--out', out]);
    expect(r.code).toBe(2);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toContain(`--from-csv ${csv} line 3, column "isl": "abc" is not a positive number`);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  it.each([['-8', 'batch_size'], ['1e999', 'tp_size'], ['NaN', 'batch_size']])('a count of %s is malformed too', async (v, col) => {
    const csv = join(dir, `rows-${col}.csv`);
    const cells = col === 'batch_size' ? `${v},2,` : `8,${v},`;
    writeFileSync(csv, `${header}\n1,Qwen/Qwen3-32B,h200_sxm,vllm,,agg,4000,500,${cells}\n`);
    const r = await run(['estimate', '--from-csv', csv]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`line 2, column "${col}": "${v}"`);
    expect(r.out).toBe('');
  });

  it('blank optional cells keep their defaults, and text cells are written neutralised', async () => {
    const csv = join(dir, 'inject.csv');
    writeFileSync(csv, `${header}\n"=HYPERLINK(""http://x"")",@SUM(A1),h200_sxm,vllm,,agg,4000,500,,,\n-3,+cmd,h200_sxm,vllm,,agg,4000,500,8,2,0\n`);
    const r = await run(['estimate', '--from-csv', csv]);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines[1].startsWith(`"'=HYPERLINK(""http://x"")",'@SUM(A1),`)).toBe(true);
    // A real negative number stays a number; a formula-looking string does not.
    expect(lines[2].startsWith(`-3,'+cmd,`)).toBe(true);
  });
});

describe('plans beyond the model context', () => {
  it('isl + osl above max_position_embeddings exits 2 naming both numbers', async () => {
    const r = await run(['estimate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--isl', '100000', '--osl', '1000', '--tp', '2']);
    expect(r.code).toBe(2);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/isl 100000 \+ osl 1000 = 101000 tokens exceeds the context length of Qwen\/Qwen3-32B \(40960 positions/);
  });
});

describe.skipIf(!ctx)('calibrate refuses dishonest fits; profiles from elsewhere warn', () => {
  const truth = { prefillFactor: 0.9, decodeFactor: 1.2, stepOverheadMs: 0, source: 'truth' };
  const plan = { ...PLAN, backend_version: ctx?.version ?? '' };
  const setup = () => {
    const planPath = join(dir, 'plan-only.yaml');
    writeFileSync(planPath, JSON.stringify(plan));
    const predictor = enginePredictor(ctx!, loadPlan(planPath).layout, { estimateAgg, estimateDisagg });
    writeSyntheticBench(join(dir, 'sweep'), predictor, truth, plan, [16, 64, 128]);
    writeSyntheticBench(join(dir, 'single'), predictor, truth, plan, [64]);
  };

  it('one run: exit 3 with the reason, and no profile written', async () => {
    setup();
    const out = join(dir, 'single.yaml');
    const r = await run(['calibrate', '--plan', join(dir, 'single'), '--out', out]);
    expect(r.code).toBe(3);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/calibrate: fit refused, no profile written: the 1 usable run covers one load \(concurrency 64\)/);
    expect(existsSync(out)).toBe(false);
    const j = await run(['calibrate', '--plan', join(dir, 'single'), '--out', out, '--json']);
    expect(j.code).toBe(3);
    expect(JSON.parse(j.out).error.detail.refusals).toHaveLength(1);
  });

  it('a sweep passes the held-out check; the profile records model, system, engine and version', async () => {
    const out = join(dir, 'sweep.yaml');
    const r = await run(['calibrate', '--plan', join(dir, 'sweep'), '--out', out, '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(doc.fit.heldOut.method).toBe('leave-one-concurrency-out');
    expect(doc.fit.heldOut.after).toBeLessThan(doc.fit.heldOut.before);
    const text = readFileSync(out, 'utf8');
    expect(text).toMatch(/model: Qwen\/Qwen3-32B\nsystem: h200_sxm\nbackend: vllm\nbackend_version: /);
  });

  it('a profile fitted for another model warns on stderr; --strict refuses it (exit 2)', async () => {
    const other = join(dir, 'other.yaml');
    writeFileSync(other, readFileSync(join(dir, 'sweep.yaml'), 'utf8').replace('model: Qwen/Qwen3-32B', 'model: meta-llama/Llama-3.1-8B'));
    const args = ['estimate', '--hf-id', PLAN.model, '--system', PLAN.system, '--backend', 'vllm', '--backend-version', ctx!.version, '--tp', '2', '--calibration', other];
    const warned = await run(args);
    expect(warned.code).toBe(0);
    expect(warned.err).toMatch(/warning: calibration .*other\.yaml was fitted for model meta-llama\/Llama-3\.1-8B, applied to Qwen\/Qwen3-32B/);
    const strict = await run([...args, '--strict']);
    expect(strict.code).toBe(2);
    expect(strict.err.trim().split('\n')).toHaveLength(1);
    expect(strict.err).toMatch(/--strict refuses a profile fitted for another deployment/);
    const v = await run(['validate', '--plan', join(dir, 'sweep'), '--calibration', other, '--strict']);
    expect(v.code).toBe(2);
  });
});
