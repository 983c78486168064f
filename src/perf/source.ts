// A PerfSource answering from per-op tables (ours, a user's measured tables, or reference parquet rows),
// with a fallback source for ops or dtypes the tables lack.
import type { SystemSpec } from '../inputs/types.js';
import { OpTable } from './grid.js';
import { FLASHINFER_TRTLLM, GEMM_M_ALIGN, MOE_DISTRIBUTIONS, TRTLLM_GEN } from './model.js';
import { GemmFast } from './gemm-fast.js';
import * as sol from './sol.js';
import { DTYPE_FALLBACK, OP_SPECS, type OpName, type Row } from './tables.js';
import type { FamilyPricer } from './families.js';
import type {
  Collective, CommQuery, ContextAttentionQuery, ElementwiseQuery, GemmQuery, GenerationAttentionQuery, HyperConnectionQuery,
  LinearAttentionQuery, MlaQuery, MoeQuery, PerfSource, PerfSourceInfo, QuantizeQuery, SparseAttentionQuery,
} from './types.js';

/** Provides the table of an op on first use (undefined when the source has none). */
export type TableProvider = (op: OpName) => OpTable | undefined;

/** The op model behind synthesized tables: answers keys the table does not list (other head counts, MoE shapes). */
export type ModelProvider = (op: OpName, r: Row) => number | undefined;

export class TablePerfSource implements PerfSource {
  readonly peaks: sol.Peaks;
  private readonly tables = new Map<OpName, OpTable | null>();
  /** Values of a key column each table lists (attention windows, MoE routings), by "op|column". */
  private readonly listed = new Map<string, Set<string>>();
  /** Ops answered by the fallback, for `info` and reports. */
  readonly fallbackOps = new Set<OpName>();
  private gemmFast: GemmFast | null | undefined;

  constructor(
    readonly system: SystemSpec,
    readonly info: PerfSourceInfo,
    private readonly provide: TableProvider,
    private readonly fallback?: PerfSource,
    private readonly model?: ModelProvider,
    /** GEMM dtypes whose kernel pays for m off GEMM_M_ALIGN, with the factor (the tables price aligned m). */
    private readonly gemmUnalignedM: Record<string, number> = {},
    /** The calibrated models of the hybrid and sparse-attention family ops (else the fallback answers them). */
    readonly families?: FamilyPricer,
  ) {
    this.peaks = sol.peaksOf(system);
  }

  table(op: OpName): OpTable | undefined {
    let t = this.tables.get(op);
    if (t === undefined) {
      t = this.provide(op) ?? null;
      this.tables.set(op, t);
      if (!t) this.fallbackOps.add(op);
    }
    return t ?? undefined;
  }

  /** Look a row up; when its dtype column is missing from the table, transfer from a substitute dtype by the roofline. */
  private lookup(op: OpName, r: Row, dtypeCol?: string): number | undefined {
    const t = this.table(op);
    if (!t) return undefined;
    if (this.model) {
      // Keys the synthesized table lists are interpolated; other shapes come from the same model directly. The
      // table holds the engine's default MoE kernels, so trtllm-gen workers (the low-latency kernel at every size,
      // on B300 / GB300 as measured on their kin GPU) and SGLang's TRT-LLM-gen runner ask the model.
      const beyondTable = r.kernel === TRTLLM_GEN || r.kernel === FLASHINFER_TRTLLM;
      const exact = beyondTable ? undefined : t.lookup(r, true);
      if (exact !== undefined) return exact;
      const m = this.model(op, r);
      if (m !== undefined) return m;
    }
    const v = t.lookup(r);
    if (v !== undefined || !dtypeCol) return v;
    const spec = OP_SPECS[op];
    for (const alt of DTYPE_FALLBACK[r[dtypeCol] as string] ?? ['bfloat16']) {
      const r2 = { ...r, [dtypeCol]: alt };
      const v2 = t.lookup(r2);
      if (v2 !== undefined) return Math.max(v2 * (spec.sol(this.peaks, r) / spec.sol(this.peaks, r2)), spec.sol(this.peaks, r));
    }
    return undefined;
  }

  gemm(q: GemmQuery): number {
    if (this.gemmFast === undefined) {
      const t = this.table('gemm');
      this.gemmFast = t ? new GemmFast(this.peaks, (dtype) => t.gridByKey(`${dtype}|`)) : null;
    }
    if (this.gemmFast) {
      const v = this.gemmFast.lookup(q.dtype, q.m, q.n, q.k) ?? this.lookup('gemm', { dtype: q.dtype, m: q.m, n: q.n, k: q.k }, 'dtype');
      if (v !== undefined) return q.m % GEMM_M_ALIGN !== 0 ? v * (this.gemmUnalignedM[q.dtype] ?? 1) : v;
    }
    return this.fb().gemm(q);
  }

