// Entry point of the perf stage: pick and load the source that answers op latencies.
//   default      data/perf/<system>/<backend>/<version>/ (synthesized from calibrated coefficients)
//   --perf-data  a directory in our format (meta.yaml + CSVs, possibly only some ops) or an aiconfigurator
//                kernel-data directory (<system>/<family>/<framework>/<version>/*.parquet)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Backend, SystemSpec } from '../inputs/types.js';
import { InferplanError, InputError, UnsupportedError } from '../util/errors.js';
import { quote } from '../util/text.js';
import { dataPath } from '../util/paths.js';
import { parseYamlText } from '../util/yaml.js';
import { OpTable } from './grid.js';
import { RooflinePerfSource } from './roofline.js';
import { acrossNodes, peaksOf, type Peaks } from './sol.js';
import { TablePerfSource, type ModelProvider } from './source.js';
import { loadCalibration, measuredWindow, modelLatency, resolvedModel, type SystemCalibration } from './calibration.js';
import { planFor, type SynthesisPlan } from './build.js';
import type { ModelOp, OpModel } from './model.js';
import { FamilyPricer, loadFamilyCalibration } from './families.js';
import { modelSolOf, OP_NAMES, OP_SPECS, PACKED_FILE, parseCsv, readPacked, type OpName, type PackedTables, type Row } from './tables.js';
import type { PerfSource, PerfSourceInfo } from './types.js';

export type { PerfSource, PerfSourceInfo } from './types.js';

export interface LoadPerfOptions {
  system: SystemSpec;
  backend: Backend;
  version: string;
  /** A directory in our table format or an aiconfigurator kernel-data directory. */
  perfData?: string;
}

/** meta.yaml of a table directory. */
export interface TableMeta {
  system: string;
  backend: string;
  version: string;
  kind: 'synthesized' | 'measured';
  calibrated_on?: string;
  borrowed?: boolean;
  /** A borrowed version stores no copy: its tables are those of this sibling version directory. */
  tables_from?: string;
  generator?: string;
  /** GEMM dtypes whose kernel pays for m off GEMM_M_ALIGN, with the factor (the tables price aligned m). */
  gemm_unaligned_m?: Record<string, number>;
  [extra: string]: unknown;
}

export interface TableDirInfo {
  system: string;
  backend: string;
  version: string;
  dir: string;
  meta: TableMeta;
}

const cache = new Map<string, Promise<PerfSource>>();

export function loadPerfSource(opts: LoadPerfOptions): Promise<PerfSource> {
  const key = `${opts.system.name}|${opts.system.kernelsLike ?? ''}|${opts.backend}|${opts.version}|${opts.perfData ? resolve(opts.perfData) : ''}`;
  let hit = cache.get(key);
  if (!hit) {
    hit = load(opts);
    cache.set(key, hit);
    hit.catch(() => cache.delete(key));
  }
  return hit;
}

async function load(opts: LoadPerfOptions): Promise<PerfSource> {
  const { system, backend, version } = opts;
  const roofline = new RooflinePerfSource(system, { system: system.name, backend, version, kind: 'synthesized', calibratedOn: 'roofline (uncalibrated)' });
  const ownDir = tableDir(system.name, backend, version);
  const synthesized = (): PerfSource => {
    if (!ownDir) {
      const have = listPerfTables().filter((t) => t.system === system.name && t.backend === backend).map((t) => t.version);
      throw new UnsupportedError(
        `no performance tables for ${system.name} ${backend} ${version}; available: ${have.length ? have.join(', ') : 'none for this backend'}`,
        { system: system.name, backend, version, available: have },
      );
    }
    return openOurDir(ownDir, system, roofline);
  };
  if (!opts.perfData) return synthesized();
  const dir = resolve(opts.perfData);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new InputError(`--perf-data ${opts.perfData}: not a directory`);
  const fallback = ownDir ? openOurDir(ownDir, system, roofline) : roofline;
  if (isOurDir(dir)) return openOurDir(dir, system, fallback, true);
  const aicRoot = findAicSystemDir(dir, system);
  if (aicRoot) return await openAicDir(aicRoot, system, backend, version, fallback);
  throw new InputError(
    `--perf-data ${opts.perfData}: neither a table directory (meta.yaml and ${OP_NAMES.map((o) => OP_SPECS[o].file).join(', ')}) nor an aiconfigurator data directory (<system>/<op>/<backend>/<version>/*.parquet) for ${system.name}`,
  );
}

/** The directory holding the tables of (system, backend, version), following `tables_from`; undefined if absent. */
export function tableDir(system: string, backend: string, version: string): string | undefined {
  const dir = dataPath('perf', system, backend, version);
  if (!existsSync(join(dir, 'meta.yaml'))) return undefined;
  return dir;
}

