// An aiconfigurator kernel-data directory (one system: <family>/<framework>/<version>/*.parquet) turned into
// our grids. Rows keep their measured latency; the MoE distribution used is balanced when present (see pickMoeDistribution).
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Backend, SystemSpec } from '../inputs/types.js';
import { InferplanError, InputError } from '../util/errors.js';
import { versionDistance } from '../util/versions.js';
import { moeKernelRoles, tagMoeKernels, type MoeKernelRole } from './fit.js';
import { OpTable } from './grid.js';
import { readRefTable, subdirs, type RefTable } from './reference.js';
import { peaksOf } from './sol.js';
import { OP_SPECS, type OpName, type Row } from './tables.js';

/** The version folder to use for a backend: the asked one, else the nearest by version number. */
function pickVersion(versions: string[], want: string): string | undefined {
  if (versions.includes(want)) return want;
  let best: string | undefined;
  let bestD = Infinity;
  for (const v of versions) {
    const d = versionDistance(v, want);
    if (d < bestD) { bestD = d; best = v; }
  }
  return best;
}

/**
 * MoE rows as engines serve them. MXFP4 checkpoints: where the mxfp8-activation kernel was measured (TRT-LLM on
 * Blackwell runs gpt-oss experts as W4A8 MXFP4 x MXFP8 by default), it is what `mxfp4` means; the bf16-activation
 * rows of that source are dropped.
 */
export function servingMoeRows(rows: Row[]): Row[] {
  const w4a8 = 'w4a8_mxfp4_mxfp8';
  if (!rows.some((r) => r.dtype === w4a8)) return rows;
  return rows.filter((r) => r.dtype !== 'mxfp4').map((r) => (r.dtype === w4a8 ? { ...r, dtype: 'mxfp4' } : r));
}

/**
 * MoE rows as serving runs them: one routing distribution (pickMoeDistribution; every routing with
 * `everyRouting`), the MXFP4 kernel engines run (servingMoeRows), and of the rest the kernel roles `keep` accepts
 * (see moeKernelRoles; `nongated`: the system's non-gated expert layers, nongatedShapes), tagged by kernel where
 * one format was timed with two (tagMoeKernels).
 */
export function moeRowsFor(rows: Row[], keep: (role: MoeKernelRole) => boolean, everyRouting = false, nongated?: ReadonlySet<string>): Row[] {
  const r = tagMoeKernels(servingMoeRows(everyRouting ? rows : pickMoeDistribution(rows)));
  const roles = moeKernelRoles(r, nongated);
  return r.filter((_, i) => keep(roles[i]!));
}

/**
 * MoE rows: one routing distribution per dtype, balanced if measured (benchmarks with synthetic random prompts
 * route tokens close to uniformly), else power_law_1.01, else whatever exists.
 */
export function pickMoeDistribution(rows: Row[]): Row[] {
  const base = baseMoeDistributions(rows);
  return rows.filter((r) => r.distribution === base.get(String(r.dtype)));
}

/**
 * The routing each dtype's MoE rows are fitted on (see pickMoeDistribution): per dtype, since a table may
 * measure one format under skewed routings only (L40S TRT-LLM 1.0.0: w4afp8 beside balanced bf16).
 */
export function baseMoeDistributions(rows: Row[]): Map<string, string> {
  const have = new Map<string, Set<string>>();
  for (const r of rows) {
    const d = String(r.dtype);
    if (!have.has(d)) have.set(d, new Set());
    have.get(d)!.add(String(r.distribution));
  }
  const out = new Map<string, string>();
  for (const [d, h] of have) out.set(d, h.has('balanced') ? 'balanced' : h.has('power_law_1.01') ? 'power_law_1.01' : [...h].sort()[0]!);
  return out;
}

export async function loadAicTables(sysDir: string, system: SystemSpec, backend: Backend, version: string): Promise<{ version: string; tables: Map<OpName, OpTable> }> {
  const peaks = peaksOf(system);
  const tables = new Map<OpName, OpTable>();
  const gemmVersions = subdirs(join(sysDir, 'gemm', backend));
  const chosen = pickVersion(gemmVersions.length ? gemmVersions : subdirs(join(sysDir, 'attention', backend)), version) ?? version;
  const rowsByOp = new Map<OpName, Row[]>();
  for (const family of subdirs(sysDir)) {
    const fwDir = family === 'comm' ? null : join(sysDir, family, backend);
    const dirs: { framework: string; version: string; dir: string }[] = [];
    if (fwDir) {
      const v = pickVersion(subdirs(fwDir), chosen);
      if (v) dirs.push({ framework: backend, version: v, dir: join(fwDir, v) });
    } else {
      const c = join(sysDir, 'comm');
      const bv = pickVersion(subdirs(join(c, backend)), chosen);
      if (bv) dirs.push({ framework: backend, version: bv, dir: join(c, backend, bv) });
      const nv = subdirs(join(c, 'nccl')).pop();
      if (nv) dirs.push({ framework: 'nccl', version: nv, dir: join(c, 'nccl', nv) });
    }
    for (const d of dirs)
      for (const file of readdirSync(d.dir).filter((f) => f.endsWith('.parquet')).sort()) {
        const t: RefTable = { system: basename(sysDir), family, framework: d.framework, version: d.version, file, path: join(d.dir, file) };
        let got: Awaited<ReturnType<typeof readRefTable>>;
        try {
          got = await readRefTable(t);
        } catch (err) {
          // A file that is not parquet, is truncated, or lacks the columns its name promises.
          if (err instanceof InferplanError) throw err;
          throw new InputError(`${t.path}: unreadable parquet table (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
        }
        if (!got) continue;
        for (const [i, row] of got.rows.entries())
          for (const [col, v] of Object.entries(row))
            if (typeof v === 'number' && !Number.isFinite(v)) throw new InputError(`${t.path}: row ${i + 1}: ${col} is not a number`);
        const l = rowsByOp.get(got.op) ?? [];
        for (const row of got.rows) l.push(row); // spreading a large file's rows overflows the call stack
        rowsByOp.set(got.op, l);
      }
  }
  for (const [op, rows0] of rowsByOp) {
    const rows = op === 'moe' ? moeRowsFor(rows0, (role) => role === 'served', true) : rows0;
    if (!rows.length) continue;
    try {
      tables.set(op, OpTable.fromRows(OP_SPECS[op], peaks, rows));
    } catch (err) {
      if (err instanceof InferplanError) throw err;
      throw new InputError(`${sysDir}: ${op} tables unreadable (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`);
    }
  }
  return { version: chosen, tables };
}
