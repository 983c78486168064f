// Gates must not pass on bad data: measured runs with non-finite, zero, negative or absurd numbers are input
// errors (exit 2, one line naming the file and the field), never silently dropped.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInProcess } from '../modes/cli.js';
import { describe, expect, it } from 'vitest';
import { registerCalibrate } from '../../src/cli/commands/calibrate.js';
import { registerValidate } from '../../src/cli/commands/validate.js';
import { importAiperf, parseAiperfCsv, parseAiperfJson, parseAiperfJsonl } from '../../src/inputs/aiperf.js';
import { InputError } from '../../src/util/errors.js';

/** The commands in this process (test/modes/cli.ts runInProcess), with the output names these tests use. */
async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await runInProcess([registerValidate, registerCalibrate], args);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

const stat = (v: number | string) => ({ unit: 'ms', avg: v, p50: v, p90: v, p99: v });
function jsonDoc(over: Record<string, unknown> = {}, concurrency: unknown = 8): string {
  return JSON.stringify({
    time_to_first_token: stat(120),
    inter_token_latency: stat(12),
    request_latency: stat(6000),
    output_token_throughput: { unit: 'tokens/sec', avg: 650 },
    request_throughput: { unit: 'requests/sec', avg: 1.3 },
    input_sequence_length: { unit: 'tokens', avg: 4000 },
    output_sequence_length: { unit: 'tokens', avg: 500 },
    input_config: { loadgen: { concurrency } },
    ...over,
  });
}

describe('AIPerf runs are checked against a schema', () => {
  it('a clean run passes', () => {
    const r = parseAiperfJson(jsonDoc(), '/r/c8/profile_export_aiperf.json');
    expect(r.metrics.ttftMs.avg).toBe(120);
    expect(r.concurrency).toBe(8);
  });

  it.each([
    ['a negative TTFT', { time_to_first_token: stat(-5) }, /time_to_first_token avg is -5/],
    ['a zero ITL', { inter_token_latency: stat(0) }, /inter_token_latency avg is 0/],
    ['a "NaN" latency', { request_latency: stat('NaN') }, /request_latency avg is not a number/],
    ['an "Infinity" throughput', { output_token_throughput: { avg: 'Infinity' } }, /output_token_throughput avg is not a number/],
    ['a negative throughput', { request_throughput: { avg: -1 } }, /request_throughput avg is -1/],
    ['a negative input length', { input_sequence_length: { avg: -4000 } }, /input_sequence_length is -4000/],
  ])('JSON: %s is an input error naming the file and field', (_what, over, msg) => {
    const f = () => parseAiperfJson(jsonDoc(over), '/r/c8/profile_export_aiperf.json');
    expect(f).toThrow(InputError);
    expect(f).toThrow(msg);
    expect(f).toThrow(/^\/r\/c8\/profile_export_aiperf\.json: /);
  });

  it.each([
    [0, /concurrency is 0/],
    [-4, /concurrency is -4/],
    [1e12, /concurrency is 1000000000000; expected a positive integer up to 1000000/],
    [2.5, /concurrency is 2.5/],
  ])('JSON: concurrency %s is rejected', (c, msg) => {
    expect(() => parseAiperfJson(jsonDoc({}, c), 'x/profile_export_aiperf.json')).toThrow(msg);
  });

  it('CSV: a negative or non-numeric cell is rejected with its header', () => {
    const csv = (ttft: string) => `Metric,avg,p50,p90,p99\r\nTime to First Token (ms),${ttft},1,1,1\r\nInter Token Latency (ms),2,2,2,2\r\n`;
    expect(parseAiperfCsv(csv('3'), 'c4/profile_export_aiperf.csv').metrics.ttftMs.avg).toBe(3);
    expect(() => parseAiperfCsv(csv('-3'), 'c4/profile_export_aiperf.csv')).toThrow(/c4\/profile_export_aiperf\.csv: "Time to First Token" avg is -3/);
    expect(() => parseAiperfCsv(csv('abc'), 'c4/profile_export_aiperf.csv')).toThrow(/"Time to First Token" avg is not a number/);
    // A blank cell is absent, not an error.
    expect(parseAiperfCsv(csv(''), 'c4/profile_export_aiperf.csv').metrics.ttftMs.avg).toBeNull();
  });

  it('JSONL: a bad request record is rejected with its line number', () => {
    const rec = (ttft: number) =>
      JSON.stringify({ metadata: { benchmark_phase: 'profiling' }, metrics: { time_to_first_token: { value: ttft, unit: 'ms' }, request_latency: { value: 900, unit: 'ms' } } });
    expect(parseAiperfJsonl([rec(10), rec(12)].join('\n'), 'p.jsonl').metrics.ttftMs.avg).toBe(11);
    expect(() => parseAiperfJsonl([rec(10), rec(-12)].join('\n'), 'p.jsonl')).toThrow(/^p\.jsonl:2: time_to_first_token is -12/);
    expect(() => parseAiperfJsonl([rec(0), rec(12)].join('\n'), 'p.jsonl')).toThrow(/^p\.jsonl:1: time_to_first_token is 0/);
  });

  it('a directory of runs fails on the first bad one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'aiperf-bad-'));
    for (const [c, ttft] of [[4, 100], [8, -100]] as const) {
      mkdirSync(join(dir, `c${c}`));
      writeFileSync(join(dir, `c${c}`, 'profile_export_aiperf.json'), jsonDoc({ time_to_first_token: stat(ttft) }, c));
    }
    expect(() => importAiperf(dir)).toThrow(/c8\/profile_export_aiperf\.json: time_to_first_token avg is -100/);
  });
});

describe('validate --fail-over on bad data', () => {
  it('exits 2 with one line naming the file and field, instead of passing on the remaining values', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'validate-bad-'));
    mkdirSync(join(dir, 'c8'));
    const file = join(dir, 'c8', 'profile_export_aiperf.json');
    writeFileSync(file, jsonDoc({ time_to_first_token: stat(-120), inter_token_latency: stat(0) }));
    const r = await run([
      'validate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--tp', '2', '--isl', '4000', '--osl', '500',
      '--aiperf', dir, '--fail-over', '25',
    ]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toContain(`${file}: time_to_first_token avg is -120`);
    const cal = await run([
      'calibrate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--tp', '2', '--isl', '4000', '--osl', '500',
      '--aiperf', dir, '--out', join(dir, 'profile.yaml'),
    ]);
    expect(cal.code).toBe(2);
    expect(cal.err).toContain('time_to_first_token avg is -120');
  });
});
