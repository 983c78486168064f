// Error bands: the spread of signed % error measured by `npm run bench:e2e` for the estimate's family,
// with fallbacks from (system, backend, family, mode) to coarser groups. The data file holds aggregate
// statistics only.
import { existsSync, readFileSync } from 'node:fs';
import { dataPath } from '../util/paths.js';
import type { Band, EngineContext, MetricBands, ServingMetrics } from './types.js';

export interface ErrorStat {
  n: number;
  /** 10th and 90th percentile of signed error (predicted - measured) / measured, in %. */
  p10: number;
  p90: number;
}
export interface ErrorGroup {
  ttft?: ErrorStat;
  tpot?: ErrorStat;
  throughput?: ErrorStat;
}
export interface ErrorBandsFile {
  description: string;
  groups: Record<string, ErrorGroup>;
}

export const BANDS_FILE = 'error-bands.json';
const MIN_ROWS = 8;
/** Used when no group has enough rows: a deliberately wide band. */
const FALLBACK: ErrorStat = { n: 0, p10: -35, p90: 35 };

let loaded: ErrorBandsFile | null | undefined;

export function loadBands(): ErrorBandsFile | null {
  if (loaded !== undefined) return loaded;
  const p = dataPath(BANDS_FILE);
  loaded = existsSync(p) ? (JSON.parse(readFileSync(p, 'utf8')) as ErrorBandsFile) : null;
  return loaded;
}

/** Group keys from the finest to the coarsest. */
export function groupKeys(system: string, backend: string, family: string, mode: string): string[] {
  return [
    `${system}|${backend}|${family}|${mode}`,
    `*|${backend}|${family}|${mode}`,
    `*|*|${family}|${mode}`,
    `*|${backend}|*|${mode}`,
    `*|*|*|${mode}`,
    `*|*|*|*`,
  ];
}

function statFor(keys: string[], metric: keyof ErrorGroup): ErrorStat {
  const file = loadBands();
  if (file) {
    for (const k of keys) {
      const s = file.groups[k]?.[metric];
      if (s && s.n >= MIN_ROWS) return s;
    }
  }
  return FALLBACK;
}

/**
 * The true value lay in [pred/(1+p90), pred/(1+p10)] for 80% of the measured rows of the family; the band is
 * widened to contain the estimate itself when the family's errors were all of one sign.
 */
function band(pred: number, s: ErrorStat): Band {
  const lo = pred / (1 + s.p90 / 100);
  const hi = s.p10 <= -95 ? pred * 20 : pred / (1 + s.p10 / 100);
  return { low: Math.min(lo, hi, pred), high: Math.max(lo, hi, pred) };
}

const statMemo = new WeakMap<EngineContext, Record<string, { ttft: ErrorStat; tpot: ErrorStat; thr: ErrorStat }>>();

function statsOf(ctx: EngineContext, mode: 'agg' | 'disagg') {
  let m = statMemo.get(ctx);
  if (!m) statMemo.set(ctx, (m = {}));
  let v = m[mode];
  if (!v) {
    const keys = groupKeys(ctx.system.name, ctx.backend, ctx.model.family, mode);
    v = m[mode] = { ttft: statFor(keys, 'ttft'), tpot: statFor(keys, 'tpot'), thr: statFor(keys, 'throughput') };
  }
  return v;
}

export function bandsFor(ctx: EngineContext, mode: 'agg' | 'disagg', m: ServingMetrics): MetricBands {
  const { ttft, tpot, thr } = statsOf(ctx, mode);
  const thrBand = band(m.tokPerSPerGpu, thr);
  const tpotBand = band(m.tpotMs, tpot);
  const ttftBand = band(m.ttftMs, ttft);
  const decodeMs = m.requestLatencyMs - m.ttftMs;
  return {
    ttftMs: ttftBand,
    tpotMs: tpotBand,
    requestLatencyMs: {
      low: ttftBand.low + (decodeMs * tpotBand.low) / Math.max(m.tpotMs, 1e-9),
      high: ttftBand.high + (decodeMs * tpotBand.high) / Math.max(m.tpotMs, 1e-9),
    },
    tokPerSPerGpu: thrBand,
    tokPerSPerUser: { low: 1000 / tpotBand.high, high: 1000 / tpotBand.low },
  };
}
