// Our table format: one CSV per op, header row, latency in ms. Each op has categorical key columns (exact
// match, or the nearest numeric key with a roofline transfer) and numeric axes interpolated in log space.
import * as sol from './sol.js';
import type { Peaks } from './sol.js';
import type { Collective } from './types.js';

/** MLA module dimensions of DeepSeek-V3/R1: the shapes the reference MLA module tables were measured on. */
export const DEEPSEEK_MLA = { kv_lora_rank: 512, qk_rope_head_dim: 64, qk_nope_head_dim: 128, v_head_dim: 128, q_lora_rank: 1536, hidden: 7168 } as const;

export type OpName = 'gemm' | 'context_attention' | 'generation_attention' | 'allreduce' | 'nccl' | 'moe' | 'mla' | 'elementwise';

/**
 * Substitute dtypes, closest format first, when a table (or a fitted group) lacks the asked one. MXFP4 experts
 * without an fp4 kernel run as 4-bit weights with 16-bit activations (Marlin-style), so after the other 4-bit
 * formats they take the 16-bit efficiency, not fp8's.
 */
export const DTYPE_FALLBACK: Record<string, readonly string[]> = {
  nvfp4: ['fp8', 'fp8_block', 'bfloat16'],
  mxfp4: ['int4_wo', 'nvfp4', 'bfloat16'],
  fp8_block: ['fp8', 'bfloat16'],
  fp8: ['fp8_block', 'bfloat16'],
  int4_wo: ['int8_wo', 'bfloat16'],
  int8_wo: ['int4_wo', 'bfloat16'],
  float16: ['bfloat16'],
  int8: ['fp8', 'bfloat16'],
};

export const OP_NAMES: readonly OpName[] = ['gemm', 'context_attention', 'generation_attention', 'allreduce', 'nccl', 'moe', 'mla', 'elementwise'];

export type Row = Record<string, number | string>;

export interface OpSpec {
  op: OpName;
  file: string;
  /** CSV columns in order, latency_ms last (not listed). */
  columns: readonly string[];
  /** Columns whose values are names (dtype, collective...). */
  stringCols: readonly string[];
  /** Key columns: the table holds a separate grid per distinct key. */
  keyCols: readonly string[];
  /** Numeric axes of each grid, interpolated in log2 space. */
  axisCols: readonly string[];
  /** Columns a file may leave out, with the value they then take (tables written before the column existed). */
  defaults?: Readonly<Record<string, string>>;
  /** Speed of light of a row (ms). */
  sol(p: Peaks, r: Row): number;
  /**
   * The roofline the calibrated model's corrections are relative to, where it differs from `sol`: MoE fits its
   * efficiency on balanced routing's roofline and learns each skewed routing as a correction on top, while
   * `sol`, the floor of every table, follows the routing (see busiestRankLoad).
   */
  modelSol?(p: Peaks, r: Row): number;
}

/** The roofline an op's calibrated model is relative to (OpSpec.modelSol, else its speed of light). */
export function modelSolOf(spec: OpSpec, p: Peaks, r: Row): number {
  return (spec.modelSol ?? spec.sol)(p, r);
}

const n = (r: Row, c: string): number => r[c] as number;
const s = (r: Row, c: string): string => r[c] as string;

/** moeSol's arguments for a MoE row: with its routing where it has one and `routing` is set, else balanced. */
export function moeSolArgs(r: Row, routing = true): Parameters<typeof sol.moeSol> extends [Peaks, ...infer A] ? A : never {
  const d = routing && r.distribution !== undefined ? s(r, 'distribution') : undefined;
  return [s(r, 'dtype'), n(r, 'tokens'), n(r, 'hidden'), n(r, 'inter'), n(r, 'topk'), n(r, 'experts'), n(r, 'moe_tp'), n(r, 'moe_ep'), d];
}

