import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  aiperfFileKind,
  concurrencyFromPath,
  importAiperf,
  parseAiperfCsv,
  parseAiperfJson,
  parseCsvRows,
  percentile,
} from '../../src/inputs/aiperf.js';
import { InputError } from '../../src/util/errors.js';
import { referencePath } from '../../src/util/paths.js';

const REF = referencePath('aiperf');
if (!existsSync(REF)) console.log(`skipping AIPerf sample tests: ${REF} is absent`);

describe.skipIf(!existsSync(REF))('AIPerf reference samples', () => {
  it('v0.4.0 JSON: flat metric tags, concurrency and lengths from the run', () => {
    const [run] = importAiperf(join(REF, 'v0.4.0-fixture/profile_export_aiperf.json'));
    expect(run.format).toBe('json');
    expect(run.model).toBe('Qwen/Qwen3-0.6B');
    expect(run.concurrency).toBe(1);
    expect(run.concurrencySource).toBe('config');
    expect(run.isl).toBe(100);
    expect(run.osl).toBeCloseTo(199.984375, 9);
    expect(run.requestCount).toBe(64);
    expect(run.errorCount).toBeNull(); // "error_request_count": null
    expect(run.metrics.ttftMs.p50).toBeCloseTo(30.668548, 6);
    expect(run.metrics.ttftMs.avg).toBeCloseTo(30.814987671875, 9);
    expect(run.metrics.tpotMs.p50).toBeCloseTo(18.158001085427134, 9);
    expect(run.metrics.requestLatencyMs.p99).toBeCloseTo(3909.3341161199996, 6);
    expect(run.metrics.tokPerSPerUser.p50).toBeCloseTo(55.07214394940726, 9);
    expect(run.metrics.outputTokPerS).toEqual({ avg: 50.08213863971112, p50: null, p90: null, p99: null });
    expect(run.metrics.requestsPerS.avg).toBeCloseTo(0.2504302580624667, 12);
    expect(run.durationS).toBeCloseTo(255.560172701, 6);
  });

  it('v0.4.0 JSONL: per-request records aggregated (10 records in the fixture)', () => {
    const [run] = importAiperf(join(REF, 'v0.4.0-fixture/profile_export.jsonl'));
    expect(run.format).toBe('jsonl');
    expect(run.requestCount).toBe(10);
    expect(run.errorCount).toBe(0);
    expect(run.isl).toBe(100);
    expect(run.osl).toBe(200);
    // Mean and median of the ten time_to_first_token values; mean ITL and latency.
    expect(run.metrics.ttftMs.avg).toBeCloseTo(31.2755395, 6);
    expect(run.metrics.ttftMs.p50).toBeCloseTo(31.4261615, 6);
    expect(run.metrics.tpotMs.avg).toBeCloseTo(18.082249397, 6);
    expect(run.metrics.requestLatencyMs.avg).toBeCloseTo(3629.6431695, 4);
    // Sequential requests at concurrency 1: at most one in flight.
    expect(run.concurrency).toBe(1);
    expect(run.concurrencySource).toBe('inferred');
    // Throughput over the span of the requests: same order as the full run's 50.08 tok/s.
    expect(run.metrics.outputTokPerS.avg).toBeGreaterThan(45);
    expect(run.metrics.outputTokPerS.avg).toBeLessThan(56);
  });

  it('legacy (pre-v0.2) JSON: metrics under "records", old tags (ttft)', () => {
    const [run] = importAiperf(join(REF, 'legacy-pr325-run1/profile_export_aiperf.json'));
    expect(run.format).toBe('json-legacy');
    expect(run.model).toBe('openai/gpt-oss-20b');
    expect(run.concurrency).toBe(100);
    expect(run.isl).toBe(550);
    expect(run.requestCount).toBe(89);
    expect(run.errorCount).toBe(11);
    expect(run.metrics.ttftMs.avg).toBeCloseTo(2343.219436988764, 9);
    expect(run.metrics.ttftMs.p90).toBeCloseTo(3796.9311679999996, 6);
    expect(run.metrics.requestLatencyMs.p50).toBeCloseTo(9097.345015, 6);
  });

  it('legacy CSV (CRLF, no p10) agrees with its JSON to the printed 2 decimals', () => {
    const [csv] = importAiperf(join(REF, 'legacy-pr325-run1/profile_export_aiperf.csv'));
    const [json] = importAiperf(join(REF, 'legacy-pr325-run1/profile_export_aiperf.json'));
    expect(csv.format).toBe('csv');
    for (const m of ['ttftMs', 'tpotMs', 'requestLatencyMs', 'tokPerSPerUser'] as const) {
      for (const s of ['avg', 'p50', 'p90', 'p99'] as const) {
        expect(Math.abs((csv.metrics[m][s] as number) - (json.metrics[m][s] as number))).toBeLessThanOrEqual(0.0051);
      }
    }
    expect(csv.metrics.outputTokPerS.avg).toBe(2320.72);
    expect(csv.metrics.requestsPerS.avg).toBe(9.55);
    expect(csv.requestCount).toBe(89);
    expect(csv.errorCount).toBe(11);
    expect(csv.isl).toBe(550);
    expect(csv.concurrency).toBeNull(); // the CSV does not record it
  });

  it('2026 CSV: columns read by name despite the added "sum" and new rows', () => {
    const [run] = importAiperf(join(REF, 'newer-csv-2026/profile_export_aiperf.csv'));
    expect(run.metrics.ttftMs).toEqual({ avg: 1.68, p50: 1.4, p90: 2.76, p99: 5.94 });
    expect(run.metrics.tpotMs).toEqual({ avg: 0.01, p50: 0.01, p90: 0.02, p99: 0.41 });
    expect(run.metrics.requestLatencyMs).toEqual({ avg: 3.1, p50: 2.02, p90: 4.4, p99: 41.73 });
    expect(run.metrics.tokPerSPerUser.p50).toBe(163343.98);
    expect(run.metrics.outputTokPerS.avg).toBe(696705.85);
    expect(run.metrics.requestsPerS.avg).toBe(6898.08);
    expect(run.isl).toBe(128);
    expect(run.osl).toBe(101);
    expect(run.requestCount).toBe(1000000);
    expect(run.durationS).toBe(144.97);
  });

  it('a directory gives one run per artifact folder, JSON preferred, ordered by concurrency', () => {
    const runs = importAiperf(REF);
    expect(runs.map((r) => [r.label, r.format, r.concurrency])).toEqual([
      ['v0.4.0-fixture', 'json', 1],
      ['legacy-pr325-run1', 'json-legacy', 100],
      ['newer-csv-2026', 'csv', null],
    ]);
  });
});

