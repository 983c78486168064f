// Dense grids over log2 axes holding ln(latency), built from table rows, and the lookup:
// multilinear interpolation inside the grid (monotone along each axis when the grid is), roofline scaling
// at the nearest edge's efficiency outside it, and never below the speed of light.
import { computeFlops, gemmSol, moeRoofline, type Peaks } from './sol.js';
import { moeSolArgs, type OpName, type OpSpec, type PackedOp, type Row } from './tables.js';

/** An axis along which the running maximum only carries from cells on the compute-bound side of the roofline. */
export interface FreeAxis {
  col: string;
  computeBound(p: Peaks, r: Row): boolean;
}

/**
 * GEMM m and MoE tokens: while a GEMM (or the experts' grouped GEMMs) is bound by reading its weights, more tokens
 * add no work to speak of and the engines pick the kernel by token bucket; a small-m kernel can be slower than
 * the one they run a few tokens later (TRT-LLM FP8 block-scaled GEMMs on B200: 41 us at m = 4, 18 us at m = 16
 * for n = 4096, k = 12288; vLLM NVFP4 experts on B200: 634 us at 768 tokens, 219 us at 4096 for one shape). A
 * running maximum over the memory-bound side would price every batch up to the crossover at the slow kernel, so
 * latency is held monotone in tokens only from the first compute-bound cell on (there more tokens are more
 * work). The weight dimensions (n, k; the expert shape) and every other op stay monotone everywhere.
 */
const FREE_AXES: Partial<Record<OpName, FreeAxis>> = {
  gemm: {
    col: 'm',
    computeBound: (p, r) => {
      const dtype = String(r.dtype), m = r.m as number, n = r.n as number, k = r.k as number;
      return (2 * m * n * k) / computeFlops(p, dtype) >= gemmSol(p, dtype, m, n, k) * (1 - 1e-12);
    },
  },
  moe: {
    col: 'tokens',
    computeBound: (p, r) => {
      const { computeMs, memoryMs } = moeRoofline(p, ...moeSolArgs(r));
      return computeMs >= memoryMs;
    },
  },
};

/**
 * GEMM weight dimensions below one 128-wide tile: the kernels pad n and k to their tile, so a smaller n or k is no
 * less work than a full tile (measured slower at times: H200 TRT-LLM int4 weight-only at k = 32 / 64, below its
 * 128-wide quantization group) and sets no floor for it.
 */
export const GEMM_TILE = 128;

/** A GEMM narrower than one tile in n or k: no serving shape (the fit and the kernel benchmark leave it apart). */
export function isSubTileGemm(r: Row): boolean {
  return (r.n as number) < GEMM_TILE || (r.k as number) < GEMM_TILE;
}

/** Whether a cell's latency carries along `col` as a floor for the next cell (the tables' running maximum). */
export function carriesAlong(op: OpName, col: string, p: Peaks, r: Row): boolean {
  const free = FREE_AXES[op];
  if (free?.col === col && !free.computeBound(p, r)) return false;
  return !(op === 'gemm' && (col === 'n' || col === 'k') && (r[col] as number) < GEMM_TILE);
}

export interface Grid {
  key: Row;
  /** log2 of the axis values, ascending. */
  axes: Float64Array[];
  /** Axis values as given. */
  values: number[][];
  /** ln(latency ms), row-major (last axis fastest). */
  lnLat: Float64Array;
  strides: number[];
}

export function keyOf(spec: OpSpec, r: Row): string {
  let k = '';
  for (const c of spec.keyCols) k += String(r[c]) + '|';
  return k;
}

function strKeyOf(spec: OpSpec, r: Row): string {
  let k = '';
  for (const c of spec.keyCols) if (spec.stringCols.includes(c)) k += String(r[c]) + '|';
  return k;
}

/** Group rows by key and lay each group out as a dense grid; holes are filled from the nearest cell by roofline transfer. */
export function buildGrids(spec: OpSpec, peaks: Peaks, rows: Row[]): Map<string, Grid> {
  const out = new Map<string, Grid>();
  for (const [k, g] of groupRows(spec, rows)) out.set(k, buildGrid(spec, peaks, g));
  return out;
}

