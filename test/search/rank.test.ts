import { describe, expect, it } from 'vitest';
import type { AggEstimate } from '../../src/engine/types.js';
import type { ModeResult, RankedCandidate } from '../../src/search/types.js';
import { paretoFrontier, topPerLayout, verdictOf, slaBreaks, TIE_ACROSS_MODES } from '../../src/search/rank.js';
import { batchGrid } from '../../src/search/candidates.js';
import { rateMatch, workerPairs } from '../../src/search/disagg.js';
import { coarseIndices, walkBatches } from '../../src/search/walk.js';

function cand(parallel: string, cluster: number, perUser: number, meetsSla = true): RankedCandidate {
  const m = { ttftMs: 100, tpotMs: 1000 / perUser, requestLatencyMs: 1000, outputTokPerS: 1, tokPerSPerGpu: cluster, tokPerSPerUser: perUser, requestsPerS: 1, concurrency: 1, gpus: 1 };
  const b = { low: 0, high: 0 };
  const estimate = { refused: false, mode: 'agg', config: {} as AggEstimate['config'], replicas: 1, metrics: m, bands: { ttftMs: b, tpotMs: b, requestLatencyMs: b, tokPerSPerGpu: b, tokPerSPerUser: b }, memory: {} as AggEstimate['memory'] } as AggEstimate;
  return { estimate, parallel, gpusUsed: 1, replicas: 1, clusterTokPerSPerGpu: cluster, meetsSla };
}

function mode(m: 'agg' | 'disagg', top: RankedCandidate[]): ModeResult {
  return { mode: m, evaluated: 10, feasible: top.length, removed: { memory: 0, engine: 0, ttft: 0, tpot: 0, request_latency: 0 }, top, frontier: top, nearMisses: [] };
}

describe('verdict', () => {
  it('names the winner first with the ratio winner/loser', () => {
    const v = verdictOf(mode('agg', [cand('tp1pp1', 3785, 40)]), mode('disagg', [cand('p:tp1pp1 d:tp2pp1', 2768, 40)]));
    expect(v.winner).toBe('agg');
    expect(v.text).toBe('agg wins: 3785 vs 2768 tokens/s/gpu, 1.37x');
    expect(v.tie).toBeUndefined();
    const w = verdictOf(mode('agg', [cand('tp1pp1', 1000, 40)]), mode('disagg', [cand('p:tp1pp1 d:tp2pp1', 1500, 40)]));
    expect(w.winner).toBe('disagg');
    expect(w.text).toBe('disagg wins: 1500 vs 1000 tokens/s/gpu, 1.50x');
    expect(w.ratio).toBeCloseTo(1.5);
  });
  it('handles one empty mode, a missing mode and no result at all', () => {
    expect(verdictOf(mode('agg', []), mode('disagg', [cand('x', 900, 30)])).text).toBe('disagg wins: 900 tokens/s/gpu (no agg configuration meets the SLA)');
    expect(verdictOf(mode('agg', [cand('x', 900, 30)]), undefined).text).toBe('agg wins: 900 tokens/s/gpu (disagg not searched)');
    const none = verdictOf(mode('agg', []), mode('disagg', []));
    expect(none.winner).toBe('none');
    expect(none.text).toBe('no agg or disagg configuration meets the SLA');
  });
  it('calls a tie, naming both, when the modes differ by less than their predictions err relative to each other', () => {
    const v = verdictOf(mode('agg', [cand('tp2pp1', 3785, 40)]), mode('disagg', [cand('p:tp1pp1 d:tp2pp1', 3068, 40)]));
    expect(v.tie).toBe(true);
    expect(v.winner).toBe('agg');
    expect(v.text).toBe('agg and disagg tie within the prediction uncertainty (33%): agg tp2pp1 3785 vs disagg p:tp1pp1 d:tp2pp1 3068 tokens/s/gpu, 1.23x');
    // Just past the uncertainty, a win.
    expect(verdictOf(mode('agg', [cand('a', 1000, 40)]), mode('disagg', [cand('d', 1000 / (1 + TIE_ACROSS_MODES) - 1, 40)])).tie).toBeUndefined();
  });
  it('notes when the two best layouts of the winning mode are too close to call', () => {
    const v = verdictOf(mode('agg', [cand('tp2pp1', 1000, 40), cand('tp4pp1', 950, 40)]), undefined);
    expect(v.notes).toEqual(['tp2pp1 (1000) and tp4pp1 (950 tokens/s/gpu) tie within the prediction uncertainty of two agg layouts (10%)']);
    expect(verdictOf(mode('agg', [cand('tp2pp1', 1000, 40), cand('tp4pp1', 800, 40)]), undefined).notes).toBeUndefined();
  });
  it('says what relaxing each target buys, over both modes', () => {
    const relaxed = (best: [number, number, number, number]): ModeResult['relaxed'] => [
      { target: 'ttft', factor: 1.1, valueMs: 2200, best: best[0] },
      { target: 'ttft', factor: 1.25, valueMs: 2500, best: best[1] },
      { target: 'tpot', factor: 1.1, valueMs: 33, best: best[2] },
      { target: 'tpot', factor: 1.25, valueMs: 37.5, best: best[3] },
    ];
    const agg = { ...mode('agg', [cand('tp2pp1', 1000, 40)]), relaxed: relaxed([1000, 1000, 1500, 4000]) };
    const disagg = { ...mode('disagg', [cand('d', 500, 40)]), relaxed: relaxed([500, 1200, 600, 700]) };
    expect(verdictOf(agg, disagg).notes).toEqual([
      'TTFT 2200 ms instead of 2000 (+10%): no gain',
      'TTFT 2500 ms instead of 2000 (+25%): 1.20x tokens/s/gpu (1000 -> 1200)',
      'TPOT 33 ms instead of 30 (+10%): 1.50x tokens/s/gpu (1000 -> 1500)',
      'TPOT 37.5 ms instead of 30 (+25%): 4.00x tokens/s/gpu (1000 -> 4000)',
    ]);
  });
});

