// `configure perf query`: one JSON object per line in, the same object with latency_ms (or error) out.
import { loadSystem, resolveEngine } from '../inputs/systems.js';
import type { Backend, Dtype } from '../inputs/types.js';
import { loadPerfSource } from './index.js';
import { MOE_DISTRIBUTIONS } from './model.js';
import { DEEPSEEK_MLA } from './tables.js';
import { answerFamily, FAMILY_OPS } from './families-query.js';
import type { Collective, MlaPhase, PerfSource } from './types.js';

type Obj = Record<string, unknown>;

const OPS = ['gemm', 'context_attention', 'generation_attention', 'allreduce', 'nccl', 'moe', 'mla'] as const;
const COLLECTIVES: readonly Collective[] = ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall'];

export interface QueryDefaults {
  system?: string;
  backend?: string;
  version?: string;
  perfData?: string;
}

function need(o: Obj, f: string): number {
  const v = o[f];
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`field "${f}" must be a non-negative number`);
  return v;
}
function opt(o: Obj, f: string, dflt: number): number {
  return o[f] === undefined ? dflt : need(o, f);
}
function needStr(o: Obj, f: string, dflt?: string): string {
  const v = o[f] ?? dflt;
  if (typeof v !== 'string' || v === '') throw new Error(`field "${f}" must be a string`);
  return v;
}

/** The routing a moe query names (optional; see MoeQuery.distribution). */
function moeDistribution(o: Obj): string | undefined {
  if (o.distribution === undefined) return undefined;
  const d = needStr(o, 'distribution');
  if (!(MOE_DISTRIBUTIONS as readonly string[]).includes(d)) throw new Error(`field "distribution" must be one of ${MOE_DISTRIBUTIONS.join(', ')}`);
  return d;
}

function answer(src: PerfSource, o: Obj): number {
  const op = needStr(o, 'op');
  switch (op) {
    case 'gemm':
      return src.gemm({ dtype: needStr(o, 'dtype', 'bfloat16') as Dtype, m: need(o, 'm'), n: need(o, 'n'), k: need(o, 'k') });
    case 'context_attention': {
      const heads = need(o, 'heads');
      return src.contextAttention({
        batch: opt(o, 'batch', 1), seq: need(o, 'seq'), prefix: opt(o, 'prefix', 0), heads, kvHeads: opt(o, 'kv_heads', heads), headDim: opt(o, 'head_dim', 128),
        dtype: needStr(o, 'dtype', 'bfloat16') as Dtype, kvDtype: needStr(o, 'kv_dtype', 'bfloat16') as Dtype, window: opt(o, 'window', 0),
      });
    }
    case 'generation_attention': {
      const heads = need(o, 'heads');
      return src.generationAttention({
        batch: opt(o, 'batch', 1), kvLen: need(o, 'kv_len'), heads, kvHeads: opt(o, 'kv_heads', heads), headDim: opt(o, 'head_dim', 128),
        kvDtype: needStr(o, 'kv_dtype', 'bfloat16') as Dtype, window: opt(o, 'window', 0),
      });
    }
    case 'allreduce':
      return src.allReduce({ dtype: needStr(o, 'dtype', 'bfloat16') as Dtype, gpus: need(o, 'gpus'), elements: need(o, 'elements'), crossNode: o.cross_node === true });
    case 'nccl': {
      const c = needStr(o, 'collective') as Collective;
      if (!COLLECTIVES.includes(c)) throw new Error(`collective "${c}" is not one of ${COLLECTIVES.join(', ')}`);
      return src.nccl(c, { dtype: needStr(o, 'dtype', 'bfloat16') as Dtype, gpus: need(o, 'gpus'), elements: need(o, 'elements'), crossNode: o.cross_node === true });
    }
    case 'moe':
      return src.moe({
        dtype: needStr(o, 'dtype', 'bfloat16') as Dtype, tokens: need(o, 'tokens'), hidden: need(o, 'hidden'), inter: need(o, 'inter'), topk: need(o, 'topk'),
        experts: need(o, 'experts'), moeTp: opt(o, 'moe_tp', 1), moeEp: opt(o, 'moe_ep', 1), distribution: moeDistribution(o),
      });
    case 'mla': {
      // A DeepSeek-style attention module (projections + attention); dimensions default to DeepSeek-V3's.
      const phase = needStr(o, 'phase') as MlaPhase;
      if (phase !== 'context' && phase !== 'generation') throw new Error(`field "phase" must be "context" or "generation"`);
      const d = DEEPSEEK_MLA;
      return src.mla({
        phase, batch: opt(o, 'batch', 1), seq: need(o, 'seq'), heads: need(o, 'heads'), kvLoraRank: opt(o, 'kv_lora_rank', d.kv_lora_rank),
        qkRopeHeadDim: opt(o, 'qk_rope_head_dim', d.qk_rope_head_dim), qkNopeHeadDim: opt(o, 'qk_nope_head_dim', d.qk_nope_head_dim),
        vHeadDim: opt(o, 'v_head_dim', d.v_head_dim), qLoraRank: opt(o, 'q_lora_rank', d.q_lora_rank), hidden: opt(o, 'hidden', d.hidden),
        dtype: needStr(o, 'dtype', 'bfloat16') as Dtype, kvDtype: needStr(o, 'kv_dtype', 'bfloat16') as Dtype,
      });
    }
    default: {
      const v = answerFamily(src, op, o);
      if (v === undefined) throw new Error(`op "${op}" is not one of ${[...OPS, ...FAMILY_OPS].join(', ')}`);
      return v;
    }
  }
}

/** Answer a block of JSON lines; returns the output lines (same order, one per non-empty input line). */
export async function answerLines(lines: string[], d: QueryDefaults = {}): Promise<string[]> {
  const sources = new Map<string, Promise<PerfSource>>();
  const out: string[] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    let o: Obj;
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      o = parsed as Obj;
    } catch {
      out.push(JSON.stringify({ input: line, error: 'not a JSON object' }));
      continue;
    }
    try {
      const sysName = needStr(o, 'system', d.system);
      const backend = needStr(o, 'backend', d.backend);
      const version = (o.version as string | undefined) ?? d.version;
      const perfData = (o.perf_data as string | undefined) ?? d.perfData;
      const key = `${sysName}|${backend}|${version ?? ''}|${perfData ?? ''}`;
      let p = sources.get(key);
      if (!p) {
        p = (async () => {
          const system = loadSystem(sysName);
          const eng = resolveEngine(system, backend as Backend, version);
          return loadPerfSource({ system, backend: eng.backend, version: eng.version, ...(perfData ? { perfData } : {}) });
        })();
        sources.set(key, p);
      }
      const src = await p;
      const v = answer(src, o);
      out.push(JSON.stringify({ ...o, latency_ms: Number(v.toPrecision(6)) }));
    } catch (err) {
      out.push(JSON.stringify({ ...o, error: (err instanceof Error ? err.message : String(err)).split('\n')[0] }));
    }
  }
  return out;
}
