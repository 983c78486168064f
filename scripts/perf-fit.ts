// Fit the op-model coefficients of every system against the reference kernel tables and write
// data/calibration/<system>.json. Usage: npm run perf:fit [-- --ref DIR] [-- --system h200_sxm]
// [-- --exclusions-only]: keep the fitted surfaces, recompute only which groups the tables leave out (seconds, not
// the fit's tens of minutes; the same result as a full fit, whose exclusions are computed from the surfaces alone).
// [-- --source sglang/0.5.14] [-- --op moe]: refit that source and / or op only, keeping the rest of the system's
// file (the same result as a full fit: sources are fitted one by one; exclusions are recomputed over all of them).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { listSystems, loadSystem } from '../src/inputs/systems.js';
import { dataPath, referencePath } from '../src/util/paths.js';
import { FEATURES, GEMM_M_ALIGN, LOW_LATENCY, type ModelOp, type OpModel } from '../src/perf/model.js';
import { commGroupKey, DEFAULT_FIT, fitGroup, fitMoeRouting, hostRoutedFrom, modelAwareMoe, nongatedShapes, routesOf, siblingMoeRows, unalignedMFactor } from '../src/perf/fit.js';
import { listRefTables, MLA_DECODE_KERNEL_FILE, readRefTable, REF_FILE_OP, sourceKey, type RefTable } from '../src/perf/reference.js';
import { composeDecodeModules, COMPOSED_MLA_ENGINES } from '../src/perf/mla.js';
import { modelSolOf, OP_SPECS, type Row } from '../src/perf/tables.js';
import { dtypeBytes, peaksOf, type Peaks } from '../src/perf/sol.js';
import { findOutlierGroups, findUnservedGroups, modelLatency, parseCalibration, serializeCalibration, type SystemCalibration } from '../src/perf/calibration.js';
import { baseMoeDistributions, moeRowsFor } from '../src/perf/aic.js';
import { pointLatency } from '../src/perf/build.js';
import { isSubTileGemm } from '../src/perf/grid.js';
import { writeFamilyCalibrations } from '../src/perf/families-fit.js';

const args = process.argv.slice(2);
const argOf = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const refRoot = argOf('--ref') ?? referencePath('aic-silicon', 'kernels');
const only = argOf('--system');
const onlySource = argOf('--source');
const onlyOp = argOf('--op');

if (args.includes('--exclusions-only')) {
  for (const sys of listSystems()) {
    if (only && sys.name !== only) continue;
    const p = dataPath('calibration', `${sys.name}.json`);
    if (!existsSync(p)) continue;
    const cal = parseCalibration(readFileSync(p, 'utf8'));
    delete cal.excluded;
    const excluded = [...findOutlierGroups(cal), ...findUnservedGroups(cal)];
    if (excluded.length) cal.excluded = excluded;
    writeFileSync(p, serializeCalibration(cal));
    console.log(`${sys.name}: ${excluded.length} groups left out of the tables`);
  }
  process.exit(0);
}

function fitOp(op: ModelOp, peaks: Peaks, rows: Row[]): OpModel {
  const def = FEATURES[op];
  const spec = OP_SPECS[op];
  const byGroup = new Map<string, Row[]>();
  for (const r of rows) {
    if (!(modelSolOf(spec, peaks, r) > 0)) continue;
    // Sub-tile GEMMs (n or k below one 128-wide tile) are no serving shape, and some kernels take a slow path
    // there (vLLM 0.24.0's block-FP8 on H100: 0.17-0.20 ms at k = 32 / 64 against 0.06 ms at k = 128): fitted with
    // the rest they would pull its surfaces up across the small shapes.
    if (op === 'gemm' && isSubTileGemm(r)) continue;
    const g = def.group(r);
    if (!byGroup.has(g)) byGroup.set(g, []);
    byGroup.get(g)!.push(r);
  }
  const groups: OpModel['groups'] = {};
  for (const g of [...byGroup.keys()].sort()) {
    const gr = byGroup.get(g)!;
    if (gr.length < 8) continue;
    // A GEMM kernel that pays for unaligned m: its surfaces price aligned m, the factor the rest.
    const unaligned = op === 'gemm' ? unalignedMFactor(gr) : undefined;
    const box = spec.axisCols.flatMap((c) => gr.reduce(([lo, hi], r) => [Math.min(lo, r[c] as number), Math.max(hi, r[c] as number)], [Infinity, -Infinity]));
    const ys = gr.map((r) => {
      const y = Math.log((r.latency_ms as number) / modelSolOf(spec, peaks, r));
      return unaligned && (r.m as number) % GEMM_M_ALIGN !== 0 ? y - Math.log(unaligned) : y;
    });
    const routes = op === 'moe' && g.endsWith(`|${LOW_LATENCY}`) ? routesOf(gr) : undefined;
    const windows = [...new Set(gr.map((r) => Number(r.window ?? 0)).filter((w) => w > 0))].sort((a, b) => a - b);
    groups[g] = {
      ...fitGroup(def, gr.map((r) => def.features(r)), ys), box, ...(unaligned ? { unalignedM: unaligned } : {}), ...(routes ? { routes } : {}),
      ...(windows.length ? { windows } : {}),
    };
  }
  return { features: def.names, lo: def.lo, hi: def.hi, scale: DEFAULT_FIT.scale, groups };
}

