// Walk a batch-size grid cheaply: a doubling subsequence (and the largest size) first, then bisect on the fine
// grid wherever the SLA verdict flips between two neighbours, so the largest size meeting the SLA is found
// exactly. Sizes past the throughput peak are dominated (less throughput and less speed per user).

export interface WalkPoint {
  /** Throughput per GPU (what larger batches must beat to continue). */
  value: number;
  meetsSla: boolean;
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

/**
 * Visit grid sizes through `evaluate` (null = refused: stop there). Returns how many were evaluated.
 * With `exhaustive`, every size is evaluated in order (user-given batch lists).
 */
export function walkBatches(grid: number[], evaluate: (batch: number) => WalkPoint | null, exhaustive = false): number {
  if (exhaustive) {
    let n = 0;
    for (const b of grid) {
      n++;
      if (evaluate(b) === null) break;
    }
    return n;
  }
  const seen = new Map<number, WalkPoint | null>();
  const visit = (i: number): WalkPoint | null => {
    const b = grid[i];
    if (!seen.has(b)) seen.set(b, evaluate(b));
    return seen.get(b)!;
  };
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
  for (let k = 1; k < coarse.length; k++) {
    let lo = coarse[k - 1];
    let hi = coarse[k];
    if (lo.p.meetsSla === hi.p.meetsSla) continue;
    while (hi.i - lo.i > 1) {
      const mid = (lo.i + hi.i) >> 1;
      const p = visit(mid);
      if (p === null) break;
      if (p.meetsSla === lo.p.meetsSla) lo = { i: mid, p };
      else hi = { i: mid, p };
    }
  }
  return seen.size;
}
