// Table synthesis: evaluate the calibrated op model on fixed grids and lay the result out in our table
// format. Pure and deterministic: the same specs and coefficients give byte-identical files.
import { stringify as stringifyYaml } from 'yaml';
import type { Backend, SystemSpec } from '../inputs/types.js';
import { borrowedGroups, groupFor, loadCalibration, modelLatency, pickSource, resolvedModel, routingsOf, type SystemCalibration } from './calibration.js';
import type { ModelOp, OpModel } from './model.js';
import type { Collective } from './types.js';
import { carriesAlong } from './grid.js';
import { ROOFLINE } from './roofline.js';
import { acrossNodes, peaksOf, type Peaks } from './sol.js';
import { DEEPSEEK_MLA, modelSolOf, OP_NAMES, OP_SPECS, PACKED_FILE, packRows, toCsv, writePacked, type OpName, type PackedGrid, type Row } from './tables.js';

/** Routed-expert shapes of the bundled MoE models (hidden, expert FFN, top-k, experts). */
export const MOE_SHAPES: readonly [number, number, number, number][] = [
  [2048, 768, 8, 128], // Qwen3-30B-A3B
  [2880, 2880, 4, 32], // gpt-oss-20b
  [2880, 2880, 4, 128], // gpt-oss-120b
  [4096, 1536, 8, 128], // Qwen3-235B-A22B
  [4096, 14336, 2, 8], // Mixtral-8x7B
  [5120, 8192, 1, 16], // Llama-4-Scout
  [6144, 16384, 2, 8], // Mixtral-8x22B
  [7168, 2048, 8, 256], // DeepSeek-V3/R1
  [7168, 2048, 8, 384], // Kimi-K2
];

const pow2 = (lo: number, hi: number): number[] => {
  const out: number[] = [];
  for (let e = lo; e <= hi; e++) out.push(2 ** e);
  return out;
};

/** Grid axes, shared by build and tests. */
export const GRID = {
  gemmM: [1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536],
  gemmN: pow2(5, 18),
  gemmK: pow2(5, 16),
  ctxBatch: [1, 4, 16, 64, 256],
  ctxSeq: [1, 16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 131072],
  ctxMaxTokens: 2 ** 19,
  attnHeads: pow2(0, 7),
  /** Query heads per kv head of the bundled models (MHA, 4, 8, 16); per-GPU counts keep the ratio at any TP. */
  attnGqa: [1, 4, 8, 16],
  genBatch: [1, 4, 16, 64, 256, 1024, 2048],
  genKv: [1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072],
  commElements: pow2(7, 29),
  /** 129: the first size past the MoE kernel switch (MOE_MIN_LATENCY_TOKENS). */
  moeTokens: [1, 4, 16, 32, 64, 128, 129, 256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 65536],
  moeParallel: [[1, 1], [1, 2], [2, 1], [1, 4], [2, 2], [4, 1], [1, 8], [2, 4], [4, 2], [8, 1], [1, 16], [1, 32], [1, 64]] as [number, number][],
  mlaHeads: [8, 16, 32, 64, 128],
  mlaCtxBatch: pow2(0, 8),
  mlaCtxSeq: [1, 16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 131072],
  mlaGenBatch: pow2(0, 10),
  mlaGenKv: [1, 16, 256, 1024, 4096, 8192, 16384, 32768, 65536, 131072],
  elementwiseBytes: pow2(10, 34),
} as const;

/**
 * Attention keys of the tables: (head_dim, window, heads, kv_heads). head_dim 128 at every GQA ratio of the
 * bundled models; head_dim 64 (gpt-oss: 8 query heads per kv head, full and 128-token sliding layers).
 * Other shapes are answered by the op model the tables come from.
 */
export function attentionKeys(): [number, number, number, number][] {
  const out: [number, number, number, number][] = [];
  const add = (hd: number, w: number, gqas: readonly number[]): void => {
    for (const h of GRID.attnHeads) {
      const kvs = [...new Set(gqas.map((g) => Math.max(1, h / g)))].sort((a, b) => a - b);
      for (const kv of kvs) out.push([hd, w, h, kv]);
    }
  };
  add(64, 0, [8]);
  add(64, 128, [8]);
  add(128, 0, GRID.attnGqa);
  return out;
}

