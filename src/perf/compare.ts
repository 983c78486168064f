// Compare two perf-table directories row by row (e.g. measured vs synthesized): for each table and each
// combination of its categorical columns (dtype, kv_dtype, op, kind, collective), the rows present in both
// are joined on their key columns and the relative error of B against A is summarised.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { parse as parseYaml } from 'yaml';
import { InputError } from '../util/errors.js';
import { loadSystem } from '../inputs/systems.js';
import { buildGrids, OpTable } from './grid.js';
import { peaksOf, type Peaks } from './sol.js';
import { OP_SPECS, PACKED_FILE, packedAsCsv, parseCsv, type OpName, type Row } from './tables.js';

export const LATENCY_COLUMN = 'latency_ms';

/** One CSV of our table format, read as strings (numeric columns are canonicalised for joining). */
export interface CsvTable {
  header: string[];
  rows: Record<string, string>[];
}

export interface ErrorStats {
  /** Rows joined (present in both directories). */
  count: number;
  /** Median of |B - A| / A, in percent. */
  medianAbsPct: number;
  /** 90th percentile of |B - A| / A, in percent. */
  p90AbsPct: number;
  /** Median of (B - A) / A, in percent: positive when B is slower than A. */
  biasPct: number;
  /** Largest |B - A| / A, in percent. */
  maxAbsPct: number;
}

export interface CompareGroup extends ErrorStats {
  /** Table name (file name without .csv): gemm, context_attention, ... */
  op: string;
  /** The categorical key values of this group, e.g. "bfloat16" or "nccl/bfloat16"; "" when the table has none. */
  group: string;
  /** Of `count`, rows whose B latency was interpolated from B's table (only with `interpolate`). */
  interpolated: number;
  /** Rows only in A (no exact key match in B, and none interpolated), and only in B. */
  onlyA: number;
  onlyB: number;
}

export interface TableMeta {
  [key: string]: unknown;
}

export interface CompareReport {
  dirA: string;
  dirB: string;
  metaA: TableMeta | null;
  metaB: TableMeta | null;
  /** How the error is defined, for readers of --json output. */
  errorDefinition: string;
  groups: CompareGroup[];
  /** Over every joined row of every table. */
  overall: ErrorStats;
  /** Tables present in only one directory, header mismatches, unreadable rows. */
  notes: string[];
  /** The system whose roofline guided interpolation, when `interpolate` was on. */
  interpolationSystem: string | null;
}

export interface CompareOptions {
  /**
   * Estimate B at A's rows that B lacks, with the table lookup the planner uses (log-space interpolation,
   * roofline transfer outside B's grid). Needs a system: `system`, else B's or A's meta.yaml `system`.
   */
  interpolate?: boolean;
  system?: string;
}

/** Read one of our CSVs: header row, comma-separated cells, `#` comment lines and blank lines ignored. */
export function parseTableCsv(text: string, source: string): CsvTable {
  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    // Any header is accepted (the tables differ), so the generic parser, not tables.ts's per-op reader.
    // (The `as unknown`: csv-parse's typings do not model `info: true` records.)
    records = parse(text, {
      trim: true,
      comment: '#',
      comment_no_infix: true,
      skip_empty_lines: true,
      relax_column_count: true,
      relax_quotes: true,
      info: true,
      // Line endings may mix (files edited on different systems).
      record_delimiter: ['\r\n', '\n'],
    }) as unknown as Array<{ record: string[]; info: { lines: number } }>;
  } catch (e) {
    throw new InputError(`${source}: ${(e as Error).message}`);
  }
  let header: string[] | null = null;
  const rows: Record<string, string>[] = [];
  for (const { record: cells, info } of records) {
    if (!header) {
      header = cells;
      if (!header.includes(LATENCY_COLUMN)) throw new InputError(`${source}: header lacks a ${LATENCY_COLUMN} column`);
      continue;
    }
    const h: string[] = header;
    if (cells.length !== h.length)
      throw new InputError(`${source}:${info.lines}: expected ${h.length} cells (${h.join(',')}), got ${cells.length}`);
    const row: Record<string, string> = {};
    h.forEach((name, j) => (row[name] = cells[j]));
    rows.push(row);
  }
  return { header: header ?? [], rows };
}

function isNumeric(v: string): boolean {
  return v !== '' && Number.isFinite(Number(v));
}

/** "4096.0" and "4096" are the same key. */
function canon(v: string): string {
  return isNumeric(v) ? String(Number(v)) : v;
}

