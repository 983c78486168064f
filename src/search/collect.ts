// Accumulates what one mode's search saw: counts per constraint, every rule-passing point, the misses.
import type { Sla } from '../inputs/types.js';
import type { AggEstimate, DisaggEstimate } from '../engine/types.js';
import type { Mode, ModeResult, RankedCandidate, Relaxation, RemovalReason } from './types.js';
import { missDetail, missRatio, nearestMisses, paretoFrontier, slaBreaks, topPerLayout } from './rank.js';
import { confidenceOf, latenciesAt, slaChance, type JudgedLatencies } from './confidence.js';

interface Miss {
  c: RankedCandidate;
  ratio: number;
  worst: RemovalReason;
}

/** The SLA field each relaxable target sets. */
const SLA_FIELD: Record<Relaxation['target'], 'ttftMs' | 'tpotMs' | 'requestLatencyMs'> = {
  ttft: 'ttftMs',
  tpot: 'tpotMs',
  request_latency: 'requestLatencyMs',
};

/** How far each target is relaxed in the verdict's "what relaxing buys" lines. */
export const RELAX_FACTORS = [1.1, 1.25];

interface RuleMiss {
  parallel: string;
  broke: 'memory' | 'engine';
  detail: string;
  gpus: number;
}

const NEAR_MISSES = 5;
const NONE: RemovalReason[] = [];

export class ModeCollector {
  evaluated = 0;
  engineCalls = 0;
  /** Pool probes (disagg), counted as evaluated candidates. */
  probes = 0;
  /** Worker splits scored by rate matching only. */
  screened = 0;
  readonly removed: Record<RemovalReason, number> = { memory: 0, engine: 0, ttft: 0, tpot: 0, request_latency: 0 };
  /** Every evaluated point that passed the engine and memory rules (the frontier's domain). */
  readonly points: RankedCandidate[] = [];
  readonly feasible: RankedCandidate[] = [];
  private readonly misses: Miss[] = [];
  private readonly ruleMisses = new Map<string, RuleMiss>();
  private readonly started = performance.now();
  /** The latencies each evaluated point was judged on (at the SLA's confidence). */
  private readonly judgedOf = new Map<RankedCandidate, JudgedLatencies>();
  private readonly confidence: number;

  constructor(
    readonly mode: Mode,
    private readonly sla: Sla,
    private readonly totalGpus: number,
  ) {
    this.confidence = confidenceOf(sla);
  }

  /** `count` candidates removed by a memory or engine rule (e.g. every batch size of a layout that does not fit). */
  refuse(constraint: 'memory' | 'engine', parallel: string, reason: string, gpus: number, count = 1): void {
    this.evaluated += count;
    this.removed[constraint] += count;
    if (!this.ruleMisses.has(parallel)) this.ruleMisses.set(parallel, { parallel, broke: constraint, detail: reason, gpus });
  }

  /** Score one estimate against the whole budget and the SLA. */
  add(estimate: AggEstimate | DisaggEstimate, parallel: string, replicas: number, unitGpus: number): RankedCandidate {
    this.evaluated++;
    const gpusUsed = replicas * unitGpus;
    const m = estimate.metrics;
    const judged = latenciesAt(m, estimate.bands, this.confidence);
    const broke = slaBreaks(judged, this.sla);
    const c: RankedCandidate = {
      estimate,
      parallel,
      gpusUsed,
      replicas,
      clusterTokPerSPerGpu: (m.tokPerSPerGpu * gpusUsed) / this.totalGpus,
      meetsSla: broke.length === 0,
      broke: broke.length === 0 ? NONE : broke,
      chance: slaChance(m, estimate.bands, this.sla),
    };
    this.points.push(c);
    this.judgedOf.set(c, judged);
    if (broke.length === 0) {
      this.feasible.push(c);
    } else {
      for (const r of broke) this.removed[r]++;
      const { ratio, worst } = missRatio(judged, this.sla);
      this.misses.push({ c, ratio, worst });
    }
    return c;
  }

  /** How far past its worst target a point is as judged (below 1: meets the SLA); monotone in load. */
  margin(c: RankedCandidate): number {
    return missRatio(this.judgedOf.get(c) ?? c.estimate.metrics, this.sla).ratio;
  }

  /** The best evaluated point with each target relaxed by each of RELAX_FACTORS. */
  relaxations(): Relaxation[] {
    const out: Relaxation[] = [];
    for (const target of Object.keys(SLA_FIELD) as Relaxation['target'][]) {
      const value = this.sla[SLA_FIELD[target]];
      if (value === undefined) continue;
      for (const factor of RELAX_FACTORS) {
        const sla = { ...this.sla, [SLA_FIELD[target]]: value * factor };
        let best = 0;
        for (const [c, judged] of this.judgedOf) {
          if (c.clusterTokPerSPerGpu > best && slaBreaks(judged, sla).length === 0) best = c.clusterTokPerSPerGpu;
        }
        out.push({ target, factor, valueMs: value * factor, best });
      }
    }
    return out;
  }

  finish(topN: number, keepFeasible = false): ModeResult {
    const top = topPerLayout(this.feasible, topN);
    const frontier = paretoFrontier(this.points);
    let nearMisses: ModeResult['nearMisses'] = [];
    if (top.length === 0) {
      const at = this.confidence === 0.5 ? '' : ` at confidence ${this.confidence}`;
      nearMisses = nearestMisses(this.misses, NEAR_MISSES, (c) => missDetail(this.judgedOf.get(c)!, this.sla, c.broke ?? []) + at);
      // Layouts that never ran (largest first: closest to fitting) fill the rest.
      const rules = [...this.ruleMisses.values()].sort((a, b) => b.gpus - a.gpus);
      for (const r of rules) {
        if (nearMisses.length >= NEAR_MISSES) break;
        if (nearMisses.some((n) => n.parallel === r.parallel)) continue;
        nearMisses.push({ parallel: r.parallel, broke: r.broke, detail: r.detail });
      }
    }
    return {
      mode: this.mode,
      evaluated: this.evaluated,
      feasible: this.feasible.length,
      removed: this.removed,
      top,
      frontier,
      nearMisses,
      ...(keepFeasible ? { feasibleAll: this.feasible } : {}),
      relaxed: this.relaxations(),
      counters: { engineCalls: this.engineCalls, screened: this.screened, elapsedMs: performance.now() - this.started },
    };
  }
}
