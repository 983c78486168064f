// One meaning of batch size and concurrency: a value copied from any output (default's JSON and CSVs, the
// plan file, generate) into `estimate --batch-size / --concurrency / --replicas` reproduces its prediction.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDefault } from '../../src/cli/commands/default.js';
import { registerEstimate } from '../../src/cli/commands/estimate.js';
import { registerGenerate } from '../../src/cli/commands/generate.js';
import { runInProcess } from '../modes/cli.js';

const WORKLOAD = ['--hf-id', 'Qwen/Qwen3-30B-A3B', '--system', 'h200_sxm', '--backend', 'trtllm', '--isl', '4000', '--osl', '500'];
const ROOT = mkdtempSync(join(tmpdir(), 'inferplan-copy-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

interface Pool { tp: number; pp: number; dp: number; moeTp: number; moeEp: number; batchSize: number; maxNumTokens: number; workers?: number }
type PlanPool = Pool & { moe_tp: number; moe_ep: number; batch_size: number; max_num_tokens: number };
interface Candidate {
  mode: 'agg' | 'disagg';
  replicas: number;
  concurrency: number;
  metrics: { ttftMs: number; tpotMs: number; tokPerSPerGpu: number };
  agg?: Pool;
  prefill?: Pool;
  decode?: Pool;
}

function poolArgs(p: Pool, prefix = ''): string[] {
  const out = [`--${prefix}tp`, p.tp, `--${prefix}pp`, p.pp, `--${prefix}dp`, p.dp, `--${prefix}moe-tp`, p.moeTp, `--${prefix}moe-ep`, p.moeEp,
    `--${prefix}batch-size`, p.batchSize, `--${prefix}max-num-tokens`, p.maxNumTokens];
  if (p.workers !== undefined) out.push(`--${prefix}workers`, p.workers);
  return out.map(String);
}

async function estimate(args: string[]): Promise<Candidate['metrics']> {
  const r = await runInProcess([registerEstimate], ['estimate', ...WORKLOAD, ...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { estimate: { metrics: Candidate['metrics'] } }).estimate.metrics;
}

function expectSame(got: Candidate['metrics'], want: Candidate['metrics']): void {
  // The outputs round to two decimals.
  expect(got.ttftMs).toBeCloseTo(want.ttftMs, 1);
  expect(got.tpotMs).toBeCloseTo(want.tpotMs, 1);
  expect(got.tokPerSPerGpu).toBeCloseTo(want.tokPerSPerGpu, 0);
}

describe('batch size and concurrency copied from one output into estimate', () => {
  let candidates: Candidate[];
  let saveDir: string;

  beforeAll(async () => {
    saveDir = join(ROOT, 'results');
    const r = await runInProcess([registerDefault], [
      'default', ...WORKLOAD, '--total-gpus', '8', '--ttft', '1000', '--tpot', '20', '--json', '--save-dir', saveDir,
    ]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { agg: { top: Candidate[] }; disagg: { top: Candidate[] } };
    candidates = [...doc.agg.top, ...doc.disagg.top];
  }, 60_000);

  it('the cases cover several replicas and attention-DP ranks', () => {
    expect(candidates.some((c) => c.mode === 'agg' && c.replicas > 1 && (c.agg?.dp ?? 1) > 1)).toBe(true);
    expect(candidates.some((c) => c.mode === 'disagg' && c.replicas > 1)).toBe(true);
  });

  it('from default --json: batchSize, concurrency and replicas', async () => {
    for (const c of candidates) {
      const layout = c.mode === 'agg'
        ? poolArgs(c.agg!)
        : ['--mode', 'disagg', ...poolArgs(c.prefill!, 'prefill-'), ...poolArgs(c.decode!, 'decode-')];
      const got = await estimate([...layout, '--replicas', String(c.replicas), '--concurrency', String(c.concurrency)]);
      expectSame(got, c.metrics);
    }
  }, 60_000);

  it('from the CSVs: bs, concurrency and replicas (bs/dp_rank and concurrency/replica say what they divide)', async () => {
    const dir = join(saveDir, readdirSync(saveDir)[0]);
    for (const [mode, file] of [['agg', 'agg/best_config_topn.csv'], ['disagg', 'disagg/best_config_topn.csv']] as const) {
      const rows = parseCsv(readFileSync(join(dir, file)), { columns: true }) as Record<string, string>[];
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) {
        expect(Number(row.concurrency)).toBeCloseTo(Number(row['concurrency/replica']) * Number(row.replicas), 0);
        const col = (k: string): string => row[k];
        const layout = mode === 'agg'
          ? ['--tp', col('tp'), '--pp', col('pp'), '--dp', col('dp'), '--moe-tp', col('moe_tp'), '--moe-ep', col('moe_ep'),
            '--batch-size', col('bs'), '--max-num-tokens', col('max_num_tokens')]
          : ['--mode', 'disagg', ...(['prefill', 'decode'] as const).flatMap((role) => {
            const t = role === 'prefill' ? '(p)' : '(d)';
            return [`--${role}-tp`, col(`${t}tp`), `--${role}-pp`, col(`${t}pp`), `--${role}-dp`, col(`${t}dp`),
              `--${role}-moe-tp`, col(`${t}moe_tp`), `--${role}-moe-ep`, col(`${t}moe_ep`), `--${role}-batch-size`, col(`${t}bs`),
              `--${role}-max-num-tokens`, col(`${t}max_num_tokens`), `--${role}-workers`, col(`${t}workers`)];
          })];
        expect(Number(row.bs ?? row['(d)bs'])).toBeGreaterThanOrEqual(Number(row['bs/dp_rank'] ?? row['(d)bs/dp_rank']));
        const got = await estimate([...layout, '--replicas', col('replicas'), '--concurrency', col('concurrency')]);
        expect(got.ttftMs).toBeCloseTo(Number(row.ttft), 1);
        expect(got.tpotMs).toBeCloseTo(Number(row.tpot), 1);
      }
    }
  }, 60_000);

  it('from the plan file: the predicted concurrency is what its layout was priced at', async () => {
    const dir = join(saveDir, readdirSync(saveDir)[0]);
    for (const mode of ['agg', 'disagg'] as const) {
      const plan = YAML.parse(readFileSync(join(dir, mode, 'top1', 'generator_config.yaml'), 'utf8')) as {
        agg?: PlanPool & { replicas: number }; disagg?: { prefill: PlanPool; decode: PlanPool };
        predicted: { concurrency: number; ttft_ms: number; tpot_ms: number; tokens_per_s_per_gpu: number };
        bench: { concurrencies: number[] };
      };
      expect(plan.bench.concurrencies).toContain(plan.predicted.concurrency);
      const pool = (p: PlanPool, prefix = ''): string[] =>
        poolArgs({ ...p, moeTp: p.moe_tp, moeEp: p.moe_ep, batchSize: p.batch_size, maxNumTokens: p.max_num_tokens }, prefix);
      // The plan lists every worker of the deployment (all replicas), as the manifests deploy them.
      const layout = plan.agg
        ? [...pool(plan.agg), '--replicas', String(plan.agg.replicas)]
        : ['--mode', 'disagg', ...pool(plan.disagg!.prefill, 'prefill-'), ...pool(plan.disagg!.decode, 'decode-')];
      const got = await estimate([...layout, '--concurrency', String(plan.predicted.concurrency)]);
      expect(got.tpotMs).toBeCloseTo(plan.predicted.tpot_ms, 0);
      expect(got.tokPerSPerGpu / plan.predicted.tokens_per_s_per_gpu).toBeCloseTo(1, 1);
    }
  }, 60_000);

  it('from generate: the batch per replica and the concurrency over all replicas', async () => {
    const r = await runInProcess([registerGenerate], ['generate', ...WORKLOAD, '--total-gpus', '8', '--ttft', '1000', '--tpot', '20', '--json']);
    expect(r.code).toBe(0);
    const g = JSON.parse(r.stdout) as { layout: Pool; batchSize: number; maxNumTokens: number; replicas: number; metrics: Candidate['metrics'] & { concurrency: number } };
    expect(g.replicas).toBeGreaterThan(1);
    expect(g.metrics.concurrency).toBe(g.batchSize * g.replicas);
    const got = await estimate([...poolArgs({ ...g.layout, batchSize: g.batchSize, maxNumTokens: g.maxNumTokens }), '--replicas', String(g.replicas), '--concurrency', String(g.metrics.concurrency)]);
    expectSame(got, g.metrics);
    const text = await runInProcess([registerGenerate], ['generate', ...WORKLOAD, '--total-gpus', '8', '--ttft', '1000', '--tpot', '20']);
    expect(text.stdout).toContain(`batch size ${g.batchSize},`);
    expect(text.stdout).toContain(`predicted at concurrency ${g.metrics.concurrency} (=${g.batchSize}x${g.replicas})`);
  }, 60_000);
});
