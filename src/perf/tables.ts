// Our table format: one CSV per op, header row, latency in ms. Each op has categorical key columns (exact
// match, or the nearest numeric key with a roofline transfer) and numeric axes interpolated in log space.
import { InputError } from '../util/errors.js';
import { quote } from '../util/text.js';
import * as sol from './sol.js';
import type { Peaks } from './sol.js';
import type { Collective } from './types.js';

/** MLA module dimensions of DeepSeek-V3/R1: the shapes the reference MLA module tables were measured on. */
export const DEEPSEEK_MLA = { kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128, q_lora_rank: 1536, hidden: 7168 } as const;

export type OpName = 'gemm' | 'context_attention' | 'generation_attention' | 'allreduce' | 'nccl' | 'moe' | 'mla' | 'elementwise';

/**
 * Substitute dtypes, closest format first, when a table (or a fitted group) lacks the asked one. MXFP4 experts
 * without an fp4 kernel run as 4-bit weights with 16-bit activations (Marlin-style), so after the other 4-bit
 * formats they take the 16-bit efficiency, not fp8's.
 */
export const DTYPE_FALLBACK: Record<string, readonly string[]> = {
  nvfp4: ['fp8', 'fp8_block', 'bfloat16'],
  mxfp4: ['int4_wo', 'nvfp4', 'bfloat16'],
  fp8_block: ['fp8', 'bfloat16'],
  fp8: ['fp8_block', 'bfloat16'],
  int4_wo: ['int8_wo', 'bfloat16'],
  int8_wo: ['int4_wo', 'bfloat16'],
  float16: ['bfloat16'],
  int8: ['fp8', 'bfloat16'],
};

export const OP_NAMES: readonly OpName[] = ['gemm', 'context_attention', 'generation_attention', 'allreduce', 'nccl', 'moe', 'mla', 'elementwise'];

export type Row = Record<string, number | string>;

export interface OpSpec {
  op: OpName;
  file: string;
  /** CSV columns in order, latency_ms last (not listed). */
  columns: readonly string[];
  /** Columns whose values are names (dtype, collective...). */
  stringCols: readonly string[];
  /** Key columns: the table holds a separate grid per distinct key. */
  keyCols: readonly string[];
  /** Numeric axes of each grid, interpolated in log2 space. */
  axisCols: readonly string[];
  /** Columns a file may leave out, with the value they then take (tables written before the column existed). */
  defaults?: Readonly<Record<string, string>>;
  /** Speed of light of a row (ms). */
  sol(p: Peaks, r: Row): number;
  /**
   * The roofline the calibrated model's corrections are relative to, where it differs from `sol`: MoE fits its
   * efficiency on balanced routing's roofline and learns each skewed routing as a correction on top, while
   * `sol`, the floor of every table, follows the routing (see busiestRankLoad).
   */
  modelSol?(p: Peaks, r: Row): number;
}

/** The roofline an op's calibrated model is relative to (OpSpec.modelSol, else its speed of light). */
export function modelSolOf(spec: OpSpec, p: Peaks, r: Row): number {
  return (spec.modelSol ?? spec.sol)(p, r);
}

const n = (r: Row, c: string): number => r[c] as number;
const s = (r: Row, c: string): string => r[c] as string;

/** moeSol's arguments for a MoE row: with its routing where it has one and `routing` is set, else balanced. */
export function moeSolArgs(r: Row, routing = true): Parameters<typeof sol.moeSol> extends [Peaks, ...infer A] ? A : never {
  const d = routing && r.distribution !== undefined ? s(r, 'distribution') : undefined;
  return [s(r, 'dtype'), n(r, 'tokens'), n(r, 'hidden'), n(r, 'inter'), n(r, 'topk'), n(r, 'experts'), n(r, 'moe_tp'), n(r, 'moe_ep'), d];
}