/** Linear-interpolated quantile of sorted values. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** Error statistics of candidate latencies `b` against reference latencies `a`, pairwise. */
export function errorStats(pairs: ReadonlyArray<readonly [a: number, b: number]>): ErrorStats {
  const signed = pairs.map(([a, b]) => ((b - a) / a) * 100);
  const abs = signed.map(Math.abs).sort((x, y) => x - y);
  const sortedSigned = [...signed].sort((x, y) => x - y);
  return {
    count: pairs.length,
    medianAbsPct: quantile(abs, 0.5),
    p90AbsPct: quantile(abs, 0.9),
    biasPct: quantile(sortedSigned, 0.5),
    maxAbsPct: abs.length ? abs[abs.length - 1] : Number.NaN,
  };
}

interface Indexed {
  /** key -> latencies of the rows with that key (duplicates are possible in hand-made tables). */
  byKey: Map<string, number[]>;
  /** key -> the first row with that key, as read. */
  rowOf: Map<string, Record<string, string>>;
  /** key -> its group label. */
  groupOf: Map<string, string>;
  badRows: number;
}

function median(xs: number[]): number {
  return quantile([...xs].sort((a, b) => a - b), 0.5);
}

function indexTable(t: CsvTable, keyCols: string[], groupCols: string[]): Indexed {
  const byKey = new Map<string, number[]>();
  const rowOf = new Map<string, Record<string, string>>();
  const groupOf = new Map<string, string>();
  let badRows = 0;
  for (const row of t.rows) {
    const lat = Number(row[LATENCY_COLUMN]);
    if (!Number.isFinite(lat) || lat <= 0) {
      badRows++;
      continue;
    }
    const key = keyCols.map((c) => canon(row[c])).join('|');
    const list = byKey.get(key);
    if (list) list.push(lat);
    else {
      byKey.set(key, [lat]);
      rowOf.set(key, row);
    }
    groupOf.set(key, groupCols.map((c) => row[c]).join('/'));
  }
  return { byKey, rowOf, groupOf, badRows };
}

/** Key columns whose values are words (dtype, op, kind, collective) split a table into groups. */
function categoricalColumns(keyCols: string[], tables: CsvTable[]): string[] {
  return keyCols.filter((c) => tables.some((t) => t.rows.some((r) => !isNumeric(r[c]))));
}

/** CSV texts of a packed directory (tables.bin, what perf:build writes), by file name; read once per directory. */
const packedCache = new Map<string, Record<string, string> | null>();
function packedCsv(dir: string): Record<string, string> | null {
  let v = packedCache.get(dir);
  if (v === undefined) {
    const p = join(dir, PACKED_FILE);
    packedCache.set(dir, (v = existsSync(p) ? packedAsCsv(readFileSync(p), p) : null));
  }
  return v;
}

function listCsv(dir: string): string[] {
  const packed = packedCsv(dir);
  if (packed) return Object.keys(packed).sort();
  return readdirSync(dir)
    .filter((f) => f.endsWith('.csv'))
    .sort();
}

function readMeta(dir: string): TableMeta | null {
  const path = join(dir, 'meta.yaml');
  if (!existsSync(path)) return null;
  try {
    const doc: unknown = parseYaml(readFileSync(path, 'utf8'));
    return doc && typeof doc === 'object' && !Array.isArray(doc) ? (doc as TableMeta) : null;
  } catch {
    return null;
  }
}

function readTable(dir: string, file: string): CsvTable {
  return parseTableCsv(packedCsv(dir)?.[file] ?? readFileSync(join(dir, file), 'utf8'), join(dir, file));
}

/**
 * The folder whose CSVs to read: `dir` itself, or for a version that borrows another version's tables
 * (meta.yaml `tables_from: <version>`, no CSVs of its own) the sibling folder it names.
 */
function tablesDir(dir: string, label: string, notes: string[]): string {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new InputError(`perf compare: ${label} "${dir}" is not a directory; give a folder of perf tables (*.csv)`);
  if (listCsv(dir).length > 0) return dir;
  const from = readMeta(dir)?.tables_from;
  if (from !== undefined && from !== null) {
    const sibling = join(dirname(dir), String(from));
    if (existsSync(sibling) && listCsv(sibling).length > 0) {
      notes.push(`${label} borrows the tables of ${sibling}`);
      return sibling;
    }
  }
  throw new InputError(`perf compare: ${label} "${dir}" holds no *.csv tables`);
}

