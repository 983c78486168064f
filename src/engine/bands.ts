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
const fileSchema = z.object({
  description: z.string(),
  tables: z.record(z.string(), tableSchema).refine((t) => '*' in t, { message: 'no shared table "*"' }),
});
export type ErrorStat = z.infer<typeof statSchema>;
export type BandFit = z.infer<typeof fitSchema>;
export type ErrorGroup = z.infer<typeof groupSchema>;
export type BandTable = z.infer<typeof tableSchema>;
export type ErrorBandsFile = z.infer<typeof fileSchema>;
/** The measured runs each band of an estimate comes from, in words. */
export type BandBasis = { ttft: string; tpot: string; throughput: string };

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

function statsOf(ctx: EngineContext, mode: 'agg' | 'disagg') {
  let m = statMemo.get(ctx);
  if (!m) statMemo.set(ctx, (m = {}));
  let v = m[mode];
  if (!v) {
    const keys = groupKeys(ctx.system.name, ctx.backend, ctx.model.family, mode);
    const file = loadBands();
    const kind = ctx.model.moe ? 'moe' : 'dense';
    const table = file && tableFor(file, kind, mode);
    v = m[mode] = {
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
  const s = statsOf(ctx, mode);
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