export const OP_SPECS: Record<OpName, OpSpec> = {
  gemm: {
    op: 'gemm', file: 'gemm.csv', columns: ['dtype', 'm', 'n', 'k'], stringCols: ['dtype'], keyCols: ['dtype'], axisCols: ['m', 'n', 'k'],
    sol: (p, r) => sol.gemmSol(p, s(r, 'dtype'), n(r, 'm'), n(r, 'n'), n(r, 'k')),
  },
  context_attention: {
    op: 'context_attention', file: 'context_attention.csv',
    columns: ['batch', 'seq', 'heads', 'kv_heads', 'head_dim', 'dtype', 'kv_dtype', 'window'],
    stringCols: ['dtype', 'kv_dtype'], keyCols: ['heads', 'kv_heads', 'head_dim', 'dtype', 'kv_dtype', 'window'], axisCols: ['batch', 'seq'],
    sol: (p, r) => sol.contextAttentionSol(p, n(r, 'batch'), n(r, 'seq'), 0, n(r, 'heads'), n(r, 'kv_heads'), n(r, 'head_dim'), s(r, 'dtype'), s(r, 'kv_dtype'), n(r, 'window')),
  },
  generation_attention: {
    op: 'generation_attention', file: 'generation_attention.csv',
    columns: ['batch', 'kv_len', 'heads', 'kv_heads', 'head_dim', 'kv_dtype', 'window'],
    stringCols: ['kv_dtype'], keyCols: ['heads', 'kv_heads', 'head_dim', 'kv_dtype', 'window'], axisCols: ['batch', 'kv_len'],
    sol: (p, r) => sol.generationAttentionSol(p, n(r, 'batch'), n(r, 'kv_len'), n(r, 'heads'), n(r, 'kv_heads'), n(r, 'head_dim'), s(r, 'kv_dtype'), n(r, 'window')),
  },
  allreduce: {
    op: 'allreduce', file: 'allreduce.csv', columns: ['kind', 'dtype', 'gpus', 'elements'], stringCols: ['kind', 'dtype'],
    keyCols: ['kind', 'dtype', 'gpus'], axisCols: ['elements'],
    sol: (p, r) => sol.collectiveSol(p, 'all_reduce', s(r, 'dtype'), n(r, 'gpus'), n(r, 'elements'), s(r, 'kind') === 'nccl' && n(r, 'gpus') > p.gpusPerNode),
  },
  nccl: {
    op: 'nccl', file: 'nccl.csv', columns: ['collective', 'dtype', 'gpus', 'elements'], stringCols: ['collective', 'dtype'],
    keyCols: ['collective', 'dtype', 'gpus'], axisCols: ['elements'],
    sol: (p, r) => sol.collectiveSol(p, s(r, 'collective') as Collective, s(r, 'dtype'), n(r, 'gpus'), n(r, 'elements')),
  },
  moe: {
    // distribution: the expert routing (balanced, power_law_1.01, power_law_1.2; see MOE_DISTRIBUTIONS).
    op: 'moe', file: 'moe.csv', columns: ['dtype', 'distribution', 'tokens', 'hidden', 'inter', 'topk', 'experts', 'moe_tp', 'moe_ep'],
    stringCols: ['dtype', 'distribution'], keyCols: ['dtype', 'distribution', 'hidden', 'inter', 'topk', 'experts', 'moe_tp', 'moe_ep'], axisCols: ['tokens'],
    defaults: { distribution: 'balanced' },
    sol: (p, r) => sol.moeSol(p, ...moeSolArgs(r)),
    modelSol: (p, r) => sol.moeSol(p, ...moeSolArgs(r, false)),
  },
  mla: {
    op: 'mla', file: 'mla.csv',
    columns: ['phase', 'batch', 'seq', 'heads', 'kv_lora_rank', 'qk_rope_head_dim', 'qk_nope_head_dim', 'v_head_dim', 'q_lora_rank', 'hidden', 'dtype', 'kv_dtype'],
    stringCols: ['phase', 'dtype', 'kv_dtype'],
    keyCols: ['phase', 'heads', 'kv_lora_rank', 'qk_rope_head_dim', 'qk_nope_head_dim', 'v_head_dim', 'q_lora_rank', 'hidden', 'dtype', 'kv_dtype'],
    axisCols: ['batch', 'seq'],
    sol: (p, r) => sol.mlaSol(p, s(r, 'phase') as 'context' | 'generation', n(r, 'batch'), n(r, 'seq'), n(r, 'heads'), n(r, 'kv_lora_rank'),
      n(r, 'qk_rope_head_dim'), n(r, 'qk_nope_head_dim'), n(r, 'v_head_dim'), n(r, 'q_lora_rank'), n(r, 'hidden'), s(r, 'dtype'), s(r, 'kv_dtype')),
  },
  elementwise: {
    op: 'elementwise', file: 'elementwise.csv', columns: ['op', 'bytes'], stringCols: ['op'], keyCols: ['op'], axisCols: ['bytes'],
    sol: (p, r) => sol.memSol(p, n(r, 'bytes')),
  },
};