function hasFp8(sys: SystemSpec): boolean {
  return sys.gpu.tflops.fp8 !== undefined;
}

function gemmDtypes(sys: SystemSpec, m?: OpModel): string[] {
  const set = new Set<string>(['bfloat16']);
  if (hasFp8(sys)) { set.add('fp8'); set.add('fp8_block'); }
  if (sys.gpu.tflops.nvfp4 !== undefined) set.add('nvfp4');
  for (const g of Object.keys(m?.groups ?? {})) if (g !== 'sq' && (hasFp8(sys) || !g.startsWith('fp8')) && (g !== 'nvfp4' || sys.gpu.tflops.nvfp4)) set.add(g);
  return [...set].sort();
}

/** Evaluate cells of one key: dense over the axes, floored at SOL, running max along each axis (monotone; see carriesAlong). */
function denseRows(op: OpName, peaks: Peaks, key: Row, axes: { col: string; values: readonly number[] }[], lat: (r: Row, sol: number) => number, keep?: (r: Row) => boolean): Row[] {
  const spec = OP_SPECS[op];
  const sizes = axes.map((a) => a.values.length);
  const total = sizes.reduce((a, b) => a * b, 1);
  const vals = new Float64Array(total);
  const rows: Row[] = [];
  const strides = sizes.map((_, i) => sizes.slice(i + 1).reduce((a, b) => a * b, 1));
  for (let o = 0; o < total; o++) {
    const r: Row = { ...key };
    for (let i = 0; i < axes.length; i++) r[axes[i]!.col] = axes[i]!.values[Math.floor(o / strides[i]!) % sizes[i]!]!;
    vals[o] = Math.max(lat(r, modelSolOf(spec, peaks, r)), spec.sol(peaks, r));
    rows.push(r);
  }
  for (let i = 0; i < axes.length; i++) {
    const col = axes[i]!.col;
    for (let o = 0; o < total; o++) {
      const j = Math.floor(o / strides[i]!) % sizes[i]!;
      const prev = o - strides[i]!;
      if (j > 0 && vals[o]! < vals[prev]! && carriesAlong(op, col, peaks, rows[prev]!)) vals[o] = vals[prev]!;
    }
  }
  const out: Row[] = [];
  for (let o = 0; o < total; o++) {
    const r = rows[o]!;
    if (keep && !keep(r)) continue;
    r.latency_ms = vals[o]!;
    out.push(r);
  }
  return out;
}

/** Latency function of one op: the calibrated model, else the plain roofline. */
function latencyFn(op: ModelOp, m: OpModel | undefined): (r: Row, sol: number) => number {
  const roof = { gemm: ROOFLINE.gemm, context_attention: ROOFLINE.contextAttention, generation_attention: ROOFLINE.generationAttention, allreduce: ROOFLINE.allReduce, nccl: ROOFLINE.nccl, moe: ROOFLINE.moe, mla: ROOFLINE.mla }[op];
  return (r, s) => (m ? modelLatency(op, m, r, s) : undefined) ?? s / roof.eff + roof.fixed;
}

/** Latency the tables give one point of an op (before the running max along the axes): the calibrated model, else the roofline, floored at SOL. */
export function pointLatency(op: ModelOp, m: OpModel | undefined, peaks: Peaks, r: Row): number {
  const spec = OP_SPECS[op];
  return Math.max(latencyFn(op, m)(r, modelSolOf(spec, peaks, r)), spec.sol(peaks, r));
}

export interface TableSet {
  meta: string;
  /** Rows of each op, key by key, cells row-major over the axes (the order the files list them). */
  tables: Partial<Record<OpName, Row[]>>;
}

/** The packed file of a table set (what perf:build writes). */
export function packedFile(t: TableSet): Buffer {
  const grids: Partial<Record<OpName, PackedGrid[]>> = {};
  for (const op of OP_NAMES) if (t.tables[op]) grids[op] = packRows(OP_SPECS[op], t.tables[op]);
  return writePacked(grids);
}

/** The same tables as one CSV per op (the format of measured tables; `perf:build -- --csv`). */
export function csvFiles(tables: Partial<Record<OpName, Row[]>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const op of OP_NAMES) if (tables[op]) out[OP_SPECS[op].file] = toCsv(OP_SPECS[op], tables[op]);
  return out;
}

