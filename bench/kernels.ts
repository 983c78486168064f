// Kernel accuracy: our tables (through the same lookup the engine uses) against every row of the reference
// kernel tables. Prints, per system, backend, version, op and dtype: rows, median and p90 absolute % error,
// and bias (median signed % error; + means we predict slower), rows measured below the speed of light, and the
// lowest p90 any table that respects the roofline could reach on a slice whose p90 is above 25% (floor%).
// The target (median <= 10%, p90 <= 25% per slice) is scored on each slice's rows measured at or above the speed of
// light; rows measured below it are counted and reported, and kernels serving does not run are listed apart.
// Usage: npm run bench:kernels [-- --system h200_sxm] [-- --op gemm | families | gdn] [-- --ref DIR] [-- --json]
import { existsSync } from 'node:fs';
import { loadSystem } from '../src/inputs/systems.js';
import type { Backend, Dtype } from '../src/inputs/types.js';
import { referencePath } from '../src/util/paths.js';
import { loadPerfSource, tableDir } from '../src/perf/index.js';
import { listRefTables, readRefTable, REF_FILE_OP, sourceKey } from '../src/perf/reference.js';
import { loadCalibration } from '../src/perf/calibration.js';
import { FEATURES, type ModelOp } from '../src/perf/model.js';
import { errorStats, p90Floor, quantile, type MeasuredShape } from '../src/perf/compare.js';
import { DEEPSEEK_MLA, OP_SPECS } from '../src/perf/tables.js';
import { peaksOf } from '../src/perf/sol.js';
import type { PerfSource, Collective } from '../src/perf/types.js';
import type { Row } from '../src/perf/tables.js';
import { commGroupKey, modelAwareMoe, moeKernelRoles, nongatedShapes, tagMoeKernels } from '../src/perf/fit.js';
import { FLASHINFER_TRTLLM } from '../src/perf/model.js';
import { isSubTileGemm } from '../src/perf/grid.js';
import { FAMILY_KINDS, printFamilies, scoreFamilies } from './kernels-families.js';

const args = process.argv.slice(2);
const argOf = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const refRoot = argOf('--ref') ?? referencePath('aic-silicon', 'kernels');
const onlySystem = argOf('--system');
const onlyOp = argOf('--op');
const json = args.includes('--json');
if (!existsSync(refRoot)) {
  console.error(`reference kernel tables not found at ${refRoot}; nothing to compare`);
  process.exit(0);
}

function predict(src: PerfSource, op: string, r: Row): number {
  const n = (c: string): number => r[c] as number;
  const s = (c: string): string => r[c] as string;
  switch (op) {
    case 'gemm': return src.gemm({ dtype: s('dtype') as Dtype, m: n('m'), n: n('n'), k: n('k') });
    case 'context_attention':
      return src.contextAttention({ batch: n('batch'), seq: n('seq'), prefix: 0, heads: n('heads'), kvHeads: n('kv_heads'), headDim: n('head_dim'), dtype: s('dtype') as Dtype, kvDtype: s('kv_dtype') as Dtype, window: n('window') });
    case 'generation_attention':
      return src.generationAttention({ batch: n('batch'), kvLen: n('kv_len'), heads: n('heads'), kvHeads: n('kv_heads'), headDim: n('head_dim'), kvDtype: s('kv_dtype') as Dtype, window: n('window') });
    case 'allreduce': return src.allReduce({ dtype: 'bfloat16', gpus: n('gpus'), elements: n('elements') });
    case 'nccl': return src.nccl(s('collective') as Collective, { dtype: (s('dtype') === 'int8' ? 'fp8' : 'bfloat16') as Dtype, gpus: n('gpus'), elements: n('elements') });
    // The mxfp8-activation MXFP4 kernel is what our `mxfp4` tables represent where it was measured.
    // Rows of SGLang's TRT-LLM-gen runner beside its Triton kernel are priced as workers it serves (tagMoeKernels).
    case 'moe': return src.moe({ dtype: (s('dtype') === 'w4a8_mxfp4_mxfp8' ? 'mxfp4' : s('dtype')) as Dtype, tokens: n('tokens'), hidden: n('hidden'), inter: n('inter'), topk: n('topk'), experts: n('experts'), moeTp: n('moe_tp'), moeEp: n('moe_ep'), distribution: s('distribution'), flashinferTrtllm: r.kernel === FLASHINFER_TRTLLM });
    case 'mla':
      return src.mla({ phase: s('phase') as 'context' | 'generation', batch: n('batch'), seq: n('seq'), heads: n('heads'), kvLoraRank: DEEPSEEK_MLA.kv_lora_rank,
        qkRopeHeadDim: DEEPSEEK_MLA.qk_rope_head_dim, qkNopeHeadDim: DEEPSEEK_MLA.qk_nope_head_dim, vHeadDim: DEEPSEEK_MLA.v_head_dim, qLoraRank: DEEPSEEK_MLA.q_lora_rank,
        hidden: DEEPSEEK_MLA.hidden, dtype: s('dtype') as Dtype, kvDtype: s('kv_dtype') as Dtype });
    default: return NaN;
  }
}