function readMeta(dir: string): TableMeta | undefined {
  const p = join(dir, 'meta.yaml');
  if (!existsSync(p)) return undefined;
  const meta = parseYamlText(readFileSync(p, 'utf8'), p);
  // An empty file is no meta; anything else must be a mapping with string fields where the tables use them.
  if (meta === null || meta === undefined) return undefined;
  if (typeof meta !== 'object' || Array.isArray(meta)) throw new InputError(`${p}: expected a mapping (system, backend, version, kind, ...), got ${Array.isArray(meta) ? 'a list' : `a ${typeof meta}`}`);
  const m = meta as Record<string, unknown>;
  for (const k of ['system', 'backend', 'version', 'kind', 'calibrated_on', 'tables_from', 'generator'])
    if (m[k] !== undefined && m[k] !== null && typeof m[k] !== 'string' && typeof m[k] !== 'number')
      throw new InputError(`${p}: ${k} must be a string, got ${quote(m[k])}`);
  if (m.gemm_unaligned_m !== undefined && m.gemm_unaligned_m !== null) {
    const g = m.gemm_unaligned_m;
    if (typeof g !== 'object' || Array.isArray(g)) throw new InputError(`${p}: gemm_unaligned_m must be a mapping of dtype to factor`);
    for (const [d, f] of Object.entries(g as Record<string, unknown>))
      if (typeof f !== 'number' || !Number.isFinite(f) || f <= 0) throw new InputError(`${p}: gemm_unaligned_m.${d} must be a positive number, got ${quote(f)}`);
  }
  return m as TableMeta;
}

function isOurDir(dir: string): boolean {
  return existsSync(join(dir, 'meta.yaml')) || existsSync(join(dir, PACKED_FILE)) || OP_NAMES.some((op) => existsSync(join(dir, OP_SPECS[op].file)));
}

/**
 * The tables of a directory, op by op: the packed file (tables.bin, what perf:build writes) when there is one,
 * else one CSV per op (measured tables, and directories written before the packed format). Nothing is parsed
 * until an op is asked for; a packed op decodes only the keys its lookups reach.
 */
export function tableFiles(filesDir: string, peaks: Peaks): { has(op: OpName): boolean; table(op: OpName): OpTable | undefined } {
  const packedPath = join(filesDir, PACKED_FILE);
  if (existsSync(packedPath)) {
    let packed: PackedTables | undefined;
    const ops = (): PackedTables => (packed ??= asInputError(packedPath, () => readPacked(readFileSync(packedPath), packedPath)));
    return {
      has: (op) => ops().has(op),
      table: (op) =>
        asInputError(`${packedPath} (${op})`, () => {
          const p = ops().get(op);
          return p && p.keys.length ? OpTable.lazy(p.spec, peaks, p) : undefined;
        }),
    };
  }
  return {
    has: (op) => existsSync(join(filesDir, OP_SPECS[op].file)),
    table: (op) => {
      const p = join(filesDir, OP_SPECS[op].file);
      if (!existsSync(p)) return undefined;
      const rows = parseCsv(OP_SPECS[op], readFileSync(p, 'utf8'), p);
      if (rows.length === 0) return undefined;
      return asInputError(p, () => OpTable.fromRows(OP_SPECS[op], peaks, rows));
    },
  };
}