/**
 * Join the tables of `dirA` (the reference, e.g. measured) and `dirB` (the candidate, e.g. synthesized) on
 * their exact key columns and report, per table and categorical group, the relative error of B against A.
 */
export function compareTables(dirA: string, dirB: string, opts: CompareOptions = {}): CompareReport {
  const notes: string[] = [];
  const metaA = readMeta(dirA);
  const metaB = readMeta(dirB);
  const tablesA = tablesDir(dirA, 'A', notes);
  const tablesB = tablesDir(dirB, 'B', notes);
  const system = opts.interpolate ? interpolationSystem(opts.system, metaB, metaA) : null;
  const peaks = system ? peaksOf(loadSystem(system)) : null;
  const filesA = listCsv(tablesA);
  const filesB = new Set(listCsv(tablesB));
  const groups: CompareGroup[] = [];
  const allPairs: [number, number][] = [];

  for (const f of filesA.filter((x) => !filesB.has(x))) notes.push(`${f}: only in A`);
  for (const f of [...filesB].filter((x) => !filesA.includes(x))) notes.push(`${f}: only in B`);

  for (const file of filesA.filter((x) => filesB.has(x))) {
    const op = basename(file, '.csv');
    const a = readTable(tablesA, file);
    const b = readTable(tablesB, file);
    // A column a table may leave out (moe.csv's routing) takes its default there, so rows join on like terms.
    for (const [c, v] of Object.entries((OP_SPECS as Record<string, (typeof OP_SPECS)[OpName] | undefined>)[op]?.defaults ?? {})) {
      for (const t of [a, b]) if (!t.header.includes(c) && (a.header.includes(c) || b.header.includes(c))) {
        t.header.push(c);
        for (const r of t.rows) r[c] = v;
      }
    }
    const keyCols = a.header.filter((c) => c !== LATENCY_COLUMN && b.header.includes(c));
    const extra = [...a.header, ...b.header].filter((c) => c !== LATENCY_COLUMN && !keyCols.includes(c));
    if (extra.length) notes.push(`${file}: columns ${[...new Set(extra)].join(', ')} are in one table only; joined on ${keyCols.join(', ')}`);
    const groupCols = categoricalColumns(keyCols, [a, b]);
    const ia = indexTable(a, keyCols, groupCols);
    const ib = indexTable(b, keyCols, groupCols);
    if (ia.badRows || ib.badRows) notes.push(`${file}: ignored ${ia.badRows} rows of A and ${ib.badRows} rows of B without a positive latency`);

    // Built on first need: when every row of A has an exact match, B's grids are never built.
    let lookupB: ((row: Record<string, string>) => number | undefined) | null | undefined = peaks ? undefined : null;
    const estimateB = (row: Record<string, string>): number | undefined => {
      if (lookupB === undefined) lookupB = tableLookup(op, tablesB, file, b, peaks!, notes);
      return lookupB ? lookupB(row) : undefined;
    };

    const perGroup = new Map<string, { pairs: [number, number][]; interpolated: number; onlyA: number; onlyB: number }>();
    const slot = (g: string) => {
      let s = perGroup.get(g);
      if (!s) perGroup.set(g, (s = { pairs: [], interpolated: 0, onlyA: 0, onlyB: 0 }));
      return s;
    };
    for (const [key, latA] of ia.byKey) {
      const latB = ib.byKey.get(key);
      const s = slot(ia.groupOf.get(key) ?? '');
      if (latB) {
        s.pairs.push([median(latA), median(latB)]);
        continue;
      }
      const est = estimateB(ia.rowOf.get(key)!);
      if (est !== undefined && Number.isFinite(est) && est > 0) {
        s.pairs.push([median(latA), est]);
        s.interpolated++;
      } else s.onlyA++;
    }
    for (const key of ib.byKey.keys()) if (!ia.byKey.has(key)) slot(ib.groupOf.get(key) ?? '').onlyB++;

    for (const g of [...perGroup.keys()].sort()) {
      const s = perGroup.get(g)!;
      groups.push({ op, group: g, interpolated: s.interpolated, onlyA: s.onlyA, onlyB: s.onlyB, ...errorStats(s.pairs) });
      allPairs.push(...s.pairs);
    }
  }

  return {
    dirA,
    dirB,
    metaA,
    metaB,
    errorDefinition: opts.interpolate
      ? "(B - A) / A in percent, per row of A; B exact where it has the key, else interpolated from B's table"
      : '(B - A) / A in percent, per row with the same key in both tables; A is the reference',
    groups,
    overall: errorStats(allPairs),
    notes,
    interpolationSystem: system,
  };
}