export interface SynthesisPlan {
  /** "<backend>/<version>" whose coefficients are used per op ("" = roofline). */
  sourceByOp: Partial<Record<ModelOp, string>>;
  calibratedOn: string;
  borrowed: boolean;
}

/** Decide which calibrated source each op of (backend, version) uses. */
export function planFor(cal: SystemCalibration | undefined, backend: Backend, version: string): SynthesisPlan {
  const sourceByOp: SynthesisPlan['sourceByOp'] = {};
  if (!cal) return { sourceByOp, calibratedOn: 'roofline (uncalibrated)', borrowed: true };
  const main = pickSource(cal, backend, version);
  for (const op of ['gemm', 'context_attention', 'generation_attention', 'allreduce', 'moe', 'mla'] as ModelOp[]) {
    const own = main && cal.sources[main]?.[op] ? main : pickSource(cal, backend, version, op);
    if (own) sourceByOp[op] = own;
  }
  const calibratedOn = main ? main.replace('/', ' ') : 'roofline (uncalibrated)';
  return { sourceByOp, calibratedOn, borrowed: main !== `${backend}/${version}` };
}

/** meta.yaml entry naming the groups (dtype / shape families) taken from another calibrated source. */
function groupsMeta(cal: SystemCalibration | undefined, backend: Backend, version: string, plan: SynthesisPlan): { groups_from?: Record<string, Record<string, string>> } {
  if (!cal) return {};
  const out: Record<string, Record<string, string>> = {};
  for (const [op, src] of Object.entries(plan.sourceByOp) as [ModelOp, string][]) {
    const b = borrowedGroups(cal, backend, version, op, src);
    if (Object.keys(b).length) out[op] = b;
  }
  return Object.keys(out).length ? { groups_from: out } : {};
}

/**
 * meta.yaml entry for GEMM dtypes whose kernel pays for m off GEMM_M_ALIGN: the tables price every m as the
 * aligned kernel runs it, the lookup applies the factor (see TablePerfSource.gemm).
 */
function unalignedMeta(m: OpModel | undefined): { gemm_unaligned_m?: Record<string, number> } {
  const out = Object.fromEntries(Object.entries(m?.groups ?? {}).filter(([, g]) => g.unalignedM).map(([dtype, g]) => [dtype, g.unalignedM!]));
  return Object.keys(out).length ? { gemm_unaligned_m: out } : {};
}