/** Format a latency for a table: 5 significant digits, shortest form (deterministic). */
export function fmtLatency(ms: number): string {
  return String(Number(ms.toPrecision(5)));
}

/** Serialize rows of one op (already in a fixed order). */
export function toCsv(spec: OpSpec, rows: Row[]): string {
  const cols = [...spec.columns, 'latency_ms'];
  const lines = [cols.join(',')];
  for (const r of rows) lines.push(spec.columns.map((c) => String(r[c])).join(',') + ',' + fmtLatency(r.latency_ms as number));
  return lines.join('\n') + '\n';
}

/** Parse one of our CSV files; the header may list the columns in any order but must hold all of them. */
export function parseCsv(spec: OpSpec, text: string, where: string): Row[] {
  const lines = text.split(/\r?\n/);
  const header = (lines[0] ?? '').split(',').map((h) => h.trim());
  const want = [...spec.columns, 'latency_ms'];
  const idx = want.map((c) => header.indexOf(c));
  const missing = want.filter((c, i) => idx[i]! < 0 && spec.defaults?.[c] === undefined);
  if (missing.length) throw new InputError(`${where}: missing column(s) ${missing.join(', ')}; expected ${want.join(',')}`);
  const isStr = want.map((c) => spec.stringCols.includes(c));
  const rows: Row[] = [];
  for (let li = 1; li < lines.length; li++) {
    const line = lines[li]!;
    if (line.length === 0) continue;
    const f = line.split(',');
    const r: Row = {};
    for (let i = 0; i < want.length; i++) {
      const v = idx[i]! < 0 ? spec.defaults![want[i]!] : f[idx[i]!];
      if (v === undefined) throw new InputError(`${where}:${li + 1}: expected ${want.length} fields, got ${f.length}`);
      if (isStr[i]) r[want[i]!] = v.trim();
      else {
        const x = v.trim() === '' ? NaN : Number(v);
        if (!Number.isFinite(x)) throw new InputError(`${where}:${li + 1}: ${want[i]} is not a number (${quote(v)})`);
        if (want[i] === 'latency_ms' && !(x > 0)) throw new InputError(`${where}:${li + 1}: latency_ms must be a positive number, got ${quote(v)}`);
        r[want[i]!] = x;
      }
    }
    rows.push(r);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------------------------
// Packed tables (`tables.bin`): every op of one directory in one file, each key's grid stored once as a dense
// block over its axes instead of one CSV row per cell. A cell holds the latency exactly as the CSV writer rounds
// it (5 significant digits, fmtLatency) as a decimal: mantissa (17 bits) and exponent (7 bits), 3 bytes. Reading
// it back as mantissa / 10^-exponent (or mantissa x 10^exponent) gives the double that parsing the CSV text gives
// (both are exact integers and IEEE division rounds correctly), so a lookup answers the same as from the CSV.
//
// Layout (little-endian):
//   "IPT1", u32 op count, then per op: str op name, u32 section length, the section (read only when the op is
//   asked for):
//     u16 key column count, per key column: str name, u8 string?, u16 value count, values
//     (str, or f64); u16 axis column count, str names; u16 axis-set count, per set per axis: u16 length, f64
//     values; u32 key count, per key: u16 value index per key column, u16 axis set; u32 cell count, cells
//     (3 bytes each, row-major over the axes, last axis fastest; 0xFFFFFF = no row at that cell).
//   str = u16 byte length + UTF-8.
// Rows come back in the order they were written (keys in order, cells row-major), as the CSV lists them.
// ---------------------------------------------------------------------------------------------------------------

export const PACKED_FILE = 'tables.bin';
const PACKED_MAGIC = 'IPT1';
const NO_CELL = 0xffffff;
const EXP_BIAS = 64;
/** Powers of ten that are exact doubles: the decimal exponents a cell may hold. */
const MAX_EXP10 = 22;

/** The 3-byte code of a latency: its 5-significant-digit decimal (as fmtLatency writes it). */
export function encodeLatency(ms: number): number {
  if (!(ms >= 0) || !Number.isFinite(ms)) throw new Error(`latency ${ms} cannot be stored`);
  const [digits, exp] = ms.toExponential(4).split('e') as [string, string];
  const mant = Number(digits.replace('.', ''));
  const e = Number(exp) - 4;
  if (mant === 0) return EXP_BIAS << 17;
  if (e < -MAX_EXP10 || e > MAX_EXP10) throw new Error(`latency ${ms} is out of the packed range`);
  return ((e + EXP_BIAS) << 17) | mant;
}

const POW10 = Array.from({ length: MAX_EXP10 + 1 }, (_, i) => 10 ** i);

/** The latency a 3-byte code stands for: the same double as Number(fmtLatency(ms)). */
export function decodeLatency(code: number): number {
  const mant = code & 0x1ffff;
  const e = (code >>> 17) - EXP_BIAS;
  return e >= 0 ? mant * POW10[e]! : mant / POW10[-e]!;
}

class Writer {
  private readonly chunks: Buffer[] = [];
  u8(v: number): void { const b = Buffer.alloc(1); b.writeUInt8(v); this.chunks.push(b); }
  u16(v: number): void { const b = Buffer.alloc(2); b.writeUInt16LE(v); this.chunks.push(b); }
  u32(v: number): void { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.chunks.push(b); }
  f64(v: number): void { const b = Buffer.alloc(8); b.writeDoubleLE(v); this.chunks.push(b); }
  str(s: string): void { const b = Buffer.from(s, 'utf8'); this.u16(b.length); this.chunks.push(b); }
  raw(b: Buffer): void { this.chunks.push(b); }
  done(): Buffer { return Buffer.concat(this.chunks); }
}

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer, readonly where: string) {}
  need(n: number): void { if (this.pos + n > this.buf.length) throw new InputError(`${this.where}: truncated packed table`); }
  u8(): number { this.need(1); return this.buf[this.pos++]!; }
  u16(): number { this.need(2); const b = this.buf, p = this.pos; this.pos += 2; return b[p]! | (b[p + 1]! << 8); }
  u32(): number { this.need(4); const v = this.buf.readUInt32LE(this.pos); this.pos += 4; return v; }
  f64(): number { this.need(8); const v = this.buf.readDoubleLE(this.pos); this.pos += 8; return v; }
  str(): string { const n = this.u16(); this.need(n); return this.buf.toString('utf8', this.pos, (this.pos += n)); }
}

