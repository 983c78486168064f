// Importer for measured AIPerf runs: profile_export_aiperf.json (v0.1 "records" layout and the flat v0.2+
// layout), the sectioned profile_export_aiperf.csv (read by column name, CRLF) and profile_export.jsonl
// (one record per request, aggregated here). Absent keys read as null.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { z } from 'zod';
import { InputError } from '../util/errors.js';
import { isObj, type JsonObject } from '../util/json.js';

/** One statistic set; single-value metrics (throughputs) carry only `avg`. */
export interface Stat {
  avg: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

export const AIPERF_METRICS = ['ttftMs', 'tpotMs', 'requestLatencyMs', 'outputTokPerS', 'requestsPerS', 'tokPerSPerUser'] as const;
export type AiperfMetric = (typeof AIPERF_METRICS)[number];

export type AiperfFormat = 'json' | 'json-legacy' | 'csv' | 'jsonl';

export interface AiperfRun {
  /** File the numbers came from. */
  source: string;
  format: AiperfFormat;
  /** Short name for reports: the run's directory name. */
  label: string;
  model: string | null;
  /** Closed-loop client concurrency of the run. */
  concurrency: number | null;
  /** Where `concurrency` came from: the run's recorded config, its directory name (c128), or request overlap. */
  concurrencySource: 'config' | 'directory' | 'inferred' | null;
  /** Mean input / output tokens per request, as measured (falls back to the requested means). */
  isl: number | null;
  osl: number | null;
  requestCount: number | null;
  errorCount: number | null;
  durationS: number | null;
  /** TTFT, TPOT (AIPerf's inter-token latency), request latency (ms); output tokens/s and requests/s of the
   * whole run; output tokens/s per user. */
  metrics: Record<AiperfMetric, Stat>;
}

const NULL_STAT: Stat = { avg: null, p50: null, p90: null, p99: null };

function emptyMetrics(): Record<AiperfMetric, Stat> {
  return Object.fromEntries(AIPERF_METRICS.map((m) => [m, { ...NULL_STAT }])) as Record<AiperfMetric, Stat>;
}

/**
 * A number from a JSON value or CSV cell; null when absent or blank. A value that is present but not a finite
 * number ("NaN", "inf", "abc") comes back as NaN, so the run's schema rejects it instead of dropping it.
 */
function num(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : NaN;
  if (typeof v === 'string') {
    if (v.trim() === '') return null;
    const n = Number(v);
    return Number.isFinite(n) ? n : NaN;
  }
  return NaN;
}

/** Factor to milliseconds for time units; 1 for anything else (tokens, rates). */
function toMs(unit: string | null | undefined): number {
  switch ((unit ?? '').toLowerCase()) {
    case 'ns':
      return 1e-6;
    case 'us':
      return 1e-3;
    case 's':
    case 'sec':
      return 1e3;
    default:
      return 1;
  }
}

function scaleStat(s: Stat, f: number): Stat {
  const m = (v: number | null) => (v === null ? null : v * f);
  return { avg: m(s.avg), p50: m(s.p50), p90: m(s.p90), p99: m(s.p99) };
}

// Metric tags (JSON) and headers (CSV) that feed each field. Old and new spellings both listed.
const JSON_TAGS: Record<AiperfMetric, string[]> = {
  ttftMs: ['time_to_first_token', 'ttft'],
  tpotMs: ['inter_token_latency', 'itl'],
  requestLatencyMs: ['request_latency'],
  outputTokPerS: ['output_token_throughput'],
  requestsPerS: ['request_throughput'],
  tokPerSPerUser: ['output_token_throughput_per_user'],
};
const CSV_HEADERS: Record<AiperfMetric, string> = {
  ttftMs: 'Time to First Token',
  tpotMs: 'Inter Token Latency',
  requestLatencyMs: 'Request Latency',
  outputTokPerS: 'Output Token Throughput',
  requestsPerS: 'Request Throughput',
  tokPerSPerUser: 'Output Token Throughput Per User',
};
const TIME_METRICS = new Set<AiperfMetric>(['ttftMs', 'tpotMs', 'requestLatencyMs']);

function baseRun(source: string, format: AiperfFormat): AiperfRun {
  return {
    source,
    format,
    label: basename(dirname(source)),
    model: null,
    concurrency: null,
    concurrencySource: null,
    isl: null,
    osl: null,
    requestCount: null,
    errorCount: null,
    durationS: null,
    metrics: emptyMetrics(),
  };
}

/** `c128`, `conc128`, `concurrency128` or `..._concurrency128` as the last path segment. */
export function concurrencyFromPath(path: string): number | null {
  const m = /(?:^|[-_.])c(?:onc(?:urrency)?)?[-_]?(\d+)$/i.exec(basename(path));
  return m ? Number(m[1]) : null;
}

function applyDirectoryConcurrency(run: AiperfRun): void {
  if (run.concurrency !== null) return;
  const c = concurrencyFromPath(dirname(run.source));
  if (c !== null && c > 0) {
    run.concurrency = c;
    run.concurrencySource = 'directory';
  }
}

// ---------- the run's schema ----------

/** Above these a run is not a measurement of one deployment (a typo, or a unit written as a count). */
export const AIPERF_LIMITS = { concurrency: 1_000_000, tokens: 10_000_000, ms: 1e9, perS: 1e12 } as const;

const positive = (max: number) => z.number().positive().max(max).nullable();
const statSchema = (max: number) => z.object({ avg: positive(max), p50: positive(max), p90: positive(max), p99: positive(max) });

/**
 * What a measured run must satisfy before anything compares or fits it: every number finite, latencies and
 * throughputs positive, concurrency a positive integer, lengths and counts not negative, all within
 * AIPERF_LIMITS. Absent values (null) are allowed; a present zero, negative or non-number is not.
 */
export const aiperfRunSchema = z.object({
  concurrency: z.number().int().positive().max(AIPERF_LIMITS.concurrency).nullable(),
  isl: z.number().min(0).max(AIPERF_LIMITS.tokens).nullable(),
  osl: z.number().min(0).max(AIPERF_LIMITS.tokens).nullable(),
  requestCount: z.number().min(0).nullable(),
  errorCount: z.number().min(0).nullable(),
  durationS: positive(AIPERF_LIMITS.ms),
  metrics: z.object({
    ttftMs: statSchema(AIPERF_LIMITS.ms),
    tpotMs: statSchema(AIPERF_LIMITS.ms),
    requestLatencyMs: statSchema(AIPERF_LIMITS.ms),
    outputTokPerS: statSchema(AIPERF_LIMITS.perS),
    requestsPerS: statSchema(AIPERF_LIMITS.perS),
    tokPerSPerUser: statSchema(AIPERF_LIMITS.perS),
  }),
});

/** How a field is named in the file it came from (AIPerf's metric tag or CSV header), for error messages. */
function fieldName(run: AiperfRun, path: PropertyKey[]): string {
  const [head, metric, stat] = path.map(String);
  if (head === 'metrics' && metric in CSV_HEADERS) {
    const name = run.format === 'csv' ? `"${CSV_HEADERS[metric as AiperfMetric]}"` : JSON_TAGS[metric as AiperfMetric][0];
    return stat ? `${name} ${stat}` : name;
  }
  const names: Record<string, string> = {
    concurrency: run.concurrencySource === 'directory' ? 'concurrency (from the directory name)' : 'concurrency',
    isl: 'input_sequence_length',
    osl: 'output_sequence_length',
    requestCount: 'request_count',
    errorCount: 'error_request_count',
    durationS: 'benchmark_duration',
  };
  return names[head] ?? path.join('.');
}

function describeValue(v: unknown): string {
  return typeof v === 'number' && Number.isNaN(v) ? 'not a number' : String(v);
}

/** The run, or an InputError naming the file and the first field out of range. */
export function checkRun(run: AiperfRun): AiperfRun {
  const parsed = aiperfRunSchema.safeParse(run);
  if (parsed.success) return run;
  const issue = parsed.error.issues[0];
  let value: unknown = run;
  for (const k of issue.path) value = (value as Record<PropertyKey, unknown>)[k];
  const want = issue.path[0] === 'concurrency' ? `a positive integer up to ${AIPERF_LIMITS.concurrency}` : issue.path[0] === 'metrics' || issue.path[0] === 'durationS' ? 'a positive finite number' : 'a finite number, not negative';
  throw new InputError(`${run.source}: ${fieldName(run, issue.path)} is ${describeValue(value)}; expected ${want} (${issue.message})`);
}

// ---------- JSON (aggregate) ----------

function dig(o: unknown, keys: string[]): unknown {
  let cur = o;
  for (const k of keys) {
    if (!isObj(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

function jsonStat(entry: unknown): { stat: Stat; unit: string | null } | null {
  if (!isObj(entry)) return null;
  return {
    stat: { avg: num(entry.avg), p50: num(entry.p50), p90: num(entry.p90), p99: num(entry.p99) },
    unit: typeof entry.unit === 'string' ? entry.unit : null,
  };
}

export function parseAiperfJson(text: string, source: string): AiperfRun {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new InputError(`${source}: not valid JSON (${(e as Error).message}); expected an AIPerf profile_export_aiperf.json`);
  }
  if (!isObj(doc)) throw new InputError(`${source}: expected a JSON object (AIPerf profile_export_aiperf.json)`);
  const legacy = isObj(doc.records);
  const metrics: JsonObject = legacy ? (doc.records as JsonObject) : doc;
  const run = baseRun(source, legacy ? 'json-legacy' : 'json');
  const get = (tags: string[]) => {
    for (const t of tags) {
      const s = jsonStat(metrics[t]);
      if (s) return s;
    }
    return null;
  };
  let found = 0;
  for (const m of AIPERF_METRICS) {
    const s = get(JSON_TAGS[m]);
    if (!s) continue;
    found++;
    run.metrics[m] = TIME_METRICS.has(m) ? scaleStat(s.stat, toMs(s.unit ?? 'ms')) : s.stat;
  }
  if (found === 0) {
    throw new InputError(`${source}: no AIPerf metrics found (looked for time_to_first_token, inter_token_latency, request_latency, ...)`);
  }
  run.isl = get(['input_sequence_length'])?.stat.avg ?? null;
  run.osl = get(['output_sequence_length'])?.stat.avg ?? null;
  run.requestCount = get(['request_count'])?.stat.avg ?? null;
  run.errorCount = get(['error_request_count'])?.stat.avg ?? null;
  const dur = get(['benchmark_duration']);
  run.durationS = dur?.stat.avg != null ? (dur.stat.avg * toMs(dur.unit ?? 'sec')) / 1000 : null;

  const cfg = doc.input_config;
  const models = dig(cfg, ['endpoint', 'model_names']);
  run.model = Array.isArray(models) && typeof models[0] === 'string' ? models[0] : null;
  const conc = num(dig(cfg, ['loadgen', 'concurrency']));
  // Any recorded value is kept: a zero, negative or absurd concurrency is rejected by the run's schema.
  if (conc !== null) {
    run.concurrency = conc;
    run.concurrencySource = 'config';
  }
  // Requested lengths when the measured ones are missing.
  run.isl ??= num(dig(cfg, ['input', 'prompt', 'input_tokens', 'mean']));
  run.osl ??= num(dig(cfg, ['input', 'prompt', 'output_tokens', 'mean']));
  applyDirectoryConcurrency(run);
  return checkRun(run);
}

// ---------- CSV (sectioned) ----------

/**
 * RFC 4180 rows (quoted fields with "" escapes, CRLF or LF, rows of any width) via csv-parse; empty lines come
 * back as []. Throws InputError on malformed quoting, e.g. a quote that never closes.
 */
export function parseCsvRows(text: string): string[][] {
  let records: Array<{ record: string[]; raw: string }>;
  try {
    // Sections differ in width; stray quotes inside unquoted cells are kept as text. (The `as unknown`:
    // csv-parse's typings do not model `raw: true` records.)
    records = parse(text, {
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: false,
      record_delimiter: ['\r\n', '\n', '\r'],
      raw: true,
    }) as unknown as Array<{ record: string[]; raw: string }>;
  } catch (e) {
    throw new InputError(`CSV: ${(e as Error).message}`);
  }
  // csv-parse reads an empty line as one empty cell; its raw text tells it from a quoted empty cell ("").
  return records.map(({ record, raw }) => (record.length === 1 && raw.replace(/[\r\n]+$/, '') === '' ? [] : record));
}

/** "Time to First Token (ms)" -> { name: "Time to First Token", unit: "ms" }. */
function splitHeader(cell: string): { name: string; unit: string | null } {
  const m = /^(.*?)(?: \(([^()]*)\))?$/.exec(cell.trim());
  return { name: m?.[1] ?? cell.trim(), unit: m?.[2] ?? null };
}

export function parseAiperfCsv(text: string, source: string): AiperfRun {
  let rows: string[][];
  try {
    rows = parseCsvRows(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    throw new InputError(`${source}: ${(e as Error).message}`);
  }
  // Sections are separated by blank lines; each starts with a header row whose first cell is "Metric" or "Endpoint".
  const sections: string[][][] = [];
  let cur: string[][] | null = null;
  for (const r of rows) {
    if (r.length === 0 || (r.length === 1 && r[0].trim() === '')) {
      cur = null;
      continue;
    }
    if (!cur) {
      cur = [];
      sections.push(cur);
    }
    cur.push(r);
  }
  const dist = new Map<string, { stat: Stat; unit: string | null }>();
  const single = new Map<string, { value: number | null; unit: string | null }>();
  for (const sec of sections) {
    const header = sec[0].map((h) => h.trim().toLowerCase());
    if (header[0] !== 'metric') continue; // GPU telemetry section starts with "Endpoint"
    const col = (name: string) => header.indexOf(name);
    const iValue = col('value');
    for (const r of sec.slice(1)) {
      const { name, unit } = splitHeader(r[0] ?? '');
      const cell = (i: number) => (i >= 0 ? num(r[i]) : null);
      if (iValue >= 0 && col('avg') < 0) {
        single.set(name, { value: cell(iValue), unit });
      } else {
        dist.set(name, { stat: { avg: cell(col('avg')), p50: cell(col('p50')), p90: cell(col('p90')), p99: cell(col('p99')) }, unit });
      }
    }
  }
  if (dist.size === 0 && single.size === 0) {
    throw new InputError(`${source}: no "Metric,..." section found; expected an AIPerf profile_export_aiperf.csv`);
  }
  const run = baseRun(source, 'csv');
  for (const m of AIPERF_METRICS) {
    const name = CSV_HEADERS[m];
    const d = dist.get(name);
    const s = single.get(name);
    if (d) run.metrics[m] = TIME_METRICS.has(m) ? scaleStat(d.stat, toMs(d.unit ?? 'ms')) : d.stat;
    else if (s) run.metrics[m] = { ...NULL_STAT, avg: s.value === null ? null : s.value * (TIME_METRICS.has(m) ? toMs(s.unit) : 1) };
  }
  run.isl = dist.get('Input Sequence Length')?.stat.avg ?? null;
  run.osl = dist.get('Output Sequence Length')?.stat.avg ?? null;
  run.requestCount = single.get('Request Count')?.value ?? null;
  run.errorCount = single.get('Error Request Count')?.value ?? null;
  const dur = single.get('Benchmark Duration');
  run.durationS = dur?.value != null ? (dur.value * toMs(dur.unit ?? 'sec')) / 1000 : null;
  applyDirectoryConcurrency(run);
  return checkRun(run);
}

// ---------- JSONL (per request) ----------

/** Linear-interpolated percentile of sorted values (numpy's default, as AIPerf uses). */
export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

function statOf(values: number[]): Stat {
  if (values.length === 0) return { ...NULL_STAT };
  const s = [...values].sort((a, b) => a - b);
  return { avg: s.reduce((a, b) => a + b, 0) / s.length, p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99) };
}

/** Largest number of requests in flight at once. */
function maxOverlap(spans: Array<[number, number]>): number {
  const events: Array<[number, number]> = [];
  for (const [a, b] of spans) events.push([a, 1], [b, -1]);
  // Ends before starts at the same instant: a closed loop starts the next request as the last one ends.
  events.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let cur = 0;
  let best = 0;
  for (const [, d] of events) {
    cur += d;
    best = Math.max(best, cur);
  }
  return best;
}

export function parseAiperfJsonl(text: string, source: string): AiperfRun {
  const run = baseRun(source, 'jsonl');
  const acc: Record<string, number[]> = { ttft: [], itl: [], lat: [], tpu: [], isl: [], osl: [] };
  const spans: Array<[number, number]> = [];
  let errors = 0;
  let lineNo = 0;
  for (const line of text.split(/\r?\n/)) {
    lineNo++;
    if (line.trim() === '') continue;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      throw new InputError(`${source}:${lineNo}: not a JSON record; expected AIPerf profile_export.jsonl (one request per line)`);
    }
    if (!isObj(rec) || !isObj(rec.metrics)) {
      throw new InputError(`${source}:${lineNo}: no "metrics" object; expected AIPerf profile_export.jsonl records`);
    }
    const meta = isObj(rec.metadata) ? rec.metadata : {};
    const phase = meta.benchmark_phase ?? meta.credit_phase;
    if (typeof phase === 'string' && phase !== 'profiling') continue; // skip warmup
    if (rec.error != null || meta.was_cancelled === true) {
      errors++;
      continue;
    }
    const metrics = rec.metrics;
    const value = (tags: string[]) => {
      for (const t of tags) {
        const e = metrics[t];
        if (isObj(e) && num(e.value) !== null) return { v: num(e.value) as number, unit: typeof e.unit === 'string' ? e.unit : null };
      }
      return null;
    };
    const push = (key: string, tags: string[], time: boolean) => {
      const x = value(tags);
      if (!x) return;
      // Latencies and rates must be positive, lengths not negative; one bad record would skew the run's mean.
      const ok = Number.isFinite(x.v) && (key === 'isl' || key === 'osl' ? x.v >= 0 : x.v > 0);
      if (!ok) throw new InputError(`${source}:${lineNo}: ${tags[0]} is ${describeValue(x.v)}; expected a ${key === 'isl' || key === 'osl' ? 'finite number, not negative' : 'positive finite number'}`);
      acc[key].push(time ? x.v * toMs(x.unit ?? 'ms') : x.v);
    };
    push('ttft', JSON_TAGS.ttftMs, true);
    push('itl', JSON_TAGS.tpotMs, true);
    push('lat', JSON_TAGS.requestLatencyMs, true);
    push('tpu', JSON_TAGS.tokPerSPerUser, false);
    push('isl', ['input_sequence_length'], false);
    push('osl', ['output_sequence_length'], false);
    const start = num(meta.request_start_ns ?? meta.timestamp_ns);
    const end = num(meta.request_end_ns);
    if (start !== null && end !== null && end >= start) spans.push([start, end]);
  }
  const ok = acc.lat.length || acc.ttft.length;
  if (!ok) throw new InputError(`${source}: no successful requests with metrics; expected AIPerf profile_export.jsonl`);
  run.metrics.ttftMs = statOf(acc.ttft);
  run.metrics.tpotMs = statOf(acc.itl);
  run.metrics.requestLatencyMs = statOf(acc.lat);
  run.metrics.tokPerSPerUser = statOf(acc.tpu);
  run.isl = statOf(acc.isl).avg;
  run.osl = statOf(acc.osl).avg;
  run.requestCount = Math.max(acc.lat.length, acc.ttft.length);
  run.errorCount = errors;
  if (spans.length > 0) {
    // Timestamps exceed 2^53 ns; the rounding (~0.3 us) is irrelevant for a duration in seconds.
    // A loop, not Math.min(...spans): a long run has more requests than a call takes arguments.
    let t0 = Infinity;
    let t1 = -Infinity;
    for (const [a, b] of spans) {
      t0 = Math.min(t0, a);
      t1 = Math.max(t1, b);
    }
    const durS = (t1 - t0) / 1e9;
    if (durS > 0) {
      run.durationS = durS;
      run.metrics.requestsPerS = { ...NULL_STAT, avg: spans.length / durS };
      const totalOut = acc.osl.reduce((a, b) => a + b, 0);
      if (acc.osl.length > 0) run.metrics.outputTokPerS = { ...NULL_STAT, avg: totalOut / durS };
    }
  }
  applyDirectoryConcurrency(run);
  if (run.concurrency === null && spans.length > 0) {
    run.concurrency = maxOverlap(spans);
    run.concurrencySource = 'inferred';
  }
  return checkRun(run);
}

// ---------- files and directories ----------

type Kind = 'json' | 'csv' | 'jsonl';

/** Which AIPerf export a file name denotes; null for the other files of an artifact directory. */
export function aiperfFileKind(name: string): Kind | null {
  const n = name.toLowerCase();
  if (/(timeslices|telemetry|server_metrics|_raw|inputs)[^/]*$/.test(n)) return null;
  if (n.endsWith('.jsonl')) return 'jsonl';
  if (n.endsWith('aiperf.json') || n === 'profile_export.json') return 'json';
  if (n.endsWith('aiperf.csv') || n === 'profile_export.csv') return 'csv';
  return null;
}

function parseFile(file: string, kind: Kind): AiperfRun {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError(`--aiperf ${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  if (kind === 'json') return parseAiperfJson(text, file);
  if (kind === 'csv') return parseAiperfCsv(text, file);
  return parseAiperfJsonl(text, file);
}

function kindOfExplicitFile(file: string): Kind {
  const n = file.toLowerCase();
  if (n.endsWith('.jsonl')) return 'jsonl';
  if (n.endsWith('.json')) return 'json';
  if (n.endsWith('.csv')) return 'csv';
  throw new InputError(`--aiperf ${file}: unknown file type; accepted: AIPerf .json, .csv or .jsonl exports, or a directory holding them`);
}

const PREFERENCE: Kind[] = ['json', 'csv', 'jsonl']; // JSON has full precision and the run's config

function walk(dir: string, out: Map<string, Map<Kind, string>>): void {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    throw new InputError(`--aiperf ${dir}: cannot list directory (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile()) {
      const kind = aiperfFileKind(e.name);
      if (!kind) continue;
      const byKind = out.get(dir) ?? new Map<Kind, string>();
      if (!byKind.has(kind)) byKind.set(kind, p);
      out.set(dir, byKind);
    }
  }
}

function sortRuns(runs: AiperfRun[]): AiperfRun[] {
  return runs.sort((a, b) => (a.concurrency ?? Infinity) - (b.concurrency ?? Infinity) || a.source.localeCompare(b.source));
}

/**
 * Import AIPerf results from a file or a directory. A directory is searched recursively and gives one run per
 * artifact directory (a concurrency sweep gives several), preferring the JSON export, then the CSV, then the
 * per-request JSONL. Runs come back ordered by concurrency.
 */
export function importAiperf(path: string): AiperfRun[] {
  let st;
  try {
    st = statSync(path);
  } catch {
    throw new InputError(`--aiperf ${path}: no such file or directory`);
  }
  if (st.isFile()) return [parseFile(path, kindOfExplicitFile(path))];
  const found = new Map<string, Map<Kind, string>>();
  walk(path, found);
  const runs: AiperfRun[] = [];
  for (const byKind of found.values()) {
    const kind = PREFERENCE.find((k) => byKind.has(k)) as Kind;
    runs.push(parseFile(byKind.get(kind) as string, kind));
  }
  if (runs.length === 0) {
    throw new InputError(`--aiperf ${path}: no AIPerf exports found (profile_export_aiperf.json, profile_export_aiperf.csv or profile_export.jsonl)`);
  }
  return sortRuns(runs);
}

/** Import several paths; runs keep the order of the paths, each sorted by concurrency. */
export function importAiperfAll(paths: string[]): AiperfRun[] {
  return paths.flatMap((p) => importAiperf(p));
}
