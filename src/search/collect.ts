// Accumulates what one mode's search saw: counts per constraint, every rule-passing point, the misses.
import type { Sla } from '../inputs/types.js';
import type { AggEstimate, DisaggEstimate } from '../engine/types.js';
import type { Mode, ModeResult, RankedCandidate, RemovalReason } from './types.js';
import { missDetail, missRatio, nearestMisses, paretoFrontier, slaBreaks, topPerLayout } from './rank.js';

interface Miss {
  c: RankedCandidate;
  ratio: number;
  worst: RemovalReason;
}

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

  constructor(
    readonly mode: Mode,
    private readonly sla: Sla,
    private readonly totalGpus: number,
  ) {}

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
    const broke = slaBreaks(m, this.sla);
    const c: RankedCandidate = {
      estimate,
      parallel,
      gpusUsed,
      replicas,
      clusterTokPerSPerGpu: (m.tokPerSPerGpu * gpusUsed) / this.totalGpus,
      meetsSla: broke.length === 0,
      broke: broke.length === 0 ? NONE : broke,
    };
    this.points.push(c);
    if (broke.length === 0) {
      this.feasible.push(c);
    } else {
      for (const r of broke) this.removed[r]++;
      const { ratio, worst } = missRatio(m, this.sla);
      this.misses.push({ c, ratio, worst });
    }
    return c;
  }

  finish(topN: number, keepFeasible = false): ModeResult {
    const top = topPerLayout(this.feasible, topN);
    const frontier = paretoFrontier(this.points);
    let nearMisses: ModeResult['nearMisses'] = [];
    if (top.length === 0) {
      nearMisses = nearestMisses(this.misses, NEAR_MISSES, (c) => missDetail(c.estimate.metrics, this.sla, c.broke ?? []));
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
      counters: { engineCalls: this.engineCalls, screened: this.screened, elapsedMs: performance.now() - this.started },
    };
  }
}
