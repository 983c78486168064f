// The GEMM lookup on the hot path of every prediction: per-dtype dense grids over log2(m, n, k), trilinear
// interpolation of ln(latency), roofline scaling outside the grid, SOL floor. Same answers as OpTable.lookup.
import type { Grid } from './grid.js';
import { dtypeFormat, type Peaks } from './sol.js';

interface FastGrid {
  am: Float64Array; an: Float64Array; ak: Float64Array;
  sm: number; sn: number;
  v: Float64Array;
  flops: number; wBytes: number; aBytes: number;
}

function bracket(a: Float64Array, x: number): number {
  // Index of the lower bracket, for x strictly inside [a0, alast].
  let lo = 0, hi = a.length - 1;
  while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (a[mid]! <= x) lo = mid; else hi = mid; }
  return lo;
}

export class GemmFast {
  /** Per dtype: the fast grid, or null when the table has none usable (built on first use). */
  private readonly byDtype = new Map<string, FastGrid | null>();
  constructor(private readonly peaks: Peaks, private readonly gridOf: (dtype: string) => Grid | undefined) {}

  private fast(dtype: string): FastGrid | null {
    let f = this.byDtype.get(dtype);
    if (f !== undefined) return f;
    const g = this.gridOf(dtype);
    f = null;
    if (g && g.axes.length === 3 && g.axes.every((a) => a.length >= 2)) {
      const fmt = dtypeFormat(dtype);
      f = {
        am: g.axes[0]!, an: g.axes[1]!, ak: g.axes[2]!, sm: g.strides[0]!, sn: g.strides[1]!, v: g.lnLat,
        flops: this.peaks.flops[fmt.compute], wBytes: fmt.weightBytes, aBytes: fmt.actBytes,
      };
    }
    this.byDtype.set(dtype, f);
    return f;
  }

  private sol(g: FastGrid, m: number, n: number, k: number): number {
    const math = (2 * m * n * k) / g.flops;
    const mem = (g.wBytes * n * k + g.aBytes * m * k + 2 * m * n) / this.peaks.mem;
    return math > mem ? math : mem;
  }

  /** Latency in ms, or undefined when the dtype has no grid. */
  lookup(dtype: string, m: number, n: number, k: number): number | undefined {
    const g = this.byDtype.get(dtype) ?? this.fast(dtype);
    if (!g) return undefined;
    let xm = Math.log2(m), xn = Math.log2(n), xk = Math.log2(k);
    let clamped = false;
    const { am, an, ak } = g;
    let im: number, wm: number, in_: number, wn: number, ik: number, wk: number;
    if (xm <= am[0]!) { clamped ||= xm < am[0]!; xm = am[0]!; im = 0; wm = 0; }
    else if (xm >= am[am.length - 1]!) { clamped ||= xm > am[am.length - 1]!; xm = am[am.length - 1]!; im = am.length - 2; wm = 1; }
    else { im = bracket(am, xm); wm = (xm - am[im]!) / (am[im + 1]! - am[im]!); }
    if (xn <= an[0]!) { clamped ||= xn < an[0]!; xn = an[0]!; in_ = 0; wn = 0; }
    else if (xn >= an[an.length - 1]!) { clamped ||= xn > an[an.length - 1]!; xn = an[an.length - 1]!; in_ = an.length - 2; wn = 1; }
    else { in_ = bracket(an, xn); wn = (xn - an[in_]!) / (an[in_ + 1]! - an[in_]!); }
    if (xk <= ak[0]!) { clamped ||= xk < ak[0]!; xk = ak[0]!; ik = 0; wk = 0; }
    else if (xk >= ak[ak.length - 1]!) { clamped ||= xk > ak[ak.length - 1]!; xk = ak[ak.length - 1]!; ik = ak.length - 2; wk = 1; }
    else { ik = bracket(ak, xk); wk = (xk - ak[ik]!) / (ak[ik + 1]! - ak[ik]!); }
    const v = g.v, sm = g.sm, sn = g.sn;
    const o = im * sm + in_ * sn + ik;
    const c00 = v[o]! * (1 - wk) + v[o + 1]! * wk;
    const c01 = v[o + sn]! * (1 - wk) + v[o + sn + 1]! * wk;
    const c10 = v[o + sm]! * (1 - wk) + v[o + sm + 1]! * wk;
    const c11 = v[o + sm + sn]! * (1 - wk) + v[o + sm + sn + 1]! * wk;
    const ln = (c00 * (1 - wn) + c01 * wn) * (1 - wm) + (c10 * (1 - wn) + c11 * wn) * wm;
    let lat = Math.exp(ln);
    const s = this.sol(g, m, n, k);
    if (clamped) lat *= s / this.sol(g, 2 ** xm, 2 ** xn, 2 ** xk);
    return lat > s ? lat : s;
  }
}