/** Synthesize every table of one (system, backend, version). */
export function synthesize(sys: SystemSpec, backend: Backend, version: string, cal = loadCalibration(sys.name)): TableSet {
  const peaks = peaksOf(sys);
  const plan = planFor(cal, backend, version);
  const model = (op: ModelOp): OpModel | undefined => (cal ? resolvedModel(cal, backend, version, op, plan.sourceByOp[op]) : undefined);
  const files: Partial<Record<OpName, Row[]>> = {};
  const fp8 = hasFp8(sys);

  // GEMM
  {
    const m = model('gemm');
    const f = latencyFn('gemm', m);
    const rows: Row[] = [];
    for (const dtype of gemmDtypes(sys, m))
      rows.push(...denseRows('gemm', peaks, { dtype }, [{ col: 'm', values: GRID.gemmM }, { col: 'n', values: GRID.gemmN }, { col: 'k', values: GRID.gemmK }], f));
    files.gemm = rows;
  }
  // Prefill attention
  {
    const f = latencyFn('context_attention', model('context_attention'));
    const dtypes: [string, string][] = fp8 ? [['bfloat16', 'bfloat16'], ['bfloat16', 'fp8'], ['fp8', 'fp8']] : [['bfloat16', 'bfloat16']];
    const rows: Row[] = [];
    for (const [dtype, kvDtype] of dtypes)
      for (const [headDim, window, heads, kvHeads] of attentionKeys()) {
        const key: Row = { heads, kv_heads: kvHeads, head_dim: headDim, dtype, kv_dtype: kvDtype, window };
        rows.push(...denseRows('context_attention', peaks, key, [{ col: 'batch', values: GRID.ctxBatch }, { col: 'seq', values: GRID.ctxSeq }], f,
          (r) => (r.batch as number) * (r.seq as number) <= GRID.ctxMaxTokens || r.batch === 1));
      }
    files.context_attention = rows;
  }
  // Decode attention
  {
    const f = latencyFn('generation_attention', model('generation_attention'));
    const rows: Row[] = [];
    for (const kvDtype of fp8 ? ['bfloat16', 'fp8'] : ['bfloat16'])
      for (const [headDim, window, heads, kvHeads] of attentionKeys()) {
        const key: Row = { heads, kv_heads: kvHeads, head_dim: headDim, kv_dtype: kvDtype, window };
        rows.push(...denseRows('generation_attention', peaks, key, [{ col: 'batch', values: GRID.genBatch }, { col: 'kv_len', values: GRID.genKv }], f));
      }
    files.generation_attention = rows;
  }
  // All-reduce: the engine's custom kernel inside the node, NCCL beyond it.
  {
    const custom = latencyFn('allreduce', model('allreduce'));
    const ncclModel = cal?.nccl?.model;
    const ncclF = latencyFn('nccl', ncclModel);
    const rows: Row[] = [];
    const inNode = [2, 4, 8].filter((g) => g <= sys.gpusPerNode);
    for (const gpus of inNode)
      rows.push(...denseRows('allreduce', peaks, { kind: 'custom', dtype: 'bfloat16', gpus }, [{ col: 'elements', values: GRID.commElements }], custom));
    for (const gpus of [2, 4, 8, 16, 32, 64])
      rows.push(...denseRows('allreduce', peaks, { kind: 'nccl', dtype: 'bfloat16', gpus }, [{ col: 'elements', values: GRID.commElements }],
        acrossNodes(peaks, () => 'all_reduce', (r, s) => ncclF({ collective: 'all_reduce', dtype: 'bfloat16', gpus: r.gpus as number, elements: r.elements as number }, s))));
    files.allreduce = rows;
  }
  // NCCL collectives
  {
    const f = latencyFn('nccl', cal?.nccl?.model);
    const rows: Row[] = [];
    for (const collective of ['all_gather', 'all_reduce', 'alltoall', 'reduce_scatter'])
      for (const dtype of fp8 ? ['bfloat16', 'fp8'] : ['bfloat16'])
        for (const gpus of [2, 4, 8, 16, 32, 64])
          rows.push(...denseRows('nccl', peaks, { collective, dtype, gpus }, [{ col: 'elements', values: GRID.commElements }],
            acrossNodes(peaks, (r) => r.collective as string, (r, s) => f({ ...r, dtype: r.dtype === 'fp8' ? 'int8' : r.dtype }, s))));
    files.nccl = rows;
  }
  // MoE expert compute
  {
    const m = model('moe');
    const f = latencyFn('moe', m);
    const rows: Row[] = [];
    const dtypes = ['bfloat16', ...(fp8 ? ['fp8', 'fp8_block'] : []), ...(sys.gpu.tflops.nvfp4 ? ['nvfp4'] : [])];
    for (const [hidden, inter, topk, experts] of MOE_SHAPES)
      for (const dtype of hidden === 2880 ? [...dtypes, 'mxfp4'] : dtypes) {
        // Every routing the dtype's group prices (its large-batch kernel's group; see routingsOf).
        const g = m && groupFor('moe', m, { dtype, tokens: GRID.moeTokens.at(-1)!, hidden, inter, topk, experts, moe_tp: 1, moe_ep: 1 });
        for (const distribution of g ? [...new Set(routingsOf(g))] : ['balanced'])
          for (const [tp, ep] of GRID.moeParallel) {
            if (ep > experts || inter % tp !== 0) continue;
            const key = { dtype, distribution, hidden, inter, topk, experts, moe_tp: tp, moe_ep: ep };
            rows.push(...denseRows('moe', peaks, key, [{ col: 'tokens', values: GRID.moeTokens }], f));
          }
      }
    files.moe = rows;
  }
  // MLA modules (DeepSeek-V3 shapes)
  {
    const f = latencyFn('mla', model('mla'));
    const rows: Row[] = [];
    const dtypes: [string, string][] = fp8 ? [['bfloat16', 'bfloat16'], ['fp8_block', 'bfloat16'], ['fp8_block', 'fp8']] : [['bfloat16', 'bfloat16']];
    for (const phase of ['context', 'generation'])
      for (const heads of GRID.mlaHeads)
        for (const [dtype, kvDtype] of dtypes) {
          const key: Row = { phase, heads, ...DEEPSEEK_MLA, dtype, kv_dtype: kvDtype };
          const axes = phase === 'context'
            ? [{ col: 'batch', values: GRID.mlaCtxBatch }, { col: 'seq', values: GRID.mlaCtxSeq }]
            : [{ col: 'batch', values: GRID.mlaGenBatch }, { col: 'seq', values: GRID.mlaGenKv }];
          rows.push(...denseRows('mla', peaks, key, axes, f));
        }
    files.mla = rows;
  }
  // Memory-bound elementwise ops (norms, activations, residual adds): bandwidth at 80% plus a launch.
  {
    const rows = denseRows('elementwise', peaks, { op: 'memory' }, [{ col: 'bytes', values: GRID.elementwiseBytes }],
      (_r, s) => s / ROOFLINE.elementwise.eff + ROOFLINE.elementwise.fixed);
    files.elementwise = rows;
  }

  const meta = stringifyYaml({
    system: sys.name,
    backend,
    version,
    kind: 'synthesized',
    calibrated_on: plan.calibratedOn,
    borrowed: plan.borrowed,
    generator: 'npm run perf:build',
    sources: Object.fromEntries(Object.entries(plan.sourceByOp).map(([op, src]) => [op, src.replace('/', ' ')])),
    ...groupsMeta(cal, backend, version, plan),
    ...unalignedMeta(model('gemm')),
    ...(cal?.nccl ? { nccl: cal.nccl.version } : {}),
  });
  return { meta, tables: files };
}