function buildGrid(spec: OpSpec, peaks: Peaks, rows: Row[]): Grid {
  const d = spec.axisCols.length;
  const values = spec.axisCols.map((c) => [...new Set(rows.map((r) => r[c] as number))].filter((v) => v > 0).sort((a, b) => a - b));
  const sizes = values.map((v) => v.length);
  const strides: number[] = new Array(d).fill(1);
  for (let i = d - 2; i >= 0; i--) strides[i] = strides[i + 1]! * sizes[i + 1]!;
  const total = strides[0]! * sizes[0]!;
  const lnLat = new Float64Array(total).fill(NaN);
  const index = values.map((vs) => new Map(vs.map((v, i) => [v, i])));
  const sums = new Float64Array(total);
  const counts = new Uint32Array(total);
  for (const r of rows) {
    let off = 0;
    let ok = true;
    for (let i = 0; i < d; i++) {
      const j = index[i]!.get(r[spec.axisCols[i]!] as number);
      if (j === undefined) { ok = false; break; }
      off += j * strides[i]!;
    }
    if (!ok) continue;
    sums[off]! += Math.log(r.latency_ms as number);
    counts[off]!++;
  }
  const key: Row = {};
  for (const c of spec.keyCols) key[c] = rows[0]![c]!;
  for (let o = 0; o < total; o++) if (counts[o]! > 0) lnLat[o] = sums[o]! / counts[o]!;
  return denseGrid(spec, peaks, key, values, lnLat, Uint8Array.from(counts, (c) => (c > 0 ? 1 : 0)));
}

/**
 * The grid of one key from ln(latency) per cell (NaN where the table has no row), row-major over `values` (each
 * ascending): holes filled from the nearest cell by roofline transfer, then the running maximum along each axis.
 * `lnLat` is filled in place. `measured` marks the cells with a row (default: those not NaN).
 */
export function denseGrid(spec: OpSpec, peaks: Peaks, key: Row, values: number[][], lnLat: Float64Array, measured?: Uint8Array): Grid {
  const d = values.length;
  const sizes = values.map((v) => v.length);
  const strides: number[] = new Array(d).fill(1);
  for (let i = d - 2; i >= 0; i--) strides[i] = strides[i + 1]! * sizes[i + 1]!;
  const total = strides[0]! * sizes[0]!;
  const cellRow = (off: number): Row => {
    const r: Row = { ...key };
    let rem = off;
    for (let i = 0; i < d; i++) {
      const j = Math.floor(rem / strides[i]!);
      rem -= j * strides[i]!;
      r[spec.axisCols[i]!] = values[i]![j]!;
    }
    return r;
  };
  // Holes: breadth-first from measured cells; a hole takes its neighbour's efficiency (SOL / latency).
  const has = measured ?? Uint8Array.from(lnLat, (v) => (Number.isNaN(v) ? 0 : 1));
  if (has.includes(0)) {
    const src = new Int32Array(total).fill(-1);
    let frontier: number[] = [];
    for (let o = 0; o < total; o++) if (has[o]) { src[o] = o; frontier.push(o); }
    while (frontier.length) {
      const next: number[] = [];
      for (const o of frontier) {
        let rem = o;
        for (let i = 0; i < d; i++) {
          const j = Math.floor(rem / strides[i]!);
          rem -= j * strides[i]!;
          for (const dj of [-1, 1]) {
            const jj = j + dj;
            if (jj < 0 || jj >= sizes[i]!) continue;
            const nb = o + dj * strides[i]!;
            if (src[nb]! >= 0) continue;
            src[nb] = src[o]!;
            next.push(nb);
          }
        }
      }
      frontier = next;
    }
    for (let o = 0; o < total; o++) {
      if (has[o]) continue;
      const from = src[o]!;
      lnLat[o] = lnLat[from]! + Math.log(spec.sol(peaks, cellRow(o)) / spec.sol(peaks, cellRow(from)));
    }
  }
  // More work never takes less time: running maximum along every axis (see carriesAlong).
  for (let i = 0; i < d; i++) {
    const st = strides[i]!;
    const col = spec.axisCols[i]!;
    for (let o = 0; o < total; o++) {
      const j = Math.floor(o / st) % sizes[i]!;
      if (j > 0 && lnLat[o]! < lnLat[o - st]! && carriesAlong(spec.op, col, peaks, cellRow(o - st))) lnLat[o] = lnLat[o - st]!;
    }
  }
  return { key, axes: values.map((vs) => Float64Array.from(vs, Math.log2)), values, lnLat, strides };
}