describe('CSV parsing', () => {
  it('handles quotes, escaped quotes, CRLF and blank separator lines', () => {
    const rows = parseCsvRows('a,"b,c","d ""e"""\r\n\r\n1,2\r\n');
    expect(rows).toEqual([['a', 'b,c', 'd "e"'], [], ['1', '2']]);
  });

  it('reads columns by header name, whatever their order, and empty cells as null', () => {
    const text = [
      'Metric,p99,p50,avg,p90',
      '"Time to First Token (ms)",40,20,25,30',
      'Inter Token Latency (ms),,5,6,',
      '',
      'Metric,Value',
      'Request Throughput (requests/sec),3.5',
      '',
      '',
      'Endpoint,GPU_Index,Metric,avg',
      'localhost:9400,0,GPU Power Usage (W),300',
    ].join('\r\n');
    const run = parseAiperfCsv(text, '/runs/concurrency32/profile_export_aiperf.csv');
    expect(run.metrics.ttftMs).toEqual({ avg: 25, p50: 20, p90: 30, p99: 40 });
    expect(run.metrics.tpotMs).toEqual({ avg: 6, p50: 5, p90: null, p99: null });
    expect(run.metrics.requestsPerS.avg).toBe(3.5);
    expect(run.metrics.requestLatencyMs.avg).toBeNull();
    expect(run.concurrency).toBe(32);
    expect(run.concurrencySource).toBe('directory');
  });

  it('rejects a file without a Metric section', () => {
    expect(() => parseAiperfCsv('x,y\r\n1,2\r\n', 'f.csv')).toThrow(InputError);
  });
});

describe('JSON parsing', () => {
  it('absent keys are null, time units converted to ms', () => {
    const run = parseAiperfJson(
      JSON.stringify({ time_to_first_token: { unit: 'ns', avg: 2e6, p50: 1e6 }, input_config: { loadgen: { concurrency: 8 } } }),
      '/x/profile_export_aiperf.json',
    );
    expect(run.metrics.ttftMs).toEqual({ avg: 2, p50: 1, p90: null, p99: null });
    expect(run.metrics.tpotMs.avg).toBeNull();
    expect(run.concurrency).toBe(8);
    expect(run.isl).toBeNull();
  });

  it('rejects non-AIPerf JSON with a one-line input error', () => {
    expect(() => parseAiperfJson('{"foo": 1}', 'f.json')).toThrow(/no AIPerf metrics/);
    expect(() => parseAiperfJson('{', 'f.json')).toThrow(InputError);
  });
});

describe('files and directories', () => {
  it('finds exports recursively, skips other files, takes concurrency from c<N> folders', () => {
    const dir = mkdtempSync(join(tmpdir(), 'aiperf-'));
    for (const c of [64, 8]) {
      const d = join(dir, 'bench', `c${c}`);
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, 'profile_export_aiperf.csv'), `Metric,avg,p50,p90,p99\r\nTime to First Token (ms),${c},${c},${c},${c}\r\n`);
      writeFileSync(join(d, 'gpu_telemetry_export.jsonl'), '{}\n');
      writeFileSync(join(d, 'inputs.json'), '{}');
    }
    const runs = importAiperf(dir);
    expect(runs.map((r) => [r.label, r.concurrency, r.metrics.ttftMs.avg])).toEqual([
      ['c8', 8, 8],
      ['c64', 64, 64],
    ]);
  });

  it('names what is wrong with a bad path', () => {
    expect(() => importAiperf('/nonexistent/run')).toThrow(/no such file or directory/);
    const dir = mkdtempSync(join(tmpdir(), 'aiperf-empty-'));
    expect(() => importAiperf(dir)).toThrow(/no AIPerf exports found/);
    writeFileSync(join(dir, 'notes.txt'), 'x');
    expect(() => importAiperf(join(dir, 'notes.txt'))).toThrow(/unknown file type/);
  });

  it('recognises export names and concurrency folder names', () => {
    expect(aiperfFileKind('profile_export_aiperf.json')).toBe('json');
    expect(aiperfFileKind('profile_export_aiperf_timeslices.json')).toBeNull();
    expect(aiperfFileKind('profile_export_raw.jsonl')).toBeNull();
    expect(aiperfFileKind('profile_export.jsonl')).toBe('jsonl');
    expect(concurrencyFromPath('Qwen_Qwen3-0.6B-openai-chat-concurrency16')).toBe(16);
    expect(concurrencyFromPath('bench/c128')).toBe(128);
    expect(concurrencyFromPath('v0.4.0-fixture')).toBeNull();
  });

  it('percentiles interpolate linearly like numpy', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5);
    expect(percentile([10, 20, 30, 40, 50], 90)).toBe(46);
    expect(percentile([], 50)).toBeNull();
  });
});
