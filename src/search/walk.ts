// Walk a batch-size grid cheaply: a doubling subsequence (and the largest size) first, then bisect on the fine
// grid wherever the SLA verdict flips between two neighbours, then on the whole sizes between the two grid
// points where it flips, so the largest size meeting the SLA is found exactly (the grid's ~1.25x steps would
// otherwise leave up to a fifth of the throughput at the SLA edge). Sizes past the throughput peak are
// dominated (less throughput and less speed per user).

export interface WalkPoint {
  /** Throughput per GPU (what larger batches must beat to continue). */
  value: number;
  meetsSla: boolean;
  /**
   * How far past its worst target the point is (1 = on target, below 1 meets it), when known: the edge between
   * grid points is then looked for where the margin crosses 1 by linear interpolation before bisecting.
   */
  margin?: number;
}

/** Declines in throughput, in a row, after which larger batches are not tried. */
const DECLINES_BEFORE_STOP = 2;

/** Indices of a roughly doubling subsequence of the grid (1, 2, 4, 8, 16, ~32, ...) and its last entry. */
export function coarseIndices(grid: number[]): number[] {
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < grid.length; i++) {
    if (grid[i] >= next || i === grid.length - 1) {
      out.push(i);
      next = grid[i] * 2;
    }
  }
  return out;
}

export interface WalkResult {
  /** Sizes evaluated. */
  evaluated: number;
  /** Off-grid sizes found at an SLA edge that meet the SLA (the rest of the bisection's sizes are steps on the way). */
  edges: number[];
}

/**
 * Visit grid sizes through `evaluate` (null = refused: stop there). With `exhaustive`, every size is evaluated
 * in order (user-given batch lists). Between grid points the edge is searched on multiples of `step`
 * (attention-DP ranks, so that every rank runs the same batch).
 */
export function walkBatches(grid: number[], evaluate: (batch: number) => WalkPoint | null, exhaustive = false, step = 1): WalkResult {
  if (exhaustive) {
    let n = 0;
    for (const b of grid) {
      n++;
      if (evaluate(b) === null) break;
    }
    return { evaluated: n, edges: [] };
  }
  const seen = new Map<number, WalkPoint | null>();
  const at = (b: number): WalkPoint | null => {
    if (!seen.has(b)) seen.set(b, evaluate(b));
    return seen.get(b)!;
  };
  const visit = (i: number): WalkPoint | null => at(grid[i]);
  // Coarse pass.
  const coarse: { i: number; p: WalkPoint }[] = [];
  let best = -Infinity;
  let declines = 0;
  for (const i of coarseIndices(grid)) {
    const p = visit(i);
    if (p === null) break;
    coarse.push({ i, p });
    if (p.value > best) {
      best = p.value;
      declines = 0;
    } else if (++declines >= DECLINES_BEFORE_STOP) break;
  }
  // Refine where the verdict flips between coarse neighbours.
  const edges: number[] = [];
  for (let k = 1; k < coarse.length; k++) {
    let lo = coarse[k - 1];
    let hi = coarse[k];
    if (lo.p.meetsSla === hi.p.meetsSla) continue;
    let refused = false;
    while (hi.i - lo.i > 1) {
      const mid = (lo.i + hi.i) >> 1;
      const p = visit(mid);
      if (p === null) {
        refused = true;
        break;
      }
      if (p.meetsSla === lo.p.meetsSla) lo = { i: mid, p };
      else hi = { i: mid, p };
    }
    if (refused) continue;
    const edge = bisectSizes(grid[lo.i], lo.p, grid[hi.i], hi.p, step, at);
    if (edge !== undefined) edges.push(edge);
  }
  return { evaluated: seen.size, edges };
}

/**
 * Search the multiples of `step` strictly between sizes `lo` and `hi` (whose SLA verdicts differ) for the size
 * where the verdict flips; assumes the verdict is monotone between them, as latency is in batch size. With
 * margins, each probe is where the margin's line between the bracket's ends crosses 1 (latency is close to
 * linear in batch over one grid step, so the next probe is usually the neighbour that closes the bracket);
 * without margins, or after a probe that left most of the bracket, plain bisection. Returns the size next to
 * the flip that meets the SLA when it lies strictly between `lo` and `hi`.
 */
export function bisectSizes(lo: number, loPoint: WalkPoint, hi: number, hiPoint: WalkPoint, step: number, at: (b: number) => WalkPoint | null): number | undefined {
  const loMeets = loPoint.meetsSla;
  // Bracket in units of `step`: a keeps lo's verdict, b takes hi's (sizes a and b themselves may be off the step).
  let a = lo / step;
  let b = hi / step;
  let ma = loPoint.margin;
  let mb = hiPoint.margin;
  let lastLo: number | undefined;
  let firstHi: number | undefined;
  let interpolate = true;
  for (;;) {
    const first = Math.floor(a) + 1;
    const last = Math.ceil(b) - 1;
    if (first > last) break;
    let mid = (first + last) >> 1;
    if (interpolate && ma !== undefined && mb !== undefined && mb !== ma) {
      const x = a + ((1 - ma) / (mb - ma)) * (b - a);
      // The last size on lo's side of the crossing.
      if (Number.isFinite(x)) mid = Math.min(last, Math.max(first, Math.floor(x + 1e-9)));
    }
    const p = at(mid * step);
    if (p === null) return undefined;
    const before = last - first;
    if (p.meetsSla === loMeets) {
      lastLo = mid;
      a = mid;
      ma = p.margin;
    } else {
      firstHi = mid;
      b = mid;
      mb = p.margin;
    }
    // Bisect next when interpolation left most of the bracket (curvature or a kink between two targets).
    interpolate = Math.ceil(b) - 1 - (Math.floor(a) + 1) < before / 2;
  }
  const edge = loMeets ? lastLo : firstHi;
  return edge === undefined ? undefined : edge * step;
}
