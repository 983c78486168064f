// Error bands: the spread of signed % error measured by `npm run bench:e2e` for the estimate's family,
// with fallbacks from (system, backend, family, mode) to coarser groups. The spread's quantiles are chosen so
// that 80% of measured runs left out of the fit fall inside (runs of one family err alike, so a group's own
// 10-90% range holds fewer new runs). The data file holds aggregate statistics only.
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { dataPath } from '../util/paths.js';
import type { Band, EngineContext, MetricBands, ServingMetrics } from './types.js';

/** Low and high quantile (q and 1 - q of the metric's fit) of the signed error (predicted - measured) / measured, in %. */
const statSchema = z.object({ n: z.number(), low: z.number(), high: z.number() });
/** How a metric's bands were fitted: the quantiles [q, 1 - q] and the rows a group needs to be used. */
const fitSchema = z.object({ quantile: z.number(), minRows: z.number() });
const groupSchema = z.object({ ttft: statSchema.optional(), tpot: statSchema.optional(), throughput: statSchema.optional() });
const fileSchema = z.object({
  description: z.string(),
  fit: z.object({ ttft: fitSchema, tpot: fitSchema, throughput: fitSchema }),
  groups: z.record(z.string(), groupSchema),
});
export type ErrorStat = z.infer<typeof statSchema>;
export type BandFit = z.infer<typeof fitSchema>;
export type ErrorGroup = z.infer<typeof groupSchema>;
export type ErrorBandsFile = z.infer<typeof fileSchema>;

export const BANDS_FILE = 'error-bands.json';
/** Used when no group has enough rows: a deliberately wide band. */
const FALLBACK: ErrorStat = { n: 0, low: -35, high: 35 };

let loaded: ErrorBandsFile | null | undefined;

/** The shipped bands, or null (wide fallback bands) when the file is absent or not in this format. */
export function loadBands(): ErrorBandsFile | null {
  if (loaded !== undefined) return loaded;
  const p = dataPath(BANDS_FILE);
  const parsed = existsSync(p) ? fileSchema.safeParse(JSON.parse(readFileSync(p, 'utf8'))) : undefined;
  loaded = parsed?.success ? parsed.data : null;
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

/** The finest group of `keys` with the rows the metric's fit asks for (a deliberately wide band when none has). */
export function statFor(file: ErrorBandsFile | null, keys: string[], metric: keyof ErrorGroup): ErrorStat {
  if (file) {
    for (const k of keys) {
      const s = file.groups[k]?.[metric];
      if (s && s.n >= file.fit[metric].minRows) return s;
    }
  }
  return FALLBACK;
}

/**
 * The true value lay in [pred/(1+high), pred/(1+low)] for 80% of the measured runs held out of the fit; the band
 * is widened to contain the estimate itself when the family's errors were all of one sign.
 */
export function band(pred: number, s: ErrorStat): Band {
  const lo = pred / (1 + s.high / 100);
  const hi = s.low <= -95 ? pred * 20 : pred / (1 + s.low / 100);
  return { low: Math.min(lo, hi, pred), high: Math.max(lo, hi, pred) };
}

const statMemo = new WeakMap<EngineContext, Record<string, { ttft: ErrorStat; tpot: ErrorStat; thr: ErrorStat }>>();

function statsOf(ctx: EngineContext, mode: 'agg' | 'disagg') {
  let m = statMemo.get(ctx);
  if (!m) statMemo.set(ctx, (m = {}));
  let v = m[mode];
  if (!v) {
    const keys = groupKeys(ctx.system.name, ctx.backend, ctx.model.family, mode);
    const file = loadBands();
    v = m[mode] = { ttft: statFor(file, keys, 'ttft'), tpot: statFor(file, keys, 'tpot'), thr: statFor(file, keys, 'throughput') };
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
