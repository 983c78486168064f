// Roofline source: speed of light divided by a constant efficiency plus a launch overhead per op.
// Used when no table covers a query and as the reference shape of the synthesized model.
import type { SystemSpec } from '../inputs/types.js';
import * as sol from './sol.js';
import { FamilyPricer } from './families.js';
import type {
  Collective, CommQuery, ContextAttentionQuery, ElementwiseQuery, GemmQuery, GenerationAttentionQuery, HyperConnectionQuery,
  LinearAttentionQuery, MlaQuery, MoeQuery, PerfSource, PerfSourceInfo, QuantizeQuery, SparseAttentionQuery,
} from './types.js';

/** Constant efficiencies and overheads (ms) of the plain roofline. */
export const ROOFLINE = {
  gemm: { eff: 0.75, fixed: 0.006 },
  contextAttention: { eff: 0.55, fixed: 0.01 },
  generationAttention: { eff: 0.7, fixed: 0.008 },
  allReduce: { eff: 0.7, fixed: 0.008 },
  nccl: { eff: 0.75, fixed: 0.015 },
  moe: { eff: 0.45, fixed: 0.02 },
  mla: { eff: 0.5, fixed: 0.03 },
  elementwise: { eff: 0.8, fixed: 0.003 },
  p2pFixed: 0.01,
} as const;

export class RooflinePerfSource implements PerfSource {
  readonly peaks: sol.Peaks;
  /** Family ops at the roofline's constant efficiencies (no calibration). */
  private readonly families: FamilyPricer;
  constructor(readonly system: SystemSpec, readonly info: PerfSourceInfo) {
    this.peaks = sol.peaksOf(system);
    this.families = new FamilyPricer(this.peaks, info.backend, info.version);
  }
  gemm(q: GemmQuery): number {
    return sol.gemmSol(this.peaks, q.dtype, q.m, q.n, q.k) / ROOFLINE.gemm.eff + ROOFLINE.gemm.fixed;
  }
  contextAttention(q: ContextAttentionQuery): number {
    const s = sol.contextAttentionSol(this.peaks, q.batch, q.seq, q.prefix ?? 0, q.heads, q.kvHeads, q.headDim, q.dtype, q.kvDtype, q.window);
    return s / ROOFLINE.contextAttention.eff + ROOFLINE.contextAttention.fixed;
  }
  generationAttention(q: GenerationAttentionQuery): number {
    const s = sol.generationAttentionSol(this.peaks, q.batch, q.kvLen, q.heads, q.kvHeads, q.headDim, q.kvDtype, q.window);
    return s / ROOFLINE.generationAttention.eff + ROOFLINE.generationAttention.fixed;
  }
  allReduce(q: CommQuery): number {
    if (q.gpus <= 1) return 0;
    return sol.collectiveSol(this.peaks, 'all_reduce', q.dtype, q.gpus, q.elements, q.crossNode) / ROOFLINE.allReduce.eff + ROOFLINE.allReduce.fixed;
  }
  nccl(collective: Collective, q: CommQuery): number {
    if (q.gpus <= 1) return 0;
    return sol.collectiveSol(this.peaks, collective, q.dtype, q.gpus, q.elements, q.crossNode) / ROOFLINE.nccl.eff + ROOFLINE.nccl.fixed;
  }
  moe(q: MoeQuery): number {
    const s = sol.moeSol(this.peaks, q.dtype, q.tokens, q.hidden, q.inter, q.topk, q.experts, q.moeTp, q.moeEp, q.distribution);
    return s / ROOFLINE.moe.eff + ROOFLINE.moe.fixed;
  }
  mla(q: MlaQuery): number {
    const s = sol.mlaSol(this.peaks, q.phase, q.batch, q.seq, q.heads, q.kvLoraRank, q.qkRopeHeadDim, q.qkNopeHeadDim, q.vHeadDim, q.qLoraRank, q.hidden, q.dtype, q.kvDtype);
    return s / ROOFLINE.mla.eff + ROOFLINE.mla.fixed;
  }
  elementwise(q: ElementwiseQuery): number {
    return sol.memSol(this.peaks, q.bytes) / ROOFLINE.elementwise.eff + ROOFLINE.elementwise.fixed;
  }
  p2p(bytes: number, crossNode: boolean): number {
    return bytes / (crossNode ? this.peaks.inter : this.peaks.intra) + ROOFLINE.p2pFixed;
  }
  linearAttention(q: LinearAttentionQuery): number {
    return this.families.linearAttention(q);
  }
  sparseAttention(q: SparseAttentionQuery): number {
    return this.families.sparseAttention(q);
  }
  hyperConnection(q: HyperConnectionQuery): number {
    return this.families.hyperConnection(q);
  }
  quantize(q: QuantizeQuery): number {
    return this.families.quantize(q);
  }
}
