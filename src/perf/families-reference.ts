// Reading the reference tables of the family ops (linear_attention, kda, sparse_attention, msa, mhc, quantize)
// into rows in the shape of our family queries, one row per timed part. Used by the fit and the accuracy
// benchmark, never at planning time.
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import type { RefTable } from './reference.js';
import { SPARSE_MODEL_DIMS, type FamilyPart } from './families.js';
import type { Row } from './tables.js';

/** Folders of the reference layout holding family tables. */
export const FAMILY_FOLDERS = ['linear_attention', 'kda', 'sparse_attention', 'msa', 'mhc', 'quantize'] as const;

export interface FamilyRow {
  part: FamilyPart;
  /** The query fields of the part (LinearAttentionQuery, SparseAttentionQuery, ...). */
  row: Row;
  latency: number;
  /** Kernel and model the row timed, for reports. */
  kernel: string;
  model: string;
}

function sparseModelKey(model: string): string | undefined {
  const base = model.slice(model.indexOf('/') + 1).toLowerCase().replace(/-(fp8|nvfp4)$/, '');
  if (SPARSE_MODEL_DIMS[base]) return base;
  if (/^glm-5(\.\d)?$/.test(base)) return 'glm-5';
  return undefined;
}

/** Our kind and phase for a module table's op name; undefined for kernels timed alone (logits, top-k, attention only). */
export function sparseKindOf(opName: string): { kind: string; phase: 'context' | 'generation'; skipIndexer: boolean } | undefined {
  const m = /^(dsa|dsv4_(?:flash_)?csa|dsv4_(?:flash_)?hca|msa)_(context|generation)_module(_skip_indexer)?$/.exec(opName);
  if (!m) return undefined;
  const kind = m[1]!.startsWith('dsv4') ? (m[1]!.endsWith('csa') ? 'dsv4_csa' : 'dsv4_hca') : m[1] === 'msa' ? 'minimax_msa' : 'dsa';
  return { kind, phase: m[2] as 'context' | 'generation', skipIndexer: m[3] !== undefined };
}

const num = (v: unknown): number => Number(v); // integer columns arrive as BigInt
const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));
const kvDtypeOf = (d: string): string => (d.startsWith('fp8') ? 'fp8' : d || 'bfloat16');

/** Whether a reference table is one of the family tables. */
export function isFamilyTable(t: RefTable): boolean {
  return (FAMILY_FOLDERS as readonly string[]).includes(t.family);
}

/** Read one family table; rows with a phase or module we do not price are dropped. */
export async function readFamilyTable(t: RefTable): Promise<FamilyRow[]> {
  if (!isFamilyTable(t)) return [];
  const raw = (await parquetReadObjects({ file: await asyncBufferFromFile(t.path), compressors })) as Record<string, unknown>[];
  const out: FamilyRow[] = [];
  for (const r of raw) {
    const latency = num(r.latency);
    if (!(latency > 0) || !Number.isFinite(latency)) continue;
    const got = familyRowOf(t, r);
    if (got) out.push({ ...got, latency, kernel: str(r.kernel_source), model: str(r.model ?? r.model_name) });
  }
  return out;
}