describe('top-N', () => {
  it('ranks by cluster tokens/s/gpu, breaks ties by tokens/s/user, keeps one row per layout', () => {
    const rows = [cand('tp1pp1', 100, 10), cand('tp2pp1', 120, 5), cand('tp1pp1', 110, 8), cand('tp4pp1', 120, 9), cand('tp8pp1', 50, 50)];
    const top = topPerLayout(rows, 3);
    expect(top.map((c) => [c.parallel, c.clusterTokPerSPerGpu])).toEqual([
      ['tp4pp1', 120],
      ['tp2pp1', 120],
      ['tp1pp1', 110],
    ]);
  });
});

describe('Pareto frontier', () => {
  it('keeps exactly the non-dominated points, SLA misses included', () => {
    const pts = [cand('a', 100, 10), cand('b', 80, 20), cand('c', 70, 15), cand('d', 50, 40, false), cand('e', 100, 5), cand('f', 30, 40)];
    const f = paretoFrontier(pts);
    expect(f.map((c) => c.parallel)).toEqual(['a', 'b', 'd']);
  });
});

describe('Pareto frontier (property)', () => {
  it('equals the brute-force non-dominated set on random points', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let trial = 0; trial < 50; trial++) {
      const pts = Array.from({ length: 40 }, (_, i) => cand(`p${i}`, Math.round(rnd() * 20), Math.round(rnd() * 20)));
      const ys = (c: RankedCandidate) => c.clusterTokPerSPerGpu;
      const xs = (c: RankedCandidate) => c.estimate.metrics.tokPerSPerUser;
      const dominated = (a: RankedCandidate) => pts.some((b) => xs(b) >= xs(a) && ys(b) >= ys(a) && (xs(b) > xs(a) || ys(b) > ys(a)));
      const expected = new Set(pts.filter((a) => !dominated(a)).map((a) => `${xs(a)},${ys(a)}`));
      const got = paretoFrontier(pts).map((a) => `${xs(a)},${ys(a)}`);
      // One point per distinct non-dominated position.
      expect(new Set(got)).toEqual(expected);
      expect(got.length).toBe(expected.size);
    }
  });
});

