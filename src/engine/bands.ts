// Error bands: the spread of signed % error measured by `npm run bench:e2e` for the estimate's family,
// with fallbacks from (system, backend, family, mode) to coarser groups. The spread's quantiles are chosen so
// that 80% of measured runs left out of the fit fall inside (runs of one family err alike, so a group's own
// 10-90% range holds fewer new runs). A kind and mode (MoE agg, ...) whose errors are narrower than the others'
// has a table of its own; the rest share one. The data file holds aggregate statistics only.
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { dataPath } from '../util/paths.js';
import type { Band, EngineContext, MetricBands, ServingMetrics } from './types.js';

/** Low and high quantile (q and 1 - q of the metric's fit) of the signed error (predicted - measured) / measured, in %. */
const statSchema = z.object({ n: z.number(), low: z.number(), high: z.number() });
/** How a metric's bands were fitted: the quantiles [q, 1 - q] and the rows a group needs to be used. */
const fitSchema = z.object({ quantile: z.number(), minRows: z.number() });
const groupSchema = z.object({ ttft: statSchema.optional(), tpot: statSchema.optional(), throughput: statSchema.optional() });
const tableSchema = z.object({
  fit: z.object({ ttft: fitSchema, tpot: fitSchema, throughput: fitSchema }),
  groups: z.record(z.string(), groupSchema),
});
/** `tables['*']` serves every kind and mode without a table of its own (`tables['moe agg']`, ...). */
export const bandsFileSchema = z.object({
  description: z.string(),
  tables: z.record(z.string(), tableSchema).refine((t) => '*' in t, { message: 'no shared table "*"' }),
});
export type ErrorStat = z.infer<typeof statSchema>;
export type BandFit = z.infer<typeof fitSchema>;
export type ErrorGroup = z.infer<typeof groupSchema>;
export type BandTable = z.infer<typeof tableSchema>;
export type ErrorBandsFile = z.infer<typeof bandsFileSchema>;
/** The measured runs each band of an estimate comes from, in words. */
export type BandBasis = { ttft: string; tpot: string; throughput: string };

export const BANDS_FILE = 'error-bands.json';
/** Used when no group has enough rows: a deliberately wide band. */
const FALLBACK: ErrorStat = { n: 0, low: -35, high: 35 };

let loaded: ErrorBandsFile | null | undefined;

/**
 * The shipped bands, or null (wide fallback bands) when the file is absent or lacks its shared table. The file is
 * written by bench:e2e and checked against `bandsFileSchema` by the tests, not on every run (parsing it through the
 * schema took longer than the rest of loading a plan's context).
 */
export function loadBands(): ErrorBandsFile | null {
  if (loaded !== undefined) return loaded;
  const p = dataPath(BANDS_FILE);
  const file = existsSync(p) ? (JSON.parse(readFileSync(p, 'utf8')) as Partial<ErrorBandsFile>) : undefined;
  loaded = file?.tables?.['*']?.fit && file.tables['*'].groups ? (file as ErrorBandsFile) : null;
  return loaded;
}

/** Load buckets of the bands: clients per GPU up to 1, up to 8, above (errors grow with load). */
export const LOAD_EDGES = [1, 8];
const LOAD_NAMES = ['light', 'mid', 'heavy'];

/** The load bucket of an estimate with `clients` on `gpus` GPUs, or undefined when unknown. */
export function loadOf(clients: number | undefined, gpus: number | undefined): string | undefined {
  if (!(clients! > 0) || !(gpus! > 0)) return undefined;
  const perGpu = clients! / gpus!;
  const i = LOAD_EDGES.findIndex((e) => perGpu <= e);
  return LOAD_NAMES[i < 0 ? LOAD_EDGES.length : i];
}

/**
 * Group keys from the finest to the coarsest. With a load bucket, each group at that load comes before the
 * group at every load (a group at one load needs the rows the fit asks for, as any).
 */
export function groupKeys(system: string, backend: string, family: string, mode: string, load?: string): string[] {
  const keys = [
    `${system}|${backend}|${family}|${mode}`,
    `*|${backend}|${family}|${mode}`,
    `*|*|${family}|${mode}`,
    `*|${backend}|*|${mode}`,
    `*|*|*|${mode}`,
    `*|*|*|*`,
  ];
  return load === undefined ? keys : keys.flatMap((k) => [`${k}|${load}`, k]);
}

/** The table that serves estimates of a kind (dense or moe) and mode. */
export function tableFor(file: ErrorBandsFile, kind: string, mode: string): BandTable {
  return file.tables[`${kind} ${mode}`] ?? file.tables['*']!;
}

/** A band's error statistics and the group they come from (none: the deliberately wide fallback). */
type Found = { stat: ErrorStat; key?: string };

/** The finest group of `keys` with the rows the metric's fit asks for. */
function lookup(table: BandTable | null, keys: string[], metric: keyof ErrorGroup): Found {
  if (table) {
    for (const key of keys) {
      const stat = table.groups[key]?.[metric];
      if (stat && stat.n >= table.fit[metric].minRows) return { stat, key };
    }
  }
  return { stat: FALLBACK };
}

