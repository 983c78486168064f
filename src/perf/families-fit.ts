// Fitting the family-op models (families.ts) on the reference tables: per system, per measured source
// ("<backend>/<version>"), per part, per group, the same smoothed least-squares surfaces as the other ops
// (fit.ts fitGroup), on ln(latency / speed of light). Writes data/calibration/families/<system>.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadSystem } from '../inputs/systems.js';
import { DEFAULT_FIT, fitGroup } from './fit.js';
import { familyCalibrationPath, partFeatures, partSol, serializeFamilyCalibration, type FamilyCalibration, type FamilyPart } from './families.js';
import { isFamilyTable, readFamilyTable, splitAlternatives, type FamilyRow } from './families-reference.js';
import type { OpModel } from './model.js';
import { listRefTables, sourceKey, type RefTable } from './reference.js';
import { peaksOf, type Peaks } from './sol.js';

/** Groups with fewer rows than this are not fitted (their part answers from a sibling group). */
const MIN_GROUP_ROWS = 8;

/** Fit one part's rows (one source): a model with one fitted group per group key. */
export function fitPart(part: FamilyPart, peaks: Peaks, rows: FamilyRow[]): OpModel | undefined {
  const def = partFeatures(part);
  const byGroup = new Map<string, FamilyRow[]>();
  for (const r of rows) {
    if (!(partSol(peaks, part, r.row) > 0)) continue;
    const g = def.group(r.row);
    if (!byGroup.has(g)) byGroup.set(g, []);
    byGroup.get(g)!.push(r);
  }
  const groups: OpModel['groups'] = {};
  for (const g of [...byGroup.keys()].sort()) {
    const gr = byGroup.get(g)!;
    if (gr.length < MIN_GROUP_ROWS) continue;
    const ys = gr.map((r) => Math.log(r.latency / partSol(peaks, part, r.row)));
    groups[g] = { ...fitGroup(def, gr.map((r) => def.features(r.row)), ys), floor: Math.min(...gr.map((r) => r.latency)) };
  }
  if (!Object.keys(groups).length) return undefined;
  return { features: def.names, lo: def.lo, hi: def.hi, scale: DEFAULT_FIT.scale, groups };
}

/** Every part's rows of one source, in a fixed order. */
export async function rowsBySourcePart(tables: RefTable[]): Promise<Map<string, Map<FamilyPart, FamilyRow[]>>> {
  const out = new Map<string, Map<FamilyPart, FamilyRow[]>>();
  for (const t of tables) {
    const src = sourceKey(t);
    let m = out.get(src);
    if (!m) out.set(src, (m = new Map()));
    for (const r of await readFamilyTable(t)) {
      const l = m.get(r.part) ?? [];
      l.push(r);
      m.set(r.part, l);
    }
  }
  return out;
}

/** Fit every family table of one reference system folder. */
export async function fitSystemFamilies(refRoot: string, refSystem: string, log: (line: string) => void = () => {}): Promise<FamilyCalibration> {
  const sys = loadSystem(refSystem);
  const peaks = peaksOf(sys);
  const tables = listRefTables(refRoot).filter((t) => t.system === refSystem && isFamilyTable(t));
  const cal: FamilyCalibration = { system: sys.name, generator: 'npm run perf:fit', sources: {} };
  const bySource = await rowsBySourcePart(tables);
  for (const src of [...bySource.keys()].sort()) {
    const parts = bySource.get(src)!;
    for (const part of [...parts.keys()].sort()) {
      const t0 = Date.now();
      const m = fitPart(part, peaks, splitAlternatives(parts.get(part)!).served);
      if (!m) continue;
      (cal.sources[src] ??= {})[part] = m;
      log(`${sys.name} ${src} ${part}: ${parts.get(part)!.length} rows, ${Object.keys(m.groups).length} groups (${Date.now() - t0} ms)`);
    }
  }
  return cal;
}

/** Fit and write the family calibration of every reference system (or only `only`, by our system name). */
export async function writeFamilyCalibrations(refRoot: string, only?: string, log: (line: string) => void = () => {}): Promise<string[]> {
  const systems = [...new Set(listRefTables(refRoot).filter(isFamilyTable).map((t) => t.system))].sort();
  const written: string[] = [];
  for (const refSystem of systems) {
    const name = loadSystem(refSystem).name;
    if (only && name !== only) continue;
    const cal = await fitSystemFamilies(refRoot, refSystem, log);
    const p = familyCalibrationPath(name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, serializeFamilyCalibration(cal));
    written.push(p);
  }
  return written;
}