/** The accuracy target of a slice: median absolute error <= 10% and p90 <= 25%. */
const meets = (s: { medianAbsPct: number; p90AbsPct: number }): boolean => s.medianAbsPct <= 10 && s.p90AbsPct <= 25;

/** What a lookup is asked: every field of a reference row but its latency and how it was measured. */
function shapeKey(r: Row): string {
  const { latency_ms: _l, role: _r, kernel: _k, model: _m, ...shape } = r;
  return JSON.stringify(shape);
}

/** A slice's label: its shape family, and the role of rows reported apart. */
function labelOf(op: string, r: Row): string {
  return baseLabel(op, r) + (r.role ? ` (${String(r.role)})` : '');
}

function baseLabel(op: string, r: Row): string {
  switch (op) {
    case 'context_attention': return `${r.dtype}/${r.kv_dtype}`;
    case 'generation_attention': return `kv ${r.kv_dtype}`;
    case 'nccl': return `${r.collective} ${r.dtype}`;
    case 'moe': return `${r.dtype}${r.kernel === FLASHINFER_TRTLLM ? ` ${FLASHINFER_TRTLLM}` : ''} ${r.distribution}`;
    case 'mla': return `${r.phase} ${r.dtype}/${r.kv_dtype}`;
    default: return String(r.dtype ?? '');
  }
}

/** Expert layers a system's tables timed as non-gated FFNs (nongatedShapes), by reference system. */
const nongatedMemo = new Map<string, Set<string>>();
async function nongatedOf(system: string): Promise<Set<string>> {
  let s = nongatedMemo.get(system);
  if (!s) {
    const moe = listRefTables(refRoot).filter((t) => t.system === system && REF_FILE_OP[t.file] === 'moe');
    s = nongatedShapes((await Promise.all(moe.map(async (t) => (await readRefTable(t))?.rows ?? []))).flat());
    nongatedMemo.set(system, s);
  }
  return s;
}