/** The finest group of `keys` with the rows the metric's fit asks for (a deliberately wide band when none has). */
export function statFor(table: BandTable | null, keys: string[], metric: keyof ErrorGroup): ErrorStat {
  return lookup(table, keys, metric).stat;
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

const statMemo = new WeakMap<EngineContext, Record<string, { ttft: Found; tpot: Found; thr: Found; ownTable: boolean }>>();

/** The bands' statistics for a mode, at a load bucket when given (the basis words use the groups at every load). */
function statsOf(ctx: EngineContext, mode: 'agg' | 'disagg', load?: string) {
  let m = statMemo.get(ctx);
  if (!m) statMemo.set(ctx, (m = {}));
  const memoKey = load === undefined ? mode : `${mode}|${load}`;
  let v = m[memoKey];
  if (!v) {
    const keys = groupKeys(ctx.system.name, ctx.backend, ctx.model.family, mode, load);
    const file = loadBands();
    const kind = ctx.model.moe ? 'moe' : 'dense';
    const table = file && tableFor(file, kind, mode);
    v = m[memoKey] = {
      ttft: lookup(table, keys, 'ttft'), tpot: lookup(table, keys, 'tpot'), thr: lookup(table, keys, 'throughput'),
      ownTable: !!file?.tables[`${kind} ${mode}`],
    };
  }
  return v;
}

/**
 * Which measured runs each band comes from, in words ("deepseek_v3 agg runs on b200_sxm with trtllm (153)") or,
 * where no group has enough runs, the wide fallback.
 */
export function bandBasisFor(ctx: EngineContext, mode: 'agg' | 'disagg'): BandBasis {
  const s = statsOf(ctx, mode);
  const kind = ctx.model.moe ? 'MoE' : 'dense';
  const words = (f: Found): string => {
    if (!f.key) return `no group with enough measured runs: +-${FALLBACK.high}%`;
    const [system, backend, family, groupMode] = f.key.split('|');
    // A table of the kind's own holds that kind's runs only, so its coarse groups are of that kind.
    const what = family !== '*' ? family : s.ownTable ? kind : 'all';
    const on = `on ${system === '*' ? 'any system' : system} with ${backend === '*' ? 'any engine' : backend}`;
    return `${what} ${groupMode === '*' ? 'agg and disagg' : groupMode} runs ${on} (${f.stat.n})`;
  };
  return { ttft: words(s.ttft), tpot: words(s.tpot), throughput: words(s.thr) };
}

/** A band basis for display: one group when every metric shares it, else one line per metric. */
export function basisLines(b: BandBasis): string[] {
  if (b.ttft === b.tpot && b.tpot === b.throughput) return [b.ttft];
  return [`TTFT: ${b.ttft}`, `TPOT: ${b.tpot}`, `tokens/s: ${b.throughput}`];
}

export function bandsFor(ctx: EngineContext, mode: 'agg' | 'disagg', m: ServingMetrics): MetricBands {
  const s = statsOf(ctx, mode, loadOf(m.concurrency, m.gpus));
  const thrBand = band(m.tokPerSPerGpu, s.thr.stat);
  const tpotBand = band(m.tpotMs, s.tpot.stat);
  const ttftBand = band(m.ttftMs, s.ttft.stat);
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

// ---- Confidence: a band read as a distribution of where the measured value falls. ----
// The band holds 80% of measured runs left out of its fit, so its ends are taken as the 10% and 90% points of
// the measured value. Between and beyond them the measured value is read as log-normal on each side of the
// prediction (a split normal in log space, median at the prediction): errors are skewed (TTFT more often
// measures far above than below), and a log scale keeps values positive. The median sits at the prediction so
// that confidence 0.5 judges the prediction itself; a bias the bands reveal belongs in the model.

/** z of the band's upper end (its 90% point). */
const Z_BAND = 1.2815515655446004;

/** Standard normal quantile (Acklam's rational approximation, relative error below 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) return p <= 0 ? -Infinity : Infinity;
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const tail = (q: number) => (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/** Standard normal CDF (Abramowitz and Stegun 7.1.26 for erf, absolute error below 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erf = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** Log-scale spread per unit z above and below the prediction (0 where the band ends at the prediction). */
function spreads(pred: number, b: Band): { up: number; down: number } {
  const up = pred > 0 && b.high > pred ? Math.log(b.high / pred) / Z_BAND : 0;
  const down = pred > 0 && b.low > 0 && b.low < pred ? Math.log(pred / b.low) / Z_BAND : 0;
  return { up, down };
}

/** The value the measured one stays at or under with probability `p` (0.5: the prediction; 0.9: the band's upper end). */
export function valueAtConfidence(pred: number, b: Band, p: number): number {
  if (p === 0.5) return pred;
  const z = normalQuantile(p);
  const s = spreads(pred, b);
  return pred * Math.exp(z * (z > 0 ? s.up : s.down));
}

/** The chance that the measured value is at most `target` (for a latency: that the target holds). */
export function chanceAtMost(pred: number, b: Band, target: number): number {
  if (!(target > 0) || !(pred > 0)) return target >= pred ? 1 : 0;
  const s = spreads(pred, b);
  const r = Math.log(target / pred);
  const spread = r >= 0 ? s.up : s.down;
  if (spread === 0) return r >= 0 ? 1 : 0;
  return normalCdf(r / spread);
}