describe('SLA filter', () => {
  it('lists every target broken, request latency only when given', () => {
    const m = cand('x', 1, 10).estimate.metrics; // ttft 100, tpot 100, latency 1000
    expect(slaBreaks(m, { ttftMs: 50, tpotMs: 200 })).toEqual(['ttft']);
    expect(slaBreaks(m, { ttftMs: 50, tpotMs: 50, requestLatencyMs: 900 })).toEqual(['ttft', 'tpot', 'request_latency']);
    expect(slaBreaks(m, { ttftMs: 100, tpotMs: 100 })).toEqual([]);
  });
});

describe('search space helpers', () => {
  it('batch grid is fine at small sizes, geometric above 16, and ends at what fits', () => {
    const g = batchGrid(300);
    expect(g.slice(0, 16)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(g[g.length - 1]).toBe(300);
    for (let i = 17; i < g.length; i++) expect(g[i] / g[i - 1]).toBeLessThanOrEqual(1.5);
    expect(batchGrid(5)).toEqual([1, 2, 3, 4, 5]);
    expect(batchGrid(0)).toEqual([]);
  });
  it('worker pairs fit the budget and are coprime', () => {
    const pairs = workerPairs(2, 4, 16);
    for (const [x, y] of pairs) expect(2 * x + 4 * y).toBeLessThanOrEqual(16);
    expect(pairs).toContainEqual([1, 3]);
    expect(pairs).not.toContainEqual([2, 2]);
  });
  it('rate matching balances the pools', () => {
    // A prefill worker serves 2 req/s, a decode worker 1 req/s, one GPU each, 3 GPUs: 1P2D serves 2 req/s.
    const r = rateMatch(2, 1, 1, 1, 3);
    expect(r.best[0]).toEqual([1, 2]);
    expect(r.value).toBeCloseTo(2);
  });
});


describe('batch walk', () => {
  it('finds the largest batch meeting the SLA exactly, off the grid, with far fewer evaluations than the grid', () => {
    const grid = batchGrid(1000);
    const seen: number[] = [];
    // Throughput rises with batch; the SLA holds up to batch 137 (neither on the doubling subsequence nor the grid).
    expect(grid).not.toContain(137);
    const { evaluated, edges } = walkBatches(grid, (b) => {
      seen.push(b);
      return { value: b, meetsSla: b <= 137, margin: b / 137.5 };
    });
    expect(Math.max(...seen.filter((b) => b <= 137))).toBe(137);
    expect(seen).toContain(138);
    expect(edges).toEqual([137]);
    expect(evaluated).toBe(seen.length);
    expect(evaluated).toBeLessThan(grid.length / 2);
  });
  it('stops after throughput falls twice in a row, and stops at a refusal', () => {
    const grid = batchGrid(1000);
    const seen: number[] = [];
    // Peak at 64: the doubling walk sees 1..16, 36, 80 (still up), 176 and 368 (down twice), then stops.
    walkBatches(grid, (b) => (seen.push(b), { value: b <= 64 ? b : 128 - b, meetsSla: true }));
    expect(Math.max(...seen)).toBe(368);
    expect(seen).not.toContain(1000);
    const seen2: number[] = [];
    walkBatches(grid, (b) => (seen2.push(b), b > 40 ? null : { value: b, meetsSla: true }));
    // The first refused size (80 on the doubling walk) ends it.
    expect(Math.max(...seen2)).toBe(80);
    expect(seen2.filter((b) => b > 40)).toEqual([80]);
  });
  it('the coarse subsequence roughly doubles and ends at the largest size', () => {
    const grid = batchGrid(700);
    const idx = coarseIndices(grid);
    expect(idx[idx.length - 1]).toBe(grid.length - 1);
    for (let i = 1; i < idx.length - 1; i++) expect(grid[idx[i]]).toBeGreaterThanOrEqual(2 * grid[idx[i - 1]]);
  });
  it('walks every size when the batch list is given', () => {
    const seen: number[] = [];
    walkBatches([3, 5, 9], (b) => (seen.push(b), { value: -b, meetsSla: false }), true);
    expect(seen).toEqual([3, 5, 9]);
  });
});