  /**
   * A window the table does not list, priced by the calibrated model where the row's group measured that width
   * (GroupModel.windows); undefined otherwise. Engines' windowed kernels differ widely (SGLang's for head_dim 256 on
   * H100 runs about as slow as full attention, at any length), so neither the roofline nor full attention stands in.
   */
  private measuredWindowMs(op: 'context_attention' | 'generation_attention', r: Row): number | undefined {
    const t = this.table(op);
    if (!t || !this.model || (r.window as number) <= 0 || this.held(op, t, 'window').has(String(r.window))) return undefined;
    return this.model(op, r);
  }

  /**
   * The window a table can price: the window when the table measured it (its rows cover short sequences too,
   * run by the engine's windowed kernel); for a window it never measured, 0 when the window covers every token
   * (full attention) and otherwise undefined: priced from full attention, since the fitted window groups know
   * only the measured widths and extrapolate badly beyond them (gpt-oss's 128 to 4k-8k; see measuredWindowMs).
   */
  private windowFor(op: 'context_attention' | 'generation_attention', window: number, tokens: number): number | undefined {
    if (window <= 0) return 0;
    const t = this.table(op);
    if (!t) return window;
    if (this.held(op, t, 'window').has(String(window))) return window;
    return window >= tokens ? 0 : undefined;
  }

  /** The values of a key column a table lists, computed once per table. */
  private held(op: OpName, t: OpTable, col: string): Set<string> {
    let v = this.listed.get(`${op}|${col}`);
    if (!v) this.listed.set(`${op}|${col}`, (v = t.keyValues(col)));
    return v;
  }

  contextAttention(q: ContextAttentionQuery): number {
    const prefix = q.prefix ?? 0;
    const full = q.seq + prefix;
    const r: Row = { batch: q.batch, seq: full, heads: q.heads, kv_heads: q.kvHeads, head_dim: q.headDim, dtype: q.dtype, kv_dtype: q.kvDtype, window: q.window };
    const measured = this.measuredWindowMs('context_attention', r);
    const window = measured === undefined ? this.windowFor('context_attention', q.window, full) : q.window;
    if (window === undefined) {
      // Full attention scaled by the roofline to the windowed work (each token attends to at most the window).
      const open = this.contextAttention({ ...q, window: 0 });
      const sw = sol.contextAttentionSol(this.peaks, q.batch, q.seq, prefix, q.heads, q.kvHeads, q.headDim, q.dtype, q.kvDtype, q.window);
      const sf = sol.contextAttentionSol(this.peaks, q.batch, q.seq, prefix, q.heads, q.kvHeads, q.headDim, q.dtype, q.kvDtype, 0);
      return Math.max((open * sw) / sf, sw);
    }
    if (window !== q.window) return this.contextAttention({ ...q, window });
    const v = measured ?? this.lookup('context_attention', r, 'dtype') ?? this.lookup('context_attention', { ...r, kv_dtype: 'bfloat16' }, 'dtype');
    if (v === undefined) return this.fb().contextAttention(q);
    if (prefix <= 0) return v;
    // Cached prefix: only the new rows of the causal score matrix are computed.
    const frac = (full * full - prefix * prefix) / (full * full);
    const floor = sol.contextAttentionSol(this.peaks, q.batch, q.seq, prefix, q.heads, q.kvHeads, q.headDim, q.dtype, q.kvDtype, q.window);
    return Math.max(v * frac, floor);
  }

  generationAttention(q: GenerationAttentionQuery): number {
    const r: Row = { batch: q.batch, kv_len: q.kvLen, heads: q.heads, kv_heads: q.kvHeads, head_dim: q.headDim, kv_dtype: q.kvDtype, window: q.window };
    const measured = this.measuredWindowMs('generation_attention', r);
    if (measured !== undefined) return measured;
    const window = this.windowFor('generation_attention', q.window, q.kvLen);
    // A window neither the table nor the model measured reads the window's tokens: full attention over that many.
    if (window === undefined) return this.generationAttention({ ...q, kvLen: q.window, window: 0 });
    if (window !== q.window) return this.generationAttention({ ...q, window });
    return this.lookup('generation_attention', r, 'kv_dtype') ?? this.fb().generationAttention(q);
  }

  private commRow(q: CommQuery): { dtype: string; cross: boolean } {
    const b = sol.dtypeBytes(q.dtype);
    return { dtype: b <= 1 ? 'fp8' : 'bfloat16', cross: q.crossNode === true || q.gpus > this.peaks.gpusPerNode };
  }

  /** A collective measured inside one NVLink domain priced for a group that spans nodes, or the reverse. */
  private crossScale(lat: number, bulk: () => number | undefined, collective: Collective, dtype: string, gpus: number, elements: number, cross: boolean, tableCross: boolean): number {
    if (cross === tableCross) return lat;
    const to = sol.collectiveSol(this.peaks, collective, dtype, gpus, elements, cross);
    const from = sol.collectiveSol(this.peaks, collective, dtype, gpus, elements, tableCross);
    // The table's efficiency at its largest message: how fast the wire part of the collective runs.
    const bulkLat = bulk();
    const bulkEff = bulkLat ? sol.collectiveSol(this.peaks, collective, dtype, gpus, sol.BULK_ELEMENTS, tableCross) / bulkLat : 1;
    return sol.moveCollective(lat, bulkEff, from, to, (cross ? 1 : -1) * sol.NETWORK_LATENCY_MS);
  }