function familyRowOf(t: RefTable, r: Record<string, unknown>): { part: FamilyPart; row: Row } | undefined {
  const kernel = str(r.kernel_source);
  switch (t.family) {
    case 'linear_attention':
    case 'kda': {
      const phase = str(r.phase);
      if (phase !== 'context' && phase !== 'generation') return undefined; // speculative verify steps: not priced here
      const kind = str(r.op_name);
      const piece = kernel.includes('conv1d') ? 'conv' : 'core';
      const mamba = kind === 'mamba2';
      const row: Row = {
        kind, phase, batch: num(r.batch_size), seq: phase === 'context' ? num(r.seq_len) : 1,
        heads: mamba ? num(r.nheads) : num(r.num_v_heads), keyHeads: mamba ? num(r.n_groups) : num(r.num_k_heads),
        headDim: mamba ? num(r.head_dim) : num(r.head_k_dim), valueDim: mamba ? num(r.head_dim) : num(r.head_v_dim),
        stateDim: mamba ? num(r.d_state) : 0, convKernel: num(r.d_conv ?? 4), dtype: 'bfloat16',
      };
      return { part: `${kind}.${phase}.${piece}`, row };
    }
    case 'sparse_attention':
    case 'msa': {
      const k = sparseKindOf(str(r.op_name));
      const key = sparseModelKey(str(r.model));
      if (!k || !key) return undefined;
      const dims: Row = { ...SPARSE_MODEL_DIMS[key]! };
      const heads = num(r.num_heads);
      const kvHeads0 = dims.kvHeads0 as number;
      const heads0 = dims.heads0 as number;
      delete dims.kvHeads0;
      delete dims.heads0;
      const isl = num(r.isl);
      const step = num(r.step ?? 0);
      const row: Row = {
        ...dims, kind: k.kind, phase: k.phase, batch: num(r.batch_size),
        seq: k.phase === 'context' ? isl : isl + step, prefix: k.phase === 'context' ? step : 0,
        heads, kvHeads: Math.max(1, Math.round((kvHeads0 * heads) / heads0)),
        dtype: str(r.gemm_type) || 'bfloat16', kvDtype: kvDtypeOf(str(r.kv_cache_dtype)),
      };
      if (k.kind === 'dsv4_csa' || k.kind === 'dsv4_hca') row.compressRatio = num(r.compress_ratio ?? (k.kind === 'dsv4_csa' ? 4 : 128));
      if (k.kind === 'dsv4_hca' || k.skipIndexer) { row.indexHeads = 0; row.indexHeadDim = 0; }
      if (k.kind === 'dsv4_hca') row.topk = 0;
      return { part: `${k.kind}.${k.phase}.module`, row };
    }
    case 'mhc': {
      const part = str(r.op_name);
      if (part !== 'pre' && part !== 'post') return undefined;
      return { part: `mhc.${part}`, row: { tokens: num(r.num_tokens), hidden: num(r.hidden_size), multiplier: num(r.hc_mult), sinkhornIters: num(r.sinkhorn_iters ?? 20) } };
    }
    case 'quantize': {
      const part = t.file.startsWith('computescale') ? 'scale' : t.file.startsWith('scale_matrix') ? 'apply' : undefined;
      if (!part) return undefined;
      return { part: `quantize.${part}`, row: { m: num(r.m), k: num(r.k), dtype: str(r.quant_dtype) || 'fp8' } };
    }
    default:
      return undefined;
  }
}

/**
 * Rows of kernels serving runs. Where a table timed two kernels on the same shape (SGLang's DSA prefill through
 * FlashMLA's sparse and its KV-cache kernel), the engine runs the faster one (its automatic backend choice picks
 * per batch): the slower alternative's rows are set apart, to be reported, not fitted.
 */
export function splitAlternatives(rows: FamilyRow[]): { served: FamilyRow[]; alternative: FamilyRow[] } {
  const byShape = new Map<string, FamilyRow[]>();
  for (const r of rows) {
    const k = `${r.part}|${JSON.stringify(r.row)}`;
    const l = byShape.get(k);
    if (l) l.push(r);
    else byShape.set(k, [r]);
  }
  const served: FamilyRow[] = [];
  const alternative: FamilyRow[] = [];
  for (const l of byShape.values()) {
    if (new Set(l.map((r) => r.kernel)).size < 2) {
      served.push(...l);
      continue;
    }
    // The fastest kernel's median over its rows of this shape decides.
    const byKernel = new Map<string, number[]>();
    for (const r of l) byKernel.set(r.kernel, [...(byKernel.get(r.kernel) ?? []), r.latency]);
    const med = (v: number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
    const fastest = [...byKernel].sort(([ka, a], [kb, b]) => med(a) - med(b) || (ka < kb ? -1 : 1))[0]![0];
    for (const r of l) (r.kernel === fastest ? served : alternative).push(r);
  }
  return { served, alternative };
}