export interface PlannedDir {
  system: string;
  backend: Backend;
  version: string;
  /** Version directory whose tables this one reuses (borrowed calibration, no copy); undefined = own files. */
  tablesFrom?: string;
  plan: SynthesisPlan;
}

/** Which directories get files and which point at a sibling (same system and backend, same calibration). */
export function planDirs(sys: SystemSpec, cal = loadCalibration(sys.name)): PlannedDir[] {
  const out: PlannedDir[] = [];
  for (const backend of ['vllm', 'sglang', 'trtllm'] as Backend[]) {
    const support = sys.backends[backend];
    if (!support) continue;
    const repBySource = new Map<string, string>();
    const versions = [...support.versions];
    const plans = versions.map((v) => planFor(cal, backend, v));
    // Representative of each calibration: the version that is the source itself, else the first that uses it.
    versions.forEach((v, i) => {
      const key = plans[i]!.calibratedOn;
      if (!plans[i]!.borrowed) repBySource.set(key, v);
    });
    versions.forEach((v, i) => {
      const key = plans[i]!.calibratedOn;
      if (!repBySource.has(key)) repBySource.set(key, v);
    });
    versions.forEach((v, i) => {
      const rep = repBySource.get(plans[i]!.calibratedOn)!;
      out.push({ system: sys.name, backend, version: v, plan: plans[i]!, ...(rep !== v ? { tablesFrom: rep } : {}) });
    });
  }
  return out;
}

/** Files (relative to data/perf) of one planned directory: meta.yaml, and tables.bin unless it borrows a sibling's. */
export function filesOfDir(sys: SystemSpec, d: PlannedDir, cal = loadCalibration(sys.name)): Record<string, string | Buffer> {
  const base = `${d.system}/${d.backend}/${d.version}`;
  if (d.tablesFrom) {
    const meta = stringifyYaml({
      system: d.system, backend: d.backend, version: d.version, kind: 'synthesized', calibrated_on: d.plan.calibratedOn, borrowed: true,
      tables_from: d.tablesFrom, generator: 'npm run perf:build',
    });
    return { [`${base}/meta.yaml`]: meta };
  }
  const t = synthesize(sys, d.backend, d.version, cal);
  return { [`${base}/meta.yaml`]: t.meta, [`${base}/${PACKED_FILE}`]: packedFile(t) };
}
