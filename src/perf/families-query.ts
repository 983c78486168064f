// `configure perf query` for the family ops. Fields are snake_case forms of the query types (types.ts); the
// dimensions a query leaves out default to a representative model of the kind (listed in FAMILY_QUERY_DEFAULTS).
import type { Dtype } from '../inputs/types.js';
import { SPARSE_MODEL_DIMS } from './families.js';
import type { FamilyPhase, LinearAttentionKind, PerfSource, SparseAttentionKind } from './types.js';

type Obj = Record<string, unknown>;

export const FAMILY_OPS = ['linear_attention', 'sparse_attention', 'hyper_connection', 'quantize'] as const;

const LINEAR_KINDS: readonly LinearAttentionKind[] = ['gdn', 'mamba2', 'kda'];
const SPARSE_KINDS: readonly SparseAttentionKind[] = ['dsa', 'dsv4_csa', 'dsv4_hca', 'minimax_msa'];

/** Per-GPU shapes of one GPU serving the whole layer: Qwen3.5-397B-A17B, Nemotron-3-Super, Kimi linear. */
const LINEAR_DEFAULTS: Record<LinearAttentionKind, { heads: number; key_heads: number; head_dim: number; value_dim: number; state_dim: number }> = {
  gdn: { heads: 64, key_heads: 16, head_dim: 128, value_dim: 128, state_dim: 0 },
  mamba2: { heads: 128, key_heads: 8, head_dim: 64, value_dim: 64, state_dim: 128 },
  kda: { heads: 96, key_heads: 96, head_dim: 128, value_dim: 128, state_dim: 0 },
};
/** DeepSeek-V3.2 for DSA, DeepSeek-V4-Flash for its compressed layers, MiniMax-M3 for MSA. */
const SPARSE_DEFAULT_MODEL: Record<SparseAttentionKind, string> = {
  dsa: 'deepseek-v3.2', dsv4_csa: 'deepseek-v4-flash', dsv4_hca: 'deepseek-v4-flash', minimax_msa: 'minimax-m3',
};

function need(o: Obj, f: string): number {
  const v = o[f];
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`field "${f}" must be a non-negative number`);
  return v;
}
const opt = (o: Obj, f: string, dflt: number): number => (o[f] === undefined ? dflt : need(o, f));
function oneOf<T extends string>(o: Obj, f: string, allowed: readonly T[], dflt?: T): T {
  const v = o[f] ?? dflt;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) throw new Error(`field "${f}" must be one of ${allowed.join(', ')}`);
  return v as T;
}
const str = (o: Obj, f: string, dflt: string): string => (typeof o[f] === 'string' && o[f] !== '' ? (o[f] as string) : dflt);
const PHASES: readonly FamilyPhase[] = ['context', 'generation'];

/** The latency of a family op query, or undefined when `op` is not a family op. */
export function answerFamily(src: PerfSource, op: string, o: Obj): number | undefined {
  switch (op) {
    case 'linear_attention': {
      const kind = oneOf(o, 'kind', LINEAR_KINDS);
      const phase = oneOf(o, 'phase', PHASES);
      const d = LINEAR_DEFAULTS[kind];
      return src.linearAttention({
        kind, phase, batch: opt(o, 'batch', 1), seq: phase === 'generation' ? 1 : need(o, 'seq'), heads: opt(o, 'heads', d.heads),
        keyHeads: opt(o, 'key_heads', d.key_heads), headDim: opt(o, 'head_dim', d.head_dim), valueDim: opt(o, 'value_dim', d.value_dim),
        stateDim: opt(o, 'state_dim', d.state_dim), convKernel: opt(o, 'conv_kernel', 4), dtype: str(o, 'dtype', 'bfloat16') as Dtype,
      });
    }
    case 'sparse_attention': {
      const kind = oneOf(o, 'kind', SPARSE_KINDS);
      const phase = oneOf(o, 'phase', PHASES);
      const d = SPARSE_MODEL_DIMS[SPARSE_DEFAULT_MODEL[kind]]!;
      const hca = kind === 'dsv4_hca';
      return src.sparseAttention({
        kind, phase, batch: opt(o, 'batch', 1), seq: need(o, 'seq'), prefix: opt(o, 'prefix', 0), heads: opt(o, 'heads', d.heads0!),
        kvHeads: opt(o, 'kv_heads', d.kvHeads0!), hidden: opt(o, 'hidden', d.hidden!), qLoraRank: opt(o, 'q_lora_rank', d.qLoraRank!),
        kvLoraRank: opt(o, 'kv_lora_rank', d.kvLoraRank!), qkNopeHeadDim: opt(o, 'qk_nope_head_dim', d.qkNopeHeadDim!),
        qkRopeHeadDim: opt(o, 'qk_rope_head_dim', d.qkRopeHeadDim!), vHeadDim: opt(o, 'v_head_dim', d.vHeadDim!),
        indexHeads: opt(o, 'index_heads', hca ? 0 : d.indexHeads!), indexHeadDim: opt(o, 'index_head_dim', hca ? 0 : d.indexHeadDim!),
        topk: opt(o, 'topk', hca ? 0 : d.topk!), compressRatio: opt(o, 'compress_ratio', kind === 'dsv4_csa' ? 4 : hca ? 128 : 1),
        window: opt(o, 'window', d.window!), dtype: str(o, 'dtype', 'fp8_block') as Dtype, kvDtype: str(o, 'kv_dtype', 'fp8') as Dtype,
      });
    }
    case 'hyper_connection':
      return src.hyperConnection({ tokens: need(o, 'tokens'), hidden: opt(o, 'hidden', 4096), multiplier: opt(o, 'multiplier', 4), sinkhornIters: opt(o, 'sinkhorn_iters', 20) });
    case 'quantize':
      return src.quantize({ mode: oneOf(o, 'mode', ['dynamic', 'static'] as const, 'dynamic'), m: need(o, 'm'), k: need(o, 'k'), dtype: str(o, 'dtype', 'fp8') as Dtype });
    default:
      return undefined;
  }
}