const tables = listRefTables(refRoot);
if (tables.length === 0) {
  console.error(`no reference tables under ${refRoot}`);
  process.exit(2);
}
const systems = [...new Set(tables.map((t) => t.system))].sort();
mkdirSync(dataPath('calibration'), { recursive: true });
for (const refSystem of systems) {
  const sys = loadSystem(refSystem);
  if (only && sys.name !== only) continue;
  const peaks = peaksOf(sys);
  const cal: SystemCalibration = { system: sys.name, generator: 'npm run perf:fit', sources: {} };
  const mine = tables.filter((t) => t.system === refSystem);
  // Refitting part of a system: the rest comes from its current file.
  const calPath = dataPath('calibration', `${sys.name}.json`);
  const kept = (onlySource || onlyOp) && existsSync(calPath) ? parseCalibration(readFileSync(calPath, 'utf8')) : undefined;
  const refitting = (source: string, op: string): boolean => (!onlySource || source === onlySource) && (!onlyOp || op === onlyOp);
  if (kept) {
    cal.sources = kept.sources;
    if (kept.nccl) cal.nccl = kept.nccl;
    if (kept.hostRouted) cal.hostRouted = kept.hostRouted.filter((h) => !refitting(h.source, h.op));
  }
  // Expert layers the system's tables timed as non-gated FFNs, whichever engine's table names them so.
  const moeTables = await Promise.all(mine.filter((t) => REF_FILE_OP[t.file] === 'moe').map(async (t) => ({ ...t, rows: (await readRefTable(t))?.rows ?? [] })));
  const nongated = nongatedShapes(moeTables.flatMap((t) => t.rows));
  // Gather rows per (source, op); a source may hold several files for one op (MLA context + generation).
  const bySource = new Map<string, Map<ModelOp, RefTable[]>>();
  for (const t of mine) {
    const src = sourceKey(t);
    let m = bySource.get(src);
    if (!m) bySource.set(src, (m = new Map()));
    const op = REF_FILE_OP[t.file];
    if (!op || op === 'elementwise') continue;
    const l = m.get(op) ?? [];
    l.push(t);
    m.set(op, l);
  }
  for (const src of [...bySource.keys()].sort()) {
    if (kept && onlySource && src !== onlySource) continue;
    const ops = bySource.get(src)!;
    for (const op of [...ops.keys()].sort()) {
      if (kept && onlyOp && op !== onlyOp) continue;
      const rows: Row[] = [];
      for (const t of ops.get(op)!) {
        // MoE tables were read above (non-gated layers, lending); the rest are read here.
        const got = moeTables.find((m) => m.path === t.path)?.rows ?? (await readRefTable(t))?.rows ?? [];
        for (const r of got) rows.push(r);
      }
      const t0 = Date.now();
      const [framework, version] = src.split('/') as [string, string];
      // MoE: the expert layers later versions of the engine measured with an unchanged kernel join the fit.
      if (op === 'moe') {
        const lent = siblingMoeRows(version, rows, moeTables.filter((t) => t.framework === framework && t.version !== version));
        if (lent.length) console.error(`${sys.name} ${src} moe: ${lent.length} rows of expert layers it never measured, from later ${framework} versions that time the layers both measured alike`);
        rows.push(...lent);
      }
      // MoE: balanced routing and the kernels engines serve with. Non-gated expert FFNs are another op; each
      // kernel keeps all its rows (its own group, see FEATURES.moe).
      const ownNongated = modelAwareMoe(framework, version) ? nongated : undefined;
      const moeRows = (): Row[] => moeRowsFor(rows, (role) => role !== 'nongated', false, ownNongated);
      // Collectives of a host that routed GPU traffic through system memory: keep the groups it measured right.
      const commRows = (): Row[] => {
        const out: Row[] = [];
        const groups = new Map<string, Row[]>();
        for (const r of rows) {
          const k = commGroupKey(r);
          if (!groups.has(k)) groups.set(k, []);
          groups.get(k)!.push(r);
        }
        for (const [k, g] of [...groups].sort(([a], [b]) => (a < b ? -1 : 1))) {
          const from = hostRoutedFrom(g, k.split('|')[0]!, dtypeBytes(String(g[0]!.dtype)));
          if (from !== undefined) {
            console.error(`${sys.name} ${src} ${op} ${k}: bus bandwidth collapses from ${from} GPUs (traffic through host memory), those rows left out`);
            (cal.hostRouted ??= []).push({ source: src, op, group: k, fromGpus: from });
          }
          out.push(...(from === undefined ? g : g.filter((r) => (r.gpus as number) < from)));
        }
        return out;
      };
      const fitted = op === 'moe' ? moeRows() : op === 'allreduce' || op === 'nccl' ? commRows() : rows;
      const model = fitOp(op, peaks, fitted);
      // MoE: how the other routings the reference measured change each group's latency.
      if (op === 'moe') {
        const served = moeRowsFor(rows, (role) => role === 'served', true, ownNongated);
        const base = baseMoeDistributions(rows);
        const dtypeOf = new Map(fitted.map((r) => [FEATURES.moe.group(r), String(r.dtype)]));
        for (const [g, gm] of Object.entries(model.groups)) {
          const own = base.get(dtypeOf.get(g)!);
          if (own && own !== 'balanced') gm.distribution = own;
        }
        const predict = (r: Row): number | undefined => {
          const { distribution: _routing, ...balanced } = r;
          return modelLatency('moe', model, balanced, modelSolOf(OP_SPECS.moe, peaks, r));
        };
        for (const [g, routing] of fitMoeRouting(served, base, predict)) if (model.groups[g]) model.groups[g]!.routing = routing;
      }
      console.error(`${sys.name} ${src} ${op}: ${rows.length} rows, ${Object.keys(model.groups).length} groups, ${Date.now() - t0} ms`);
      if (src.startsWith('nccl/')) cal.nccl = { version: src.slice(5), model };
      else (cal.sources[src] ??= {})[op] = model;
    }
    // An engine that measured its decode MLA kernel: decode modules from that kernel and its GEMMs, for the groups
    // its measured module lacks (all of them where it measured none; GB200 TRT-LLM's module has a bf16 KV cache only).
    const kernel = mine.find((t) => sourceKey(t) === src && t.file === MLA_DECODE_KERNEL_FILE);
    const gemm = cal.sources[src]?.gemm;
    if (kernel && gemm && COMPOSED_MLA_ENGINES.includes(kernel.framework)) {
      // As the GEMM tables price them, for the formats the engine measured.
      const gemmMs = (dtype: string, m: number, n: number, k: number): number | undefined =>
        gemm.groups[dtype] ? pointLatency('gemm', gemm, peaks, { dtype, m, n, k }) : undefined;
      const measured = cal.sources[src]?.mla;
      const rows = composeDecodeModules((await readRefTable(kernel))?.rows ?? [], gemmMs).filter((r) => !measured?.groups[FEATURES.mla.group(r)]);
      if (rows.length) {
        // Groups are fitted one by one, so the composed ones join the measured ones (in key order, as fitOp writes).
        const composed = fitOp('mla', peaks, rows);
        const model = measured ? { ...measured, groups: Object.fromEntries(Object.entries({ ...measured.groups, ...composed.groups }).sort(([a], [b]) => (a < b ? -1 : 1))) } : composed;
        console.error(`${sys.name} ${src} mla: ${rows.length} decode modules composed from its decode kernel and GEMMs, ${Object.keys(model.groups).length} groups`);
        (cal.sources[src] ??= {}).mla = model;
      }
    }
  }
  const excluded = [...findOutlierGroups(cal), ...findUnservedGroups(cal)];
  if (excluded.length) cal.excluded = excluded;
  for (const e of excluded) {
    console.error(`${sys.name} ${e.source} ${e.op} ${e.group}: ${e.reason ? `${e.reason} (${e.ratio})` : `${e.ratio}x the system median`}, left out of ${e.backends ? `${e.backends.join(' and ')}'s` : 'the'} tables`);
  }
  const text = serializeCalibration(cal);
  writeFileSync(dataPath('calibration', `${sys.name}.json`), text);
  console.log(`wrote data/calibration/${sys.name}.json (${(text.length / 1024).toFixed(0)} KB)`);
}
// The hybrid and sparse-attention family ops have calibration files of their own (data/calibration/families/),
// refitted unless one of the ops above was asked for.
if (!(onlyOp && onlyOp in FEATURES)) {
  for (const p of await writeFamilyCalibrations(refRoot, only, (line) => console.error(line))) console.log(`wrote ${p}`);
}