const scratchLo = new Int32Array(8);
const scratchW = new Float64Array(8);

/**
 * Interpolate ln(latency) at log2 coordinates `x` (clamped into the grid; `xc` receives the clamped coordinates).
 * Returns true when some coordinate was clamped.
 */
export function interp(g: Grid, x: ArrayLike<number>, xc: Float64Array): { v: number; clamped: boolean } {
  const d = g.axes.length;
  let clamped = false;
  for (let i = 0; i < d; i++) {
    const a = g.axes[i]!;
    let xi = x[i]!;
    const last = a.length - 1;
    if (xi <= a[0]!) { if (xi < a[0]!) clamped = true; xi = a[0]!; scratchLo[i] = 0; scratchW[i] = 0; }
    else if (xi >= a[last]!) { if (xi > a[last]!) clamped = true; xi = a[last]!; scratchLo[i] = Math.max(0, last - 1); scratchW[i] = last > 0 ? 1 : 0; }
    else {
      let lo = 0, hi = last;
      while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (a[mid]! <= xi) lo = mid; else hi = mid; }
      scratchLo[i] = lo;
      scratchW[i] = (xi - a[lo]!) / (a[lo + 1]! - a[lo]!);
    }
    xc[i] = xi;
  }
  let v = 0;
  const corners = 1 << d;
  for (let c = 0; c < corners; c++) {
    let w = 1;
    let off = 0;
    for (let i = 0; i < d; i++) {
      const up = (c >> i) & 1;
      const wi = up ? scratchW[i]! : 1 - scratchW[i]!;
      if (wi === 0) { w = 0; break; }
      w *= wi;
      off += (scratchLo[i]! + up) * g.strides[i]!;
    }
    if (w !== 0) v += w * g.lnLat[off]!;
  }
  return { v, clamped };
}

/** Group rows by key (fixed order of first appearance). */
export function groupRows(spec: OpSpec, rows: Row[]): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const k = keyOf(spec, r);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(r);
  }
  return groups;
}

/** All grids of one op in one source, with the nearest-key transfer for keys the table lacks. */
export class OpTable {
  /** Built grids, or the rows of a key (or how to read them) whose grid is built on first use. */
  private readonly store = new Map<string, Grid | Row[] | (() => Grid)>();
  private readonly keys = new Map<string, Row>();
  private readonly byStr = new Map<string, string[]>();
  private readonly nearest = new Map<string, string | null>();
  private readonly x = new Float64Array(8);
  private readonly xc = new Float64Array(8);

  constructor(readonly spec: OpSpec, readonly peaks: Peaks, grids: Map<string, Grid> | Map<string, Row[]>) {
    for (const [k, g] of grids) this.add(k, Array.isArray(g) ? g[0]! : g.key, g);
  }

  private add(k: string, src: Row, g: Grid | Row[] | (() => Grid)): void {
    const keyRow: Row = {};
    for (const c of this.spec.keyCols) keyRow[c] = src[c]!;
    this.store.set(k, g);
    this.keys.set(k, keyRow);
    const sk = strKeyOf(this.spec, keyRow);
    let l = this.byStr.get(sk);
    if (!l) this.byStr.set(sk, (l = []));
    l.push(k);
  }

  /** A table whose grids are laid out lazily, key by key, when first asked for. */
  static fromRows(spec: OpSpec, peaks: Peaks, rows: Row[]): OpTable {
    return new OpTable(spec, peaks, groupRows(spec, rows));
  }