function interpolationSystem(given: string | undefined, metaB: TableMeta | null, metaA: TableMeta | null): string {
  const name = given ?? metaB?.system ?? metaA?.system;
  if (typeof name !== 'string' || !name)
    throw new InputError('perf compare --interpolate needs a system: pass --system or give B a meta.yaml with a system field');
  return name;
}

/** B's table as the planner's lookup, or null (with a note) when the table is not one the lookup knows. */
function tableLookup(op: string, dir: string, file: string, b: CsvTable, peaks: Peaks, notes: string[]): ((row: Record<string, string>) => number | undefined) | null {
  const spec = (OP_SPECS as Record<string, (typeof OP_SPECS)[OpName] | undefined>)[op];
  if (!spec) {
    notes.push(`${file}: not a table the lookup knows; exact keys only`);
    return null;
  }
  let rows: Row[];
  try {
    rows = parseCsv(spec, b.header.join(',') + '\n' + b.rows.map((r) => b.header.map((h) => r[h]).join(',')).join('\n'), join(dir, file));
  } catch (err) {
    notes.push(`${file}: B cannot be interpolated (${err instanceof Error ? err.message : String(err)}); exact keys only`);
    return null;
  }
  rows = rows.filter((r) => Number(r.latency_ms) > 0);
  if (rows.length === 0) return null;
  const table = new OpTable(spec, peaks, buildGrids(spec, peaks, rows));
  return (row) => {
    const q: Row = {};
    for (const c of spec.columns) {
      const v = row[c];
      if (v === undefined) return undefined;
      q[c] = spec.stringCols.includes(c) ? v : Number(v);
    }
    return table.lookup(q);
  };
}

/** One measured row of a slice as far as any table can answer it: its shape key, latency and speed of light. */
export interface MeasuredShape {
  key: string;
  latency: number;
  sol: number;
}

/**
 * Rows that no table respecting the roofline can bring within `tol` (relative) of their measurement: a table
 * holds one latency per shape, at least the speed of light, so each shape's rows are served by one value v >= SOL,
 * and only the rows whose window [latency (1 - tol), latency (1 + tol)] contains v are met. The largest such set
 * per shape is found by sweeping the windows' ends; every other row is a miss whatever the table says.
 */
function unavoidableMisses(groups: ReadonlyArray<ReadonlyArray<MeasuredShape>>, tol: number): number {
  let misses = 0;
  for (const group of groups) {
    if (group.length === 1) {
      // One row: met unless its whole window lies below the roofline.
      if (group[0]!.sol > group[0]!.latency * (1 + tol)) misses++;
      continue;
    }
    // Windows clipped to [SOL, inf): a window wholly below the roofline cannot be met.
    const events: [number, number][] = [];
    for (const r of group) {
      const lo = Math.max(r.latency * (1 - tol), r.sol);
      const hi = r.latency * (1 + tol);
      if (lo <= hi) events.push([lo, 1], [hi, -1]);
    }
    // Openings before closings at the same point: touching windows share that value.
    events.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    let open = 0;
    let best = 0;
    for (const [, d] of events) best = Math.max(best, (open += d));
    misses += group.length - best;
  }
  return misses;
}

/**
 * The lowest p90 absolute % error any table respecting the roofline can reach on these rows (see
 * unavoidableMisses): the smallest tolerance at which at most a tenth of the rows must miss, to 0.1%.
 */
export function p90Floor(rows: ReadonlyArray<MeasuredShape>): number {
  const byKey = new Map<string, MeasuredShape[]>();
  for (const r of rows) {
    const l = byKey.get(r.key);
    if (l) l.push(r);
    else byKey.set(r.key, [r]);
  }
  const groups = [...byKey.values()];
  const allowed = Math.floor(rows.length * 0.1);
  if (unavoidableMisses(groups, 0) <= allowed) return 0;
  let lo = 0;
  let hi = 0.25;
  while (unavoidableMisses(groups, hi) > allowed) [lo, hi] = [hi, hi * 2];
  while (hi - lo > 0.001) {
    const mid = (lo + hi) / 2;
    if (unavoidableMisses(groups, mid) > allowed) lo = mid;
    else hi = mid;
  }
  return hi * 100;
}