/** `pool`: the row of the pooled summary the slice counts in (op, or op with its MoE routing / reported-apart role). */
interface Stat {
  system: string; backend: string; version: string; op: string; dtype: string; pool: string; rows: number; medianAbsPct: number; p90AbsPct: number; biasPct: number;
  /** Rows measured faster than the system's speed of light for the op: no table that respects the roofline can match them. */
  belowSol: number;
  /** The lowest p90 any table respecting the roofline can reach on the slice's rows (p90Floor); computed where p90 > 25%. */
  p90Floor?: number;
  /** Whether the slice meets the target on its rows measured at or above the speed of light. */
  metAboveSol: boolean;
}
const stats: Stat[] = [];
/** Rows whose shape or routing the tables do not price, per source and op. */
const unpriced = new Map<string, number>();
/** All absolute errors per op, for the pooled summary. */
const pooled = new Map<string, number[]>();
const tables = listRefTables(refRoot).filter((t) => REF_FILE_OP[t.file] && REF_FILE_OP[t.file] !== 'elementwise');
for (const t of tables) {
  const op = REF_FILE_OP[t.file]!;
  if (onlyOp && op !== onlyOp) continue;
  const sys = loadSystem(t.system);
  if (onlySystem && sys.name !== onlySystem) continue;
  // NCCL data is system-wide: answer it through the system's default TRT-LLM tables.
  let backend = t.framework as Backend;
  let version = t.version;
  if (t.framework === 'nccl') {
    backend = (['trtllm', 'vllm', 'sglang'] as Backend[]).find((b) => sys.backends[b])!;
    version = sys.backends[backend]!.default;
  }
  if (!tableDir(sys.name, backend, version)) {
    console.error(`skip ${t.system} ${t.framework} ${t.version} ${t.file}: no tables for that version`);
    continue;
  }
  const src = await loadPerfSource({ system: sys, backend, version });
  const got = await readRefTable(t);
  if (!got) continue;
  // Each kernel of a format timed with two is scored on its own rows (see tagMoeKernels).
  if (op === 'moe') got.rows = tagMoeKernels(got.rows);
  /** Each slice's rows: the row, its measured and predicted latency and its speed of light. */
  const measured = new Map<string, { r: Row; latency: number; predicted: number; sol: number }[]>();
  const peaks = peaksOf(sys);
  const poolOf = new Map<string, string>();
  // MoE rows of a kernel serving does not run at that size, or of a non-gated FFN, are reported apart (see moeKernelRoles).
  const roles = op === 'moe' ? moeKernelRoles(got.rows, modelAwareMoe(t.framework, t.version) ? await nongatedOf(t.system) : undefined) : undefined;
  got.rows.forEach((r, i) => { if (roles && roles[i] !== 'served') r.role = `${roles[i]!} kernel`; });
  // Where a source measured the mxfp8-activation MXFP4 kernel, that is what engines serve MXFP4 experts with and
  // what our mxfp4 tables hold (servingMoeRows); its bf16-activation MXFP4 rows are reported apart.
  if (op === 'moe' && got.rows.some((r) => r.dtype === 'w4a8_mxfp4_mxfp8')) {
    for (const r of got.rows) if (r.dtype === 'mxfp4' && !r.role) r.role = 'bf16-activation kernel';
  }
  const source = sourceKey(t);
  const opName = t.file.includes('mla_') ? 'mla_module' : op;
  const cal = loadCalibration(sys.name);
  // Groups the fit left out as kernels serving does not run (excluded with a reason: an 8-bit GEMM on a fallback
  // path, prefill attention without its query heads, unserved MXFP4 experts, vLLM's host-bound MLA decode module)
  // are reported apart.
  // Outlier groups (a typical latency/SOL more than 4x off the system's other sources: a kernel serving does not run,
  // such as a GQA-unaware decode kernel) are reported apart too: the tables price them from a sound source.
  for (const e of cal?.excluded ?? []) {
    if (e.source !== source || e.op !== op) continue;
    for (const r of got.rows) if (FEATURES[op as ModelOp].group(r) === e.group) r.role = e.reason ?? 'outlier kernel';
  }
  // Collectives the fit found routed through host memory (see hostRoutedFrom) are reported apart.
  for (const h of cal?.hostRouted ?? []) {
    if (h.source !== source || h.op !== op) continue;
    for (const r of got.rows) {
      if (commGroupKey(r) === h.group && (r.gpus as number) >= h.fromGpus) r.role = 'host-routed';
    }
  }
  // GEMMs narrower than one tile in n or k are no serving shape (the fit leaves them out too): reported apart.
  if (op === 'gemm') for (const r of got.rows) if (isSubTileGemm(r)) r.role = 'sub-tile shape';
  for (const r of got.rows) {
    let p: number;
    try {
      p = predict(src, op, r);
    } catch {
      // A routing (or shape) the tables do not price, e.g. MoE power_law_0: counted apart, not compared.
      unpriced.set(`${t.system} ${t.framework} ${t.version} ${op}`, (unpriced.get(`${t.system} ${t.framework} ${t.version} ${op}`) ?? 0) + 1);
      continue;
    }
    if (!Number.isFinite(p)) continue;
    const lat = r.latency_ms as number;
    const k = labelOf(op, r);
    const ms = measured.get(k) ?? [];
    ms.push({ r, latency: lat, predicted: p, sol: OP_SPECS[op].sol(peaks, r) });
    measured.set(k, ms);
    const pk = op === 'moe' ? `moe (${String(r.role ?? r.distribution)})` : r.role ? `${opName} (${String(r.role)})` : opName;
    poolOf.set(k, pk);
    const pl = pooled.get(pk) ?? [];
    pl.push(Math.abs(((p - lat) / lat) * 100));
    pooled.set(pk, pl);
  }
  for (const [k, ms] of [...measured.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const pairs = (rows: typeof ms): [number, number][] => rows.map((m) => [m.latency, m.predicted]);
    const { count, medianAbsPct, p90AbsPct, biasPct } = errorStats(pairs(ms));
    const aboveSol = ms.filter((m) => m.latency >= m.sol);
    stats.push({ system: sys.name, backend: t.framework, version: t.version, op: opName, dtype: k, pool: poolOf.get(k)!, rows: count,
      medianAbsPct, p90AbsPct, biasPct, belowSol: ms.length - aboveSol.length,
      p90Floor: p90AbsPct > 25 ? p90Floor(ms.map((m): MeasuredShape => ({ key: shapeKey(m.r), latency: m.latency, sol: m.sol }))) : undefined,
      metAboveSol: meets(errorStats(pairs(aboveSol))) });
  }
}
/**
 * Ops of the accuracy target; MoE and GEMM rows of kernels serving does not run (or non-gated FFNs), GEMM shapes
 * serving does not run (sub-tile) and collectives of a host that routed GPU traffic through system memory are
 * reported, not targeted.
 */
function isTargeted(s: Stat): boolean {
  return ['gemm', 'context_attention', 'generation_attention', 'allreduce', 'moe'].includes(s.op) && !/ kernel\)$|\(host-routed\)$|\(sub-tile shape\)$/.test(s.pool);
}
const summary = [...pooled.keys()].sort().map((op) => {
  const a = pooled.get(op)!.sort((x, y) => x - y);
  const slices = stats.filter((s) => s.pool === op);
  const met = slices.filter(meets).length;
  return { op, rows: a.length, medianAbsPct: quantile(a, 0.5), p90AbsPct: quantile(a, 0.9), slices: slices.length, slicesMet: met };
});
// The hybrid and sparse-attention family ops, scored apart (`--op families` or a kind such as `--op gdn`).
const familySlices = !onlyOp || onlyOp === 'families' || FAMILY_KINDS.includes(onlyOp)
  ? await scoreFamilies(refRoot, onlySystem, onlyOp === 'families' ? undefined : onlyOp)
  : [];
