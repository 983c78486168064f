// Expert load on the busiest expert-parallel rank under the reference's MoE routings. The speed of light of an
// expert layer depends on it: skewed routing reads the weights of fewer distinct experts when tokens are few,
// and piles token copies onto the rank holding the hot experts when they are many.
import { rng } from '../util/rng.js';

export interface RankLoad {
  /** Token copies (tokens x top-k routed to this rank). */
  copies: number;
  /** Distinct experts of this rank with at least one token copy. */
  active: number;
}

/** Draws averaged per shape: the reference measures one random draw per row, so the tables take the mean. */
const DRAWS = 32;
/** Token counts above this are drawn at quarter octaves and interpolated (the mean load is smooth there). */
const EXACT_TOKENS = 16;
const memo = new Map<string, RankLoad>();

/**
 * Mean load of the busiest rank. `balanced` spreads the copies evenly; `power_law_<alpha>` follows the
 * reference collector's generator: each expert's load drawn from a power law on [1, 0.8 x tokens] (on
 * [0.01, 2] when there are fewer copies than experts), scaled to tokens x top-k, rounded, and the rank with
 * the most copies measured.
 */
export function busiestRankLoad(tokens: number, experts: number, topk: number, ep: number, distribution = 'balanced'): RankLoad {
  const alpha = distribution.startsWith('power_law_') ? Number(distribution.slice('power_law_'.length)) : NaN;
  if (!(alpha > 1) || tokens < 1 || experts < ep) {
    const copies = (tokens * topk) / ep;
    return { copies, active: Math.min(experts / ep, copies) };
  }
  if (tokens <= EXACT_TOKENS) return drawnLoad(Math.round(tokens), experts, topk, ep, alpha);
  // Between quarter-octave draws: the share of all copies on the busiest rank and its active experts, linear in log2(tokens).
  const x = 4 * Math.log2(tokens);
  const j = Math.floor(x);
  const w = x - j;
  const at = (i: number) => {
    const t = Math.round(2 ** (i / 4));
    const l = drawnLoad(t, experts, topk, ep, alpha);
    return { share: l.copies / (t * topk), active: l.active };
  };
  const a = at(j);
  const b = w > 0 ? at(j + 1) : a;
  return { copies: ((1 - w) * a.share + w * b.share) * tokens * topk, active: (1 - w) * a.active + w * b.active };
}

function drawnLoad(tokens: number, experts: number, topk: number, ep: number, alpha: number): RankLoad {
  const key = `${tokens}|${experts}|${topk}|${ep}|${alpha}`;
  let v = memo.get(key);
  if (!v) memo.set(key, (v = drawPowerLaw(tokens, experts, topk, ep, alpha)));
  return v;
}

function drawPowerLaw(tokens: number, experts: number, topk: number, ep: number, alpha: number): RankLoad {
  const next = rng(((tokens * 7919) ^ (experts * 104729) ^ (topk * 1299709) ^ (ep * 15485863) ^ Math.round(alpha * 1000)) >>> 0);
  const total = tokens * topk;
  const [xmin, xmax] = total > experts ? [1, tokens * 0.8] : [0.01, 2];
  const e = 1 - alpha;
  const lo = xmin ** e;
  const span = xmax ** e - lo;
  const perRank = Math.floor(experts / ep);
  const raw = new Float64Array(experts);
  const load = new Int32Array(experts);
  let copies = 0;
  let active = 0;
  for (let d = 0; d < DRAWS; d++) {
    let sum = 0;
    for (let i = 0; i < experts; i++) sum += raw[i] = (span * next() + lo) ** (1 / e);
    let assigned = 0;
    for (let i = 0; i < experts; i++) assigned += load[i] = Math.round((raw[i]! / sum) * total);
    // Rounding leaves a few copies over or short: the generator settles them on the most (least) loaded experts.
    if (assigned !== total) {
      const order = [...load.keys()].sort((a, b) => load[b]! - load[a]!);
      for (let i = 0; assigned < total; i++, assigned++) load[order[i % experts]!]! += 1;
      for (let i = 0; assigned > total; i++, assigned--) {
        const j = order[experts - 1 - (i % experts)]!;
        if (load[j]! > 0) load[j]! -= 1;
        else load[load.indexOf(Math.max(...load))]! -= 1;
      }
    }
    let best = -1;
    let bestActive = 0;
    for (let r = 0; r < ep; r++) {
      let c = 0;
      let a = 0;
      for (let j = r * perRank; j < (r + 1) * perRank; j++) {
        c += load[j]!;
        if (load[j]! > 0) a++;
      }
      if (c > best) [best, bestActive] = [c, a];
    }
    copies += best;
    active += bestActive;
  }
  return { copies: copies / DRAWS, active: active / DRAWS };
}
