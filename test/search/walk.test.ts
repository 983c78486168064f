import { describe, expect, it } from 'vitest';
import { batchGrid } from '../../src/search/candidates.js';
import { bisectSizes, walkBatches, type WalkPoint } from '../../src/search/walk.js';

/** A layout whose TPOT rises linearly with batch (ms = base + slope * batch) and a target on it. */
function linearTpot(base: number, slope: number, target: number) {
  const seen: number[] = [];
  const evaluate = (b: number): WalkPoint => {
    seen.push(b);
    const tpot = base + slope * b;
    return { value: b / tpot, meetsSla: tpot <= target, margin: tpot / target };
  };
  return { seen, evaluate, edge: Math.floor((target - base) / slope) };
}

describe('SLA edges between grid points', () => {
  it('finds the largest batch meeting a TPOT target exactly, for edges all over the grid', () => {
    const grid = batchGrid(1024);
    for (let target = 10.05; target < 60; target += 0.37) {
      const t = linearTpot(8, 0.05, target);
      const { edges } = walkBatches(grid, t.evaluate);
      const met = t.seen.filter((b) => 8 + 0.05 * b <= target);
      expect(Math.max(...met)).toBe(Math.min(t.edge, 1024));
      if (t.edge < 1024 && !grid.includes(t.edge)) expect(edges).toEqual([t.edge]);
    }
  });

  it('with margins, interpolation needs fewer probes than bisection on a linear latency', () => {
    const withMargin = linearTpot(8, 0.05, 30);
    const without = linearTpot(8, 0.05, 30);
    const grid = batchGrid(1024);
    walkBatches(grid, withMargin.evaluate);
    walkBatches(grid, (b) => {
      const p = without.evaluate(b);
      return { value: p.value, meetsSla: p.meetsSla };
    });
    expect(Math.max(...withMargin.seen.filter((b) => b <= withMargin.edge))).toBe(440);
    expect(Math.max(...without.seen.filter((b) => b <= without.edge))).toBe(440);
    expect(withMargin.seen.length).toBeLessThan(without.seen.length);
  });

  it('still finds the edge when the margin is far from linear (bisection takes over)', () => {
    const seen: number[] = [];
    // Latency flat then a wall at 301: interpolation's first guess lands far off.
    const at = (b: number): WalkPoint => (seen.push(b), { value: b, meetsSla: b <= 300, margin: b <= 300 ? 0.5 : 50 });
    const edge = bisectSizes(256, at(256), 320, at(320), 1, at);
    expect(edge).toBe(300);
    expect(seen.length).toBeLessThan(2 + 12);
  });

  it('keeps to multiples of the step (attention-DP ranks) between grid points', () => {
    const seen: number[] = [];
    const at = (b: number): WalkPoint => (seen.push(b), { value: b, meetsSla: b <= 301 });
    expect(bisectSizes(256, at(256), 320, at(320), 8, at)).toBe(296);
    expect(seen.slice(2).every((b) => b % 8 === 0)).toBe(true);
  });

  it('returns no edge when the grid point itself is the edge, and stops at a refusal', () => {
    const at = (b: number): WalkPoint => ({ value: b, meetsSla: b <= 256 });
    expect(bisectSizes(256, at(256), 320, at(320), 1, at)).toBeUndefined();
    const refused = (b: number): WalkPoint | null => (b > 280 ? null : { value: b, meetsSla: true });
    expect(bisectSizes(256, { value: 256, meetsSla: true }, 320, { value: 320, meetsSla: false }, 1, refused)).toBeUndefined();
  });

  it('finds an edge where the SLA starts to hold at larger batches', () => {
    const at = (b: number): WalkPoint => ({ value: b, meetsSla: b >= 77, margin: 2 - b / 77 });
    expect(bisectSizes(64, at(64), 80, at(80), 1, at)).toBe(77);
  });
});
