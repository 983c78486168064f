// Kernel accuracy of the family ops (linear and sparse attention, hyper-connections, quantization): the pricer
// the engine uses (FamilyPricer, as loadPerfSource builds it) against every row of the reference family tables,
// one slice per system, backend, version, part and group. Scored like the other ops (median <= 10%, p90 <= 25%
// on the rows measured at or above the speed of light). bench/kernels.ts prints it after the other ops.
import { loadSystem } from '../src/inputs/systems.js';
import { FamilyPricer, loadFamilyCalibration, partFeatures, partSol } from '../src/perf/families.js';
import { isFamilyTable, readFamilyTable, splitAlternatives } from '../src/perf/families-reference.js';
import { errorStats } from '../src/perf/compare.js';
import { listRefTables } from '../src/perf/reference.js';
import { peaksOf } from '../src/perf/sol.js';

export interface FamilySlice {
  system: string; backend: string; version: string; part: string; group: string; rows: number;
  medianAbsPct: number; p90AbsPct: number; biasPct: number;
  /** Rows measured faster than the speed of light. */
  belowSol: number;
  metAboveSol: boolean;
  /** Scored against the target (false: a slower alternative kernel, or too few rows; reported apart). */
  targeted: boolean;
}

/** The kinds of family parts (`--op` values that select them). */
export const FAMILY_KINDS = ['gdn', 'mamba2', 'kda', 'dsa', 'dsv4_csa', 'dsv4_hca', 'minimax_msa', 'mhc', 'quantize'];

/**
 * Slices with fewer rows are listed, not scored (as the fit leaves such groups out): SGLang's compute-scale
 * tables hold a handful of rows, each the difference of two timings.
 */
const MIN_SCORED_ROWS = 8;

const meets = (s: { medianAbsPct: number; p90AbsPct: number }): boolean => s.medianAbsPct <= 10 && s.p90AbsPct <= 25;

export async function scoreFamilies(refRoot: string, onlySystem?: string, onlyPart?: string): Promise<FamilySlice[]> {
  const out: FamilySlice[] = [];
  for (const t of listRefTables(refRoot).filter(isFamilyTable)) {
    const sys = loadSystem(t.system);
    if (onlySystem && sys.name !== onlySystem) continue;
    const peaks = peaksOf(sys);
    const pricer = new FamilyPricer(peaks, t.framework, t.version, loadFamilyCalibration(sys.name));
    const slices = new Map<string, { latency: number; predicted: number; sol: number }[]>();
    // The slower of two kernels timed on the same shape is reported apart (see splitAlternatives).
    const { served, alternative } = splitAlternatives(await readFamilyTable(t));
    const apart = new Set(alternative);
    for (const r of [...served, ...alternative]) {
      if (onlyPart && !r.part.startsWith(onlyPart)) continue;
      const key = `${r.part}\t${partFeatures(r.part).group(r.row)}${apart.has(r) ? ' (slower alternative kernel)' : ''}`;
      const l = slices.get(key) ?? [];
      l.push({ latency: r.latency, predicted: pricer.part(r.part, r.row), sol: partSol(peaks, r.part, r.row) });
      slices.set(key, l);
    }
    for (const [key, ms] of [...slices].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const [part, group] = key.split('\t') as [string, string];
      const pairs = (rows: typeof ms): [number, number][] => rows.map((m) => [m.latency, m.predicted]);
      const all = errorStats(pairs(ms));
      const above = ms.filter((m) => m.latency >= m.sol);
      out.push({ system: sys.name, backend: t.framework, version: t.version, part, group, rows: all.count, medianAbsPct: all.medianAbsPct,
        p90AbsPct: all.p90AbsPct, biasPct: all.biasPct, belowSol: ms.length - above.length, metAboveSol: above.length === 0 || meets(errorStats(pairs(above))), targeted: !group.includes('(') && all.count >= MIN_SCORED_ROWS });
    }
  }
  return out;
}

export function printFamilies(slices: FamilySlice[]): void {
  const f = (x: number): string => x.toFixed(1).padStart(6);
  console.log('\nfamily ops (linear / sparse attention, hyper-connections, quantization):');
  console.log(`system     backend version      ${'part'.padEnd(30)} ${'group'.padEnd(24)}   rows   med%   p90%  bias%   <SOL  target`);
  for (const s of slices)
    console.log(`${s.system.padEnd(10)} ${s.backend.padEnd(7)} ${s.version.padEnd(12)} ${s.part.padEnd(30)} ${s.group.padEnd(24)} ${String(s.rows).padStart(6)} ${f(s.medianAbsPct)} ${f(s.p90AbsPct)} ${f(s.biasPct)} ${String(s.belowSol).padStart(6)}  ${!s.targeted ? '-' : s.metAboveSol ? 'met' : 'MISSED'}`);
  const targeted = slices.filter((s) => s.targeted);
  const met = targeted.filter((s) => s.metAboveSol).length;
  console.log(`family target (median <= 10%, p90 <= 25% on the rows at or above the roofline) met by ${met} of ${targeted.length} targeted slices (${((100 * met) / Math.max(1, targeted.length)).toFixed(1)}%); ${slices.length - targeted.length} slices reported apart (slower alternative kernels, fewer than ${MIN_SCORED_ROWS} rows)`);
  const byKind = new Map<string, { n: number; met: number }>();
  for (const s of targeted) {
    const k = s.part.split('.')[0]!;
    const e = byKind.get(k) ?? { n: 0, met: 0 };
    e.n++;
    if (s.metAboveSol) e.met++;
    byKind.set(k, e);
  }
  console.log(`by family: ${[...byKind].sort().map(([k, e]) => `${k} ${e.met}/${e.n}`).join(', ')}`);
  const missed = targeted.filter((s) => !s.metAboveSol);
  if (missed.length) console.log(`missing the target: ${missed.map((s) => `${s.system} ${s.backend} ${s.version} ${s.part} ${s.group} (${s.rows} rows, median ${s.medianAbsPct.toFixed(1)}%, p90 ${s.p90AbsPct.toFixed(1)}%)`).join('; ')}`);
}