/** One grid's rows as a dense block: the key, its axes' values, and a latency (or undefined: no row) per cell. */
export interface PackedGrid {
  key: Row;
  axes: readonly (readonly number[])[];
  /** Latencies row-major over `axes`, last axis fastest; undefined where the table has no row. */
  cells: readonly (number | undefined)[];
}

/** Lay rows of one op (written key by key, cells row-major, as perf:build writes them) out as packed grids. */
export function packRows(spec: OpSpec, rows: Row[]): PackedGrid[] {
  const out: PackedGrid[] = [];
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const k = spec.keyCols.map((c) => String(r[c])).join('|');
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(r);
  }
  for (const g of groups.values()) {
    const key: Row = {};
    for (const c of spec.keyCols) key[c] = g[0]![c]!;
    const axes = spec.axisCols.map((c) => [...new Set(g.map((r) => r[c] as number))].sort((a, b) => a - b));
    const sizes = axes.map((a) => a.length);
    const total = sizes.reduce((a, b) => a * b, 1);
    const cells: (number | undefined)[] = new Array(total).fill(undefined);
    const index = axes.map((a) => new Map(a.map((v, i) => [v, i])));
    let expect = 0;
    for (const r of g) {
      let off = 0;
      for (let i = 0; i < axes.length; i++) off = off * sizes[i]! + index[i]!.get(r[spec.axisCols[i]!] as number)!;
      // Rows must be in row-major order and unique, or reading them back would reorder them.
      if (off < expect || cells[off] !== undefined) throw new Error(`${spec.file}: rows of key ${JSON.stringify(key)} are not in grid order`);
      expect = off + 1;
      cells[off] = r.latency_ms as number;
    }
    out.push({ key, axes, cells });
  }
  return out;
}

/** Serialize the packed grids of every op of one directory (ops in OP_NAMES order). */
export function writePacked(tables: Partial<Record<OpName, PackedGrid[]>>): Buffer {
  const w = new Writer();
  w.raw(Buffer.from(PACKED_MAGIC, 'latin1'));
  const ops = OP_NAMES.filter((op) => tables[op]?.length);
  w.u32(ops.length);
  for (const op of ops) {
    const section = packOp(op, tables[op]!);
    w.str(op);
    w.u32(section.length);
    w.raw(section);
  }
  return w.done();
}

