// Reading an aiconfigurator kernel-data directory (<system>/<family>/<framework>/<version>/*.parquet) into
// rows keyed like our own tables. Used by the calibration fit, the accuracy benchmark and `--perf-data`.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { DEEPSEEK_MLA, type OpName, type Row } from './tables.js';

/** One parquet table of the reference layout. */
export interface RefTable {
  system: string;
  family: string;
  framework: string;
  version: string;
  file: string;
  path: string;
}

/** Our op a reference parquet file feeds, by file name. */
export const REF_FILE_OP: Record<string, OpName> = {
  'gemm_perf.parquet': 'gemm',
  'context_attention_perf.parquet': 'context_attention',
  'generation_attention_perf.parquet': 'generation_attention',
  'custom_allreduce_perf.parquet': 'allreduce',
  'nccl_perf.parquet': 'nccl',
  'moe_perf.parquet': 'moe',
  'mla_context_module_perf.parquet': 'mla',
  'mla_generation_module_perf.parquet': 'mla',
};

/**
 * An engine's decode MLA attention kernel alone (no projections). Not a table of ours: where an engine measured
 * no whole module, the fit composes its decode module from this kernel and its own GEMMs (see mla.ts).
 */
export const MLA_DECODE_KERNEL_FILE = 'generation_mla_perf.parquet';

/** Sorted subfolders of `dir` (none when it does not exist). */
export function subdirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((d) => statSync(join(dir, d)).isDirectory()).sort();
}

/** "<framework>/<version>": a measured source, as the calibration file keys it (NCCL: "nccl/<version>"). */
export const sourceKey = (t: RefTable): string => `${t.framework}/${t.version}`;

/** Every parquet table under `root` (the folder holding the <system> folders), in a fixed order. */
export function listRefTables(root: string): RefTable[] {
  const out: RefTable[] = [];
  for (const system of subdirs(root))
    for (const family of subdirs(join(root, system)))
      for (const framework of subdirs(join(root, system, family)))
        for (const version of subdirs(join(root, system, family, framework))) {
          const dir = join(root, system, family, framework, version);
          for (const file of readdirSync(dir).filter((f) => f.endsWith('.parquet')).sort())
            out.push({ system, family, framework, version, file, path: join(dir, file) });
        }
  return out;
}

const num = (v: unknown): number => Number(v); // integer columns arrive as BigInt
const str = (v: unknown): string => String(v);

/** NCCL names 16-bit payloads "half"; our tables use the dtype names of the rest of the project. */
function commDtype(d: string): string {
  return d === 'half' ? 'bfloat16' : d;
}

/** Reference dtype names that differ from ours. */
export function ourDtype(d: string): string {
  return d === 'w4a16_mxfp4' ? 'mxfp4' : d;
}

/** Read one reference table into our row shape (latency_ms included); rows we do not model are dropped. */
export async function readRefTable(t: RefTable): Promise<{ op: OpName; rows: Row[] } | undefined> {
  const op = REF_FILE_OP[t.file] ?? (t.file === MLA_DECODE_KERNEL_FILE ? 'mla' : undefined);
  if (!op) return undefined;
  const raw = (await parquetReadObjects({ file: await asyncBufferFromFile(t.path), compressors })) as Record<string, unknown>[];
  const rows: Row[] = [];
  for (const r of raw) {
    const lat = num(r.latency);
    if (!(lat > 0) || !Number.isFinite(lat)) continue;
    switch (op) {
      case 'gemm':
        rows.push({ dtype: ourDtype(str(r.gemm_dtype)), m: num(r.m), n: num(r.n), k: num(r.k), latency_ms: lat });
        break;
      case 'context_attention': {
        const heads = num(r.num_heads);
        const kv = num(r.num_key_value_heads);
        rows.push({
          batch: num(r.batch_size), seq: num(r.isl), heads, kv_heads: kv > 0 ? kv : heads, head_dim: num(r.head_dim),
          dtype: str(r.attn_dtype), kv_dtype: str(r.kv_cache_dtype), window: num(r.window_size ?? 0), latency_ms: lat,
        });
        break;
      }
      case 'generation_attention': {
        const heads = num(r.num_heads);
        const kv = num(r.num_key_value_heads);
        rows.push({
          batch: num(r.batch_size), kv_len: num(r.isl) + num(r.step ?? 0), heads, kv_heads: kv > 0 ? kv : heads,
          head_dim: num(r.head_dim), kv_dtype: str(r.kv_cache_dtype), window: num(r.window_size ?? 0), latency_ms: lat,
        });
        break;
      }
      case 'allreduce':
        // CUDA-graph rows are what engines run in steady state; eager rows are ignored.
        if (/eager/i.test(str(r.kernel_source ?? '')) || /eager/i.test(str(r.backend ?? ''))) continue;
        rows.push({ kind: 'custom', dtype: str(r.allreduce_dtype), gpus: num(r.num_gpus), elements: num(r.message_size), latency_ms: lat });
        break;
      case 'nccl':
        rows.push({ collective: str(r.op_name), dtype: commDtype(str(r.nccl_dtype)), gpus: num(r.num_gpus), elements: num(r.message_size), latency_ms: lat });
        break;
      case 'moe':
        rows.push({
          dtype: ourDtype(str(r.moe_dtype)), tokens: num(r.num_tokens), hidden: num(r.hidden_size), inter: num(r.inter_size), topk: num(r.topk),
          experts: num(r.num_experts), moe_tp: num(r.moe_tp_size), moe_ep: num(r.moe_ep_size), distribution: str(r.distribution ?? 'balanced'),
          kernel: str(r.kernel_source ?? ''), latency_ms: lat,
        });
        break;
      case 'mla': {
        const phase = t.file.includes('context') ? 'context' : 'generation';
        const seq = phase === 'context' ? num(r.isl) : num(r.isl) + num(r.step ?? 0);
        // The module tables leave out the DeepSeek dimensions they were measured on.
        rows.push({
          ...DEEPSEEK_MLA, phase, model: str(r.model ?? ''), batch: num(r.batch_size), seq, heads: num(r.num_heads), dtype: str(r.gemm_type ?? r.mla_dtype),
          kv_dtype: str(r.kv_cache_dtype), latency_ms: lat,
        });
        break;
      }
      default:
        break;
    }
  }
  return { op, rows };
}