/** Run `f`; a failure that is not already an input error becomes one naming `where` (a corrupt file). */
function asInputError<T>(where: string, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof InferplanError) throw err;
    throw new InputError(`${where}: unreadable table (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
  }
}

/**
 * Open a directory in our format; ops without a file are answered by `fallback`. A user's directory (`eager`) is
 * read whole at once, so a bad file is reported before any planning starts, whichever ops a run would ask for.
 */
function openOurDir(dir: string, system: SystemSpec, fallback: PerfSource, eager = false): PerfSource {
  const meta = readMeta(dir);
  const filesDir = meta?.tables_from ? resolve(dir, '..', meta.tables_from) : dir;
  const peaks = peaksOf(system);
  const files = tableFiles(filesDir, peaks);
  const tables = new Map<OpName, OpTable | undefined>();
  if (eager) for (const op of OP_NAMES) if (files.has(op)) tables.set(op, files.table(op));
  const missing = OP_NAMES.filter((op) => !files.has(op));
  const kind = meta?.kind === 'measured' ? 'measured' : meta ? 'synthesized' : 'measured';
  let calibratedOn = kind === 'measured' ? `measured${meta?.gpu ? ` on ${String(meta.gpu)}` : ''} (${dir})` : `calibrated on ${meta?.calibrated_on ?? 'unknown'}`;
  if (missing.length && fallback.info) calibratedOn += `; ${missing.join(', ')} from ${fallback.info.calibratedOn}`;
  const info: PerfSourceInfo = {
    system: system.name,
    backend: (meta?.backend as Backend | undefined) ?? fallback.info.backend,
    version: meta?.version ?? fallback.info.version,
    kind,
    calibratedOn,
    dir,
    ...(missing.length ? { fallbackOps: missing } : {}),
  };
  const provide = (op: OpName): OpTable | undefined => (tables.has(op) ? tables.get(op) : files.table(op));
  const model = kind === 'synthesized' && meta ? modelProvider(system, meta.backend as Backend, meta.version) : undefined;
  // Facts of the tables themselves live in the meta.yaml beside them.
  const tablesMeta = meta?.tables_from ? readMeta(filesDir) : meta;
  const families = kind === 'synthesized' && meta
    ? new FamilyPricer(peaks, String(meta.backend), String(meta.version), () => loadFamilyCalibration(system.name))
    : undefined;
  return new TablePerfSource(system, info, provide, fallback, model, tablesMeta?.gemm_unaligned_m, families);
}

/** The calibrated op model a synthesized directory was built from, for keys its tables do not list. */
function modelProvider(system: SystemSpec, backend: Backend, version: string): ModelProvider {
  // The coefficients are read on the first key the tables do not list (many runs never ask for one); without a
  // calibration file every answer is undefined, as if there were no model.
  let loaded: { cal: SystemCalibration; plan: SynthesisPlan; kin?: SystemCalibration } | null | undefined;
  const peaks = peaksOf(system);
  return (op, r) => {
    if (loaded === undefined) {
      const c = loadCalibration(system.name);
      const kin = system.kernelsLike ? loadCalibration(system.kernelsLike) : undefined;
      loaded = c ? { cal: c, plan: planFor(c, backend, version), ...(kin ? { kin } : {}) } : null;
    }
    if (!loaded) return undefined;
    const { cal, plan, kin } = loaded;
    let m: OpModel | undefined;
    let row = r;
    let modelOp: ModelOp;
    if (op === 'nccl' || (op === 'allreduce' && r.kind === 'nccl')) {
      m = cal.nccl?.model;
      modelOp = 'nccl';
      if (op === 'allreduce') row = { collective: 'all_reduce', dtype: r.dtype!, gpus: r.gpus!, elements: r.elements! };
      if (row.dtype === 'fp8') row = { ...row, dtype: 'int8' };
    } else if (op === 'elementwise') {
      return undefined;
    } else {
      modelOp = op;
      m = resolvedModel(cal, backend, version, op, plan.sourceByOp[op], kin);
    }
    if (!m) return undefined;
    const model = m;
    // A sliding window the group never measured: its surfaces would extrapolate (the caller scales full attention).
    const windowed = (op === 'context_attention' || op === 'generation_attention') && (r.window as number) > 0;
    if (windowed && !measuredWindow(modelOp, model, r)) return undefined;
    const f = (x: Row, sx: number): number => modelLatency(modelOp, model, x, sx) ?? NaN;
    const s = modelSolOf(OP_SPECS[op], peaks, r);
    // Collectives beyond one NVLink domain follow the tables' alpha-beta rule (acrossNodes).
    const v = modelOp === 'nccl' ? acrossNodes(peaks, (x) => x.collective as string, f)(row, s) : f(row, s);
    return Number.isNaN(v) ? undefined : Math.max(v, OP_SPECS[op].sol(peaks, r));
  };
}

/** Find the folder of `system` inside an aiconfigurator kernel-data directory (the root or the system folder itself). */
function findAicSystemDir(dir: string, system: SystemSpec): string | undefined {
  const families = ['gemm', 'attention', 'comm', 'moe', 'mla'];
  const looksLikeSystem = (d: string): boolean => families.some((f) => existsSync(join(d, f)) && statSync(join(d, f)).isDirectory());
  for (const name of [system.name, ...system.aliases]) if (looksLikeSystem(join(dir, name))) return join(dir, name);
  if (looksLikeSystem(dir)) return dir;
  return undefined;
}

async function openAicDir(sysDir: string, system: SystemSpec, backend: Backend, version: string, fallback: PerfSource): Promise<PerfSource> {
  // The parquet readers load only for aiconfigurator data, not on every run.
  const { loadAicTables } = await import('./aic.js');
  const aic = await loadAicTables(sysDir, system, backend, version);
  const missing = OP_NAMES.filter((op) => !aic.tables.has(op));
  const info: PerfSourceInfo = {
    system: system.name, backend, version: aic.version, kind: 'aiconfigurator',
    calibratedOn: `aiconfigurator data ${backend} ${aic.version}${missing.length ? `; ${missing.join(', ')} from ${fallback.info.calibratedOn}` : ''}`,
    dir: sysDir,
    ...(missing.length ? { fallbackOps: missing } : {}),
  };
  return new TablePerfSource(system, info, (op) => aic.tables.get(op), fallback);
}

function subdirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((d) => statSync(join(dir, d)).isDirectory()).sort();
}

/** Every table directory under data/perf, sorted, with its meta. */
export function listPerfTables(): TableDirInfo[] {
  const root = dataPath('perf');
  const out: TableDirInfo[] = [];
  if (!existsSync(root)) return out;
  for (const system of subdirs(root))
    for (const backend of subdirs(join(root, system)))
      for (const version of subdirs(join(root, system, backend))) {
        const dir = join(root, system, backend, version);
        const meta = readMeta(dir);
        if (meta) out.push({ system, backend, version, dir, meta });
      }
  return out;
}