function packOp(op: OpName, grids: PackedGrid[]): Buffer {
  const spec = OP_SPECS[op];
  const w = new Writer();
  w.u16(spec.keyCols.length);
  const dicts = spec.keyCols.map((c) => {
    const isStr = spec.stringCols.includes(c);
    const vals = [...new Set(grids.map((g) => g.key[c]!))];
    w.str(c);
    w.u8(isStr ? 1 : 0);
    w.u16(vals.length);
    for (const v of vals) if (isStr) w.str(String(v)); else w.f64(v as number);
    return new Map(vals.map((v, i) => [v, i]));
  });
  w.u16(spec.axisCols.length);
  for (const c of spec.axisCols) w.str(c);
  const axisSets = new Map<string, number>();
  const setOf = grids.map((g) => {
    const k = JSON.stringify(g.axes);
    let i = axisSets.get(k);
    if (i === undefined) axisSets.set(k, (i = axisSets.size));
    return i;
  });
  w.u16(axisSets.size);
  for (const k of axisSets.keys())
    for (const a of JSON.parse(k) as number[][]) { w.u16(a.length); for (const v of a) w.f64(v); }
  w.u32(grids.length);
  let cells = 0;
  grids.forEach((g, gi) => {
    spec.keyCols.forEach((c, ci) => w.u16(dicts[ci]!.get(g.key[c]!)!));
    w.u16(setOf[gi]!);
    cells += g.cells.length;
  });
  w.u32(cells);
  const buf = Buffer.alloc(cells * 3);
  let o = 0;
  for (const g of grids)
    for (const v of g.cells) {
      const code = v === undefined ? NO_CELL : encodeLatency(v);
      buf[o++] = code & 0xff; buf[o++] = (code >>> 8) & 0xff; buf[o++] = code >>> 16;
    }
  w.raw(buf);
  return w.done();
}

/** One op's grids in a packed file, decoded to rows key by key on demand. */
export interface PackedOp {
  spec: OpSpec;
  /** Key rows in file order. */
  keys: Row[];
  /** The rows of the i-th key (the rows its CSV lists, in that order). */
  rowsOf(i: number): Row[];
  /**
   * The i-th key's cells without making rows: its axes' values (ascending) and ln(latency) per cell, NaN where
   * there is no row; undefined when an axis holds a value that is not positive (no log2 axis for it).
   */
  lnCellsOf(i: number): { values: number[][]; lnLat: Float64Array } | undefined;
}

/** The ops of a packed file; an op's index is read when first asked for, its cells only for the keys asked for. */
export class PackedTables {
  private readonly sections = new Map<OpName, [number, number]>();
  private readonly parsed = new Map<OpName, PackedOp>();

  constructor(private readonly buf: Buffer, private readonly where: string) {
    if (buf.length < 8 || buf.toString('latin1', 0, 4) !== PACKED_MAGIC) throw new InputError(`${where}: not a packed table file`);
    const r = new Reader(buf, where);
    r.pos = 4;
    const nOps = r.u32();
    for (let oi = 0; oi < nOps; oi++) {
      const op = r.str() as OpName;
      if (!OP_SPECS[op]) throw new InputError(`${where}: unknown op ${op}`);
      const len = r.u32();
      r.need(len);
      this.sections.set(op, [r.pos, r.pos + len]);
      r.pos += len;
    }
  }

  /** The ops the file holds, in file order. */
  get ops(): OpName[] {
    return [...this.sections.keys()];
  }

  has(op: OpName): boolean {
    return this.sections.has(op);
  }

  get(op: OpName): PackedOp | undefined {
    let p = this.parsed.get(op);
    const at = this.sections.get(op);
    if (!p && at) this.parsed.set(op, (p = parseOp(this.buf.subarray(at[0], at[1]), `${this.where} (${op})`, op)));
    return p;
  }

  *[Symbol.iterator](): IterableIterator<[OpName, PackedOp]> {
    for (const op of this.sections.keys()) yield [op, this.get(op)!];
  }
}

/** Read a packed file (see PackedTables). */
export function readPacked(buf: Buffer, where: string): PackedTables {
  return new PackedTables(buf, where);
}