export const OP_SPECS: Record<OpName, OpSpec> = {
  gemm: {
    op: 'gemm', file: 'gemm.csv', columns: ['dtype', 'm', 'n', 'k'], stringCols: ['dtype'], keyCols: ['dtype'], axisCols: ['m', 'n', 'k'],
    sol: (p, r) => sol.gemmSol(p, s(r, 'dtype'), n(r, 'm'), n(r, 'n'), n(r, 'k')),
  },
  context_attention: {
    op: 'context_attention', file: 'context_attention.csv',
    columns: ['batch', 'seq', 'heads', 'kv_heads', 'head_dim', 'dtype', 'kv_dtype', 'window'],
    stringCols: ['dtype', 'kv_dtype'], keyCols: ['heads', 'kv_heads', 'head_dim', 'dtype', 'kv_dtype', 'window'], axisCols: ['batch', 'seq'],
    sol: (p, r) => sol.contextAttentionSol(p, n(r, 'batch'), n(r, 'seq'), 0, n(r, 'heads'), n(r, 'kv_heads'), n(r, 'head_dim'), s(r, 'dtype'), s(r, 'kv_dtype'), n(r, 'window')),
  },
  generation_attention: {
    op: 'generation_attention', file: 'generation_attention.csv',
    columns: ['batch', 'kv_len', 'heads', 'kv_heads', 'head_dim', 'kv_dtype', 'window'],
    stringCols: ['kv_dtype'], keyCols: ['heads', 'kv_heads', 'head_dim', 'kv_dtype', 'window'], axisCols: ['batch', 'kv_len'],
    sol: (p, r) => sol.generationAttentionSol(p, n(r, 'batch'), n(r, 'kv_len'), n(r, 'heads'), n(r, 'kv_heads'), n(r, 'head_dim'), s(r, 'kv_dtype'), n(r, 'window')),
  },
  allreduce: {
    op: 'allreduce', file: 'allreduce.csv', columns: ['kind', 'dtype', 'gpus', 'elements'], stringCols: ['kind', 'dtype'],
    keyCols: ['kind', 'dtype', 'gpus'], axisCols: ['elements'],
    sol: (p, r) => sol.collectiveSol(p, 'all_reduce', s(r, 'dtype'), n(r, 'gpus'), n(r, 'elements'), s(r, 'kind') === 'nccl' && n(r, 'gpus') > p.gpusPerNode),
  },
  nccl: {
    op: 'nccl', file: 'nccl.csv', columns: ['collective', 'dtype', 'gpus', 'elements'], stringCols: ['collective', 'dtype'],
    keyCols: ['collective', 'dtype', 'gpus'], axisCols: ['elements'],
    sol: (p, r) => sol.collectiveSol(p, s(r, 'collective') as Collective, s(r, 'dtype'), n(r, 'gpus'), n(r, 'elements')),
  },
  moe: {
    // distribution: the expert routing (balanced, power_law_1.01, power_law_1.2; see MOE_DISTRIBUTIONS).
    op: 'moe', file: 'moe.csv', columns: ['dtype', 'distribution', 'tokens', 'hidden', 'inter', 'topk', 'experts', 'moe_tp', 'moe_ep'],
    stringCols: ['dtype', 'distribution'], keyCols: ['dtype', 'distribution', 'hidden', 'inter', 'topk', 'experts', 'moe_tp', 'moe_ep'], axisCols: ['tokens'],
    defaults: { distribution: 'balanced' },
    sol: (p, r) => sol.moeSol(p, ...moeSolArgs(r)),
    modelSol: (p, r) => sol.moeSol(p, ...moeSolArgs(r, false)),
  },
  mla: {
    op: 'mla', file: 'mla.csv',
    columns: ['phase', 'batch', 'seq', 'heads', 'kv_lora_rank', 'qk_rope_head_dim', 'qk_nope_head_dim', 'v_head_dim', 'q_lora_rank', 'hidden', 'dtype', 'kv_dtype'],
    stringCols: ['phase', 'dtype', 'kv_dtype'],
    keyCols: ['phase', 'heads', 'kv_lora_rank', 'qk_rope_head_dim', 'qk_nope_head_dim', 'v_head_dim', 'q_lora_rank', 'hidden', 'dtype', 'kv_dtype'],
    axisCols: ['batch', 'seq'],
    sol: (p, r) => sol.mlaSol(p, s(r, 'phase') as 'context' | 'generation', n(r, 'batch'), n(r, 'seq'), n(r, 'heads'), n(r, 'kv_lora_rank'),
      n(r, 'qk_rope_head_dim'), n(r, 'qk_nope_head_dim'), n(r, 'v_head_dim'), n(r, 'q_lora_rank'), n(r, 'hidden'), s(r, 'dtype'), s(r, 'kv_dtype')),
  },
  elementwise: {
    op: 'elementwise', file: 'elementwise.csv', columns: ['op', 'bytes'], stringCols: ['op'], keyCols: ['op'], axisCols: ['bytes'],
    sol: (p, r) => sol.memSol(p, n(r, 'bytes')),
  },
};

/** Format a latency for a table: 5 significant digits, shortest form (deterministic). */
export function fmtLatency(ms: number): string {
  return String(Number(ms.toPrecision(5)));
}

/** Serialize rows of one op (already in a fixed order). */
export function toCsv(spec: OpSpec, rows: Row[]): string {
  const cols = [...spec.columns, 'latency_ms'];
  const lines = [cols.join(',')];
  for (const r of rows) lines.push(spec.columns.map((c) => String(r[c])).join(',') + ',' + fmtLatency(r.latency_ms as number));
  return lines.join('\n') + '\n';
}

/** Parse one of our CSV files; the header may list the columns in any order but must hold all of them. */
export function parseCsv(spec: OpSpec, text: string, where: string): Row[] {
  const lines = text.split(/\r?\n/);
  const header = (lines[0] ?? '').split(',').map((h) => h.trim());
  const want = [...spec.columns, 'latency_ms'];
  const idx = want.map((c) => header.indexOf(c));
  const missing = want.filter((c, i) => idx[i]! < 0 && spec.defaults?.[c] === undefined);
  if (missing.length) throw new Error(`${where}: missing column(s) ${missing.join(', ')}; expected ${want.join(',')}`);
  const isStr = want.map((c) => spec.stringCols.includes(c));
  const rows: Row[] = [];
  for (let li = 1; li < lines.length; li++) {
    const line = lines[li]!;
    if (line.length === 0) continue;
    const f = line.split(',');
    const r: Row = {};
    for (let i = 0; i < want.length; i++) {
      const v = idx[i]! < 0 ? spec.defaults![want[i]!] : f[idx[i]!];
      if (v === undefined) throw new Error(`${where}:${li + 1}: expected ${want.length} fields`);
      if (isStr[i]) r[want[i]!] = v.trim();
      else {
        const x = Number(v);
        if (!Number.isFinite(x)) throw new Error(`${where}:${li + 1}: ${want[i]} is not a number ("${v}")`);
        r[want[i]!] = x;
      }
    }
    rows.push(r);
  }
  return rows;
}