if (json) {
  process.stdout.write(JSON.stringify({ slices: stats, summary, families: familySlices }, null, 2) + '\n');
} else {
  const f = (x: number): string => x.toFixed(1).padStart(6);
  // The label column as wide as its longest label (those with a reported-apart role run long).
  const w = Math.max(28, ...stats.map((s) => s.dtype.length));
  console.log(`system     backend version      op                    ${'dtype'.padEnd(w)}  rows  med%   p90%  bias%   <SOL floor%  target`);
  for (const s of stats) {
    const targeted = isTargeted(s);
    console.log(`${s.system.padEnd(10)} ${s.backend.padEnd(7)} ${s.version.padEnd(12)} ${s.op.padEnd(21)} ${s.dtype.padEnd(w)} ${String(s.rows).padStart(6)} ${f(s.medianAbsPct)} ${f(s.p90AbsPct)} ${f(s.biasPct)} ${String(s.belowSol).padStart(6)} ${s.p90Floor === undefined ? '     -' : f(s.p90Floor)}  ${targeted ? (s.metAboveSol ? 'met' : 'MISSED') : '-'}`);
  }
  const targeted = stats.filter(isTargeted);
  const met = targeted.filter((s) => s.metAboveSol);
  const pct = (a: number, b: number): string => `${((100 * a) / Math.max(1, b)).toFixed(1)}%`;
  console.log(`\ntarget (median <= 10%, p90 <= 25% on the rows at or above the roofline) met by ${met.length} of ${targeted.length} targeted slices (${pct(met.length, targeted.length)})`);
  const belowSol = targeted.reduce((a, s) => a + s.belowSol, 0);
  const rowsAll = targeted.reduce((a, s) => a + s.rows, 0);
  console.log(`${belowSol} of ${rowsAll} rows of targeted slices were measured faster than their system's speed of light (<SOL column): counted and reported, not scored`);
  console.log(`on all rows, below the speed of light included, ${targeted.filter(meets).length} of ${targeted.length} targeted slices meet it`);
  const apart = stats.filter((s) => !isTargeted(s));
  console.log(`${apart.length} slices listed apart (kernels serving does not run, host-routed collectives, ops outside the target: ${[...new Set(apart.map((s) => s.pool))].sort().join(', ')})`);
  const missed = targeted.filter((s) => !s.metAboveSol);
  if (missed.length) {
    console.log(`slices missing the target, with the reason:`);
    for (const s of missed) {
      const why = (s.p90Floor ?? 0) > 25
        ? `the rows disagree with each other: no table respecting the roofline gets p90 below ${s.p90Floor!.toFixed(1)}%`
        : `model error: median ${s.medianAbsPct.toFixed(1)}%, p90 ${s.p90AbsPct.toFixed(1)}%, bias ${s.biasPct.toFixed(1)}%`;
      console.log(`  ${s.system} ${s.backend} ${s.version} ${s.op} ${s.dtype} (${s.rows} rows): ${why}`);
    }
  }
  if (unpriced.size) console.log(`rows not compared (a routing or shape the tables do not price): ${[...unpriced].map(([k, n]) => `${k} ${n}`).join('; ')}`);
  console.log('\nall rows pooled, by op:');
  console.log('op                                 rows   med%   p90%  slices meeting the target');
  for (const s of summary) console.log(`${s.op.padEnd(30)} ${String(s.rows).padStart(9)} ${f(s.medianAbsPct)} ${f(s.p90AbsPct)}  ${s.slicesMet}/${s.slices}`);
  if (familySlices.length) printFamilies(familySlices);
}