function parseOp(buf: Buffer, where: string, op: OpName): PackedOp {
  const r = new Reader(buf, where);
  const spec = OP_SPECS[op];
  const keyCols: string[] = [];
  const dicts: (number | string)[][] = [];
  const nKey = r.u16();
  for (let i = 0; i < nKey; i++) {
    keyCols.push(r.str());
    const isStr = r.u8() === 1;
    const n = r.u16();
    const vals: (number | string)[] = [];
    for (let j = 0; j < n; j++) vals.push(isStr ? r.str() : r.f64());
    dicts.push(vals);
  }
  const axisCols: string[] = [];
  const nAxis = r.u16();
  for (let i = 0; i < nAxis; i++) axisCols.push(r.str());
  const sets: number[][][] = [];
  const nSets = r.u16();
  for (let s = 0; s < nSets; s++) {
    const set: number[][] = [];
    for (let i = 0; i < nAxis; i++) {
      const n = r.u16();
      const a: number[] = [];
      for (let j = 0; j < n; j++) a.push(r.f64());
      set.push(a);
    }
    sets.push(set);
  }
  const nGrids = r.u32();
  const keys: Row[] = [];
  const setIdx: number[] = [];
  const start: number[] = [];
  let cells = 0;
  for (let g = 0; g < nGrids; g++) {
    const key: Row = {};
    for (let i = 0; i < nKey; i++) {
      const vi = r.u16();
      if (vi >= dicts[i]!.length) throw new InputError(`${where}: key value index ${vi} out of range`);
      key[keyCols[i]!] = dicts[i]![vi]!;
    }
    const s = r.u16();
    if (s >= sets.length) throw new InputError(`${where}: axis set index ${s} out of range`);
    keys.push(key);
    setIdx.push(s);
    start.push(cells);
    cells += sets[s]!.reduce((a, v) => a * v.length, 1);
  }
  if (r.u32() !== cells) throw new InputError(`${where}: ${op}: cell count does not match its grids`);
  const base = r.pos;
  r.pos += cells * 3;
  if (r.pos > buf.length) throw new InputError(`${where}: truncated packed table`);
  const rowsOf = (gi: number): Row[] => {
    const axes = sets[setIdx[gi]!]!;
    const sizes = axes.map((a) => a.length);
    const total = sizes.reduce((a, b) => a * b, 1);
    const rows: Row[] = [];
    let p = base + start[gi]! * 3;
    for (let o = 0; o < total; o++, p += 3) {
      const code = buf[p]! | (buf[p + 1]! << 8) | (buf[p + 2]! << 16);
      if (code === NO_CELL) continue;
      const row: Row = {};
      // Columns in the CSV's order, so a row reads as parseCsv would give it.
      let rem = o;
      const at = new Array<number>(axes.length);
      for (let i = axes.length - 1; i >= 0; i--) { at[i] = rem % sizes[i]!; rem = Math.floor(rem / sizes[i]!); }
      for (const c of spec.columns) {
        const ai = axisCols.indexOf(c);
        row[c] = ai >= 0 ? axes[ai]![at[ai]!]! : keys[gi]![c]!;
      }
      row.latency_ms = decodeLatency(code);
      rows.push(row);
    }
    return rows;
  };
  const lnCellsOf = (gi: number): { values: number[][]; lnLat: Float64Array } | undefined => {
    const axes = sets[setIdx[gi]!]!;
    if (axes.some((a) => a.some((v) => !(v > 0)))) return undefined;
    const total = axes.reduce((a, v) => a * v.length, 1);
    const lnLat = new Float64Array(total);
    let p = base + start[gi]! * 3;
    for (let o = 0; o < total; o++, p += 3) {
      const code = buf[p]! | (buf[p + 1]! << 8) | (buf[p + 2]! << 16);
      lnLat[o] = code === NO_CELL ? NaN : Math.log(decodeLatency(code));
    }
    return { values: axes.map((a) => [...a]), lnLat };
  };
  if (r.pos !== buf.length) throw new InputError(`${where}: section length does not match its contents`);
  return { spec, keys, rowsOf, lnCellsOf };
}

/** The packed tables of one file written out as one CSV per op (file name -> text), for readers of CSV tables. */
export function packedAsCsv(buf: Buffer, where: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [op, t] of readPacked(buf, where)) out[OP_SPECS[op].file] = toCsv(OP_SPECS[op], t.keys.flatMap((_, i) => t.rowsOf(i)));
  return out;
}