  /**
   * A table over keys whose cells are read only when a lookup first needs the key (packed tables; see
   * PackedOp): the same grids fromRows lays out from the same rows. Keys must be distinct; their order is the
   * file's, as fromRows keeps it.
   */
  static lazy(spec: OpSpec, peaks: Peaks, t: Pick<PackedOp, 'keys' | 'rowsOf' | 'lnCellsOf'>): OpTable {
    const table = new OpTable(spec, peaks, new Map<string, Grid>());
    t.keys.forEach((key, i) => table.add(keyOf(spec, key), key, () => {
      const cells = t.lnCellsOf(i);
      if (!cells) return buildGrids(spec, peaks, t.rowsOf(i)).values().next().value as Grid;
      const k: Row = {};
      for (const c of spec.keyCols) k[c] = key[c]!;
      return denseGrid(spec, peaks, k, cells.values, cells.lnLat);
    }));
    return table;
  }

  /** The grid of an exact key string (see keyOf), built on first use. */
  gridByKey(k: string): Grid | undefined {
    return this.grid(k);
  }

  private grid(k: string): Grid | undefined {
    const v = this.store.get(k);
    if (v === undefined) return undefined;
    if (!Array.isArray(v) && typeof v !== 'function') return v;
    const g = typeof v === 'function' ? v() : (buildGrids(this.spec, this.peaks, v).values().next().value as Grid);
    this.store.set(k, g);
    return g;
  }

  /** Every grid (built now if still pending). */
  get grids(): Map<string, Grid> {
    const out = new Map<string, Grid>();
    for (const k of this.store.keys()) out.set(k, this.grid(k)!);
    return out;
  }

  /** Which distinct values of a key column the table holds (the dtypes, the attention windows), as text. */
  keyValues(col: string): Set<string> {
    return new Set([...this.keys.values()].map((r) => String(r[col])));
  }

  private gridFor(q: Row): Grid | null {
    const k = keyOf(this.spec, q);
    if (this.store.has(k)) return this.grid(k)!;
    const memo = this.nearest.get(k);
    if (memo !== undefined) return memo === null ? null : this.grid(memo)!;
    const cands = this.byStr.get(strKeyOf(this.spec, q));
    let best: string | null = null;
    let bestD = Infinity;
    if (cands) {
      for (const ck of cands) {
        const key = this.keys.get(ck)!;
        let dist = 0;
        for (const c of this.spec.keyCols) {
          if (this.spec.stringCols.includes(c)) continue;
          const a = Math.max(q[c] as number, 0.5), b = Math.max(key[c] as number, 0.5);
          dist += Math.abs(Math.log2(a / b));
        }
        if (dist < bestD) { bestD = dist; best = ck; }
      }
    }
    if (this.nearest.size > 100000) this.nearest.clear();
    this.nearest.set(k, best);
    return best === null ? null : this.grid(best)!;
  }

  /** Whether the table holds a grid for exactly this key. */
  hasKey(q: Row): boolean {
    return this.store.has(keyOf(this.spec, q));
  }

  /**
   * Latency in ms, or undefined when the table has no grid for the query's names (dtype, collective...).
   * With `exactOnly`, also undefined when the numeric key (heads, experts, ...) is not in the table.
   */
  lookup(q: Row, exactOnly = false): number | undefined {
    const g = exactOnly ? this.grid(keyOf(this.spec, q)) : this.gridFor(q);
    if (!g) return undefined;
    const axes = this.spec.axisCols;
    for (let i = 0; i < axes.length; i++) this.x[i] = Math.log2(Math.max(q[axes[i]!] as number, 1e-9));
    const { v, clamped } = interp(g, this.x, this.xc);
    let lat = Math.exp(v);
    const solQ = this.spec.sol(this.peaks, q);
    let sameKey = true;
    for (const c of this.spec.keyCols) if (g.key[c] !== q[c]) { sameKey = false; break; }
    if (clamped || !sameKey) {
      const at: Row = { ...q, ...g.key };
      for (let i = 0; i < axes.length; i++) at[axes[i]!] = 2 ** this.xc[i]!;
      const solAt = this.spec.sol(this.peaks, at);
      if (solAt > 0) lat *= solQ / solAt;
    }
    return lat > solQ ? lat : solQ;
  }
}