  allReduce(q: CommQuery): number {
    if (q.gpus <= 1) return 0;
    const { dtype, cross } = this.commRow(q);
    const custom = !cross && q.gpus <= Math.min(8, this.peaks.gpusPerNode);
    const r: Row = { kind: custom ? 'custom' : 'nccl', dtype: 'bfloat16', gpus: q.gpus, elements: q.elements * (sol.dtypeBytes(dtype) / 2) };
    const v = this.lookup('allreduce', r) ?? (custom ? this.lookup('allreduce', { ...r, kind: 'nccl' }) : undefined);
    if (v === undefined) return this.fb().allReduce(q);
    const bulk = { ...r, elements: sol.BULK_ELEMENTS };
    const bulkLat = () => this.lookup('allreduce', bulk) ?? (custom ? this.lookup('allreduce', { ...bulk, kind: 'nccl' }) : undefined);
    return this.crossScale(v, bulkLat, 'all_reduce', 'bfloat16', q.gpus, r.elements as number, cross, q.gpus > this.peaks.gpusPerNode);
  }

  nccl(collective: Collective, q: CommQuery): number {
    if (q.gpus <= 1) return 0;
    const { dtype, cross } = this.commRow(q);
    const r: Row = { collective, dtype, gpus: q.gpus, elements: q.elements };
    const v = this.lookup('nccl', r, 'dtype');
    if (v === undefined) return this.fb().nccl(collective, q);
    const bulkLat = () => this.lookup('nccl', { ...r, elements: sol.BULK_ELEMENTS }, 'dtype');
    return this.crossScale(v, bulkLat, collective, dtype, q.gpus, q.elements, cross, q.gpus > this.peaks.gpusPerNode);
  }

  moe(q: MoeQuery): number {
    const r: Row = { dtype: q.dtype, tokens: q.tokens, hidden: q.hidden, inter: q.inter, topk: q.topk, experts: q.experts, moe_tp: q.moeTp, moe_ep: q.moeEp };
    if (q.trtllmGen) r.kernel = TRTLLM_GEN;
    else if (q.flashinferTrtllm) r.kernel = FLASHINFER_TRTLLM;
    // A routing the tables were never given is not silently priced as another one (or by the roofline).
    const t = q.distribution ? this.table('moe') : undefined;
    const held = t && this.held('moe', t, 'distribution');
    if (held && !held.has(q.distribution!)) {
      throw new Error(`these MoE tables hold no ${q.distribution} routing (they hold ${[...held].sort().join(', ')})`);
    }
    for (const distribution of q.distribution ? [q.distribution] : MOE_DISTRIBUTIONS) {
      const v = this.lookup('moe', { ...r, distribution }, 'dtype');
      if (v === undefined) continue;
      // Tables that hold skewed routings only stand in for balanced routing when none is asked for, and then
      // answer no faster than balanced routing's roofline (skew reads fewer experts for small batches).
      return q.distribution || distribution === 'balanced' ? v : Math.max(v, OP_SPECS.moe.sol(this.peaks, r));
    }
    return this.fb().moe(q);
  }

  mla(q: MlaQuery): number {
    const r: Row = {
      phase: q.phase, batch: q.batch, seq: q.seq, heads: q.heads, kv_lora_rank: q.kvLoraRank, qk_rope_head_dim: q.qkRopeHeadDim,
      qk_nope_head_dim: q.qkNopeHeadDim, v_head_dim: q.vHeadDim, q_lora_rank: q.qLoraRank, hidden: q.hidden, dtype: q.dtype, kv_dtype: q.kvDtype,
    };
    return this.lookup('mla', r, 'dtype') ?? this.fb().mla(q);
  }

  elementwise(q: ElementwiseQuery): number {
    return this.lookup('elementwise', { op: 'memory', bytes: q.bytes }) ?? this.fb().elementwise(q);
  }

  p2p(bytes: number, crossNode: boolean): number {
    return this.fb().p2p(bytes, crossNode);
  }

  linearAttention(q: LinearAttentionQuery): number {
    return this.families ? this.families.linearAttention(q) : this.fb().linearAttention(q);
  }

  sparseAttention(q: SparseAttentionQuery): number {
    return this.families ? this.families.sparseAttention(q) : this.fb().sparseAttention(q);
  }

  hyperConnection(q: HyperConnectionQuery): number {
    return this.families ? this.families.hyperConnection(q) : this.fb().hyperConnection(q);
  }

  quantize(q: QuantizeQuery): number {
    return this.families ? this.families.quantize(q) : this.fb().quantize(q);
  }

  private fb(): PerfSource {
    if (!this.fallback) throw new Error(`no table and no fallback in ${this.info.dir ?? this.info.system}`);
    return this.fallback;
  }
}
