// Layouts the engines cannot run, with the reason (Refusal constraint 'engine').
import { profileOf } from './backends.js';
import { engineRelease } from '../inputs/dynamo-runtime.js';
import { countKinds, LAYER_KIND_NAMES } from '../inputs/layers.js';
import { onLineBefore } from '../util/versions.js';
import type { Backend, LayerKind } from '../inputs/types.js';
import type { DisaggConfig, EngineContext, ParallelLayout, Speculation } from './types.js';

export function gpusOf(layout: ParallelLayout): number {
  return layout.tp * layout.pp * layout.dp;
}

function isCount(v: number): boolean {
  return Number.isInteger(v) && v >= 1;
}

/** Why this engine cannot run the layout for the role, or null when it can. */
export function layoutRule(ctx: EngineContext, layout: ParallelLayout, role: 'agg' | 'prefill' | 'decode'): string | null {
  const m = ctx.model;
  const { tp, pp, dp, moeTp, moeEp } = layout;
  if (!(isCount(tp) && isCount(pp) && isCount(dp) && isCount(moeTp) && isCount(moeEp))) {
    return `tp, pp, dp, moe_tp and moe_ep must be positive integers (got ${tp}, ${pp}, ${dp}, ${moeTp}, ${moeEp})`;
  }
  // MLA runs uneven head splits with padded heads (measured at tp 72); more GPUs than heads do not run.
  if (tp > m.numHeads) return `tp ${tp} exceeds the ${m.numHeads} attention heads of ${m.id}`;
  // Sharded query heads split evenly, and KV heads split evenly or are replicated over whole groups of ranks:
  // vLLM, SGLang and TRT-LLM check both at start-up.
  if (!m.mla && m.numHeads % tp !== 0) return `tp ${tp} does not divide the ${m.numHeads} attention heads of ${m.id}`;
  if (!m.mla && m.numKvHeads % tp !== 0 && tp % m.numKvHeads !== 0) {
    return `tp ${tp} and the ${m.numKvHeads} KV heads of ${m.id} do not divide one another`;
  }
  if (pp > m.numLayers) return `pp ${pp} exceeds the ${m.numLayers} layers of ${m.id}`;
  if (m.moe) {
    if (moeTp * moeEp !== tp * dp) return `moe_tp x moe_ep (${moeTp}x${moeEp}) must equal tp x dp (${tp}x${dp})`;
    // An expert-parallel width that does not divide the experts runs with redundant expert slots (EPLB),
    // priced as ceil(experts / moe_ep) experts per GPU; one wider than the experts leaves GPUs idle.
    if (moeEp > m.moe.numExperts) return `moe_ep ${moeEp} exceeds the ${m.moe.numExperts} experts of ${m.id}`;
  } else {
    if (dp > 1) return `attention data parallelism (dp ${dp}) applies to MoE models only; use more replicas for ${m.id}`;
    if (moeTp * moeEp !== 1 && moeTp * moeEp !== tp) return `moe_tp/moe_ep apply to MoE models only`;
  }
  void role;
  const family = familyRule(ctx);
  if (family) return family;
  const spec = speculationRule(ctx.backend, ctx.speculation, layout);
  if (spec) return spec;
  return expressRule(ctx, layout);
}

/**
 * Why the engine's flags cannot deploy the layout as priced, or null when they can: the one place that says
 * which (tp, pp, dp, moe_tp, moe_ep) each engine runs, read from its profile. The search enumerates only
 * layouts this accepts; `estimate`, `support` and the engine arguments meet the same answer.
 */
export function expressRule(ctx: EngineContext, layout: ParallelLayout): string | null {
  const { tp, pp, dp, moeTp, moeEp } = layout;
  const prof = profileOf(ctx);
  if (dp > 1 && !prof.tpWithAttentionDp && tp > 1) {
    return `${ctx.backend} runs attention data parallelism with attention tp 1 on every rank (enable_attention_dp over tensor_parallel_size ranks); tp ${tp} with dp ${dp} cannot be deployed, use tp 1 dp ${tp * dp}`;
  }
  if (dp > 1 && !prof.ppWithAttentionDp && pp > 1) return `${ctx.backend} does not combine pipeline parallelism with attention data parallelism`;
  if (ctx.model.moe && !prof.moeDpWithMoeTp && dp > 1 && moeTp > 1) {
    return `${ctx.backend} attention data parallelism (dp ${dp}) is offered with expert parallelism only (moe_ep = tp x dp = ${tp * dp}); no measured run prices its experts tensor parallel (moe_tp ${moeTp}) beside it`;
  }
  if (ctx.model.moe && prof.expertSplit === 'all_or_nothing' && moeTp > 1 && moeEp > 1) {
    const w = tp * dp;
    return `${ctx.backend} makes the experts expert parallel over all tp x dp = ${w} GPUs (--enable-expert-parallel: moe_tp 1, moe_ep ${w}) or tensor parallel over all of them (moe_tp ${w}, moe_ep 1); moe_tp ${moeTp} x moe_ep ${moeEp} cannot be deployed`;
  }
  return null;
}

/** Why this engine cannot run the disaggregated pair, or null when it can. */
export function disaggRule(ctx: EngineContext, config: DisaggConfig): string | null {
  const p = layoutRule(ctx, config.prefill, 'prefill');
  if (p) return `prefill: ${p}`;
  const d = layoutRule(ctx, config.decode, 'decode');
  if (d) return `decode: ${d}`;
  const prof = profileOf(ctx);
  // MLA caches one latent replicated over tp, so any tp pair can hand KV over. Sharded GQA heads must be
  // re-sliced page by page between different tp: SGLang does it, but its measured runs of such pairs decode
  // 5-25x slower (and the slicing path fails under load), so the pair is not offered.
  if (prof.disaggSameTp && !ctx.model.mla && config.prefill.tp !== config.decode.tp) {
    return `${ctx.backend} re-slices KV pages between different prefill and decode tp for GQA models only in a degraded mode (prefill tp ${config.prefill.tp}, decode tp ${config.decode.tp}); use the same tp`;
  }
  if (config.prefill.workers < 1 || config.decode.workers < 1) return 'disaggregated serving needs at least one prefill and one decode worker';
  return null;
}

/**
 * Why this engine cannot run the context's speculation on this layout, or null. vLLM's V1 engine and SGLang
 * refuse speculative decoding with pipeline parallelism in their argument checks; TRT-LLM's MTP recipes never
 * pair it with pp and no measured run prices it, so no engine is offered it. MTP with attention DP runs on all
 * three (the SGLang and TRT-LLM DeepSeek recipes run it; vLLM's data-parallel DeepSeek deployments too).
 */
export function speculationRule(backend: Backend, spec: Speculation | undefined, layout: Pick<ParallelLayout, 'pp'>): string | null {
  if (!spec || spec.draft <= 0) return null;
  const name = spec.method === 'eagle3' ? 'EAGLE-3' : 'MTP';
  if (layout.pp > 1) return `${backend} does not run speculative decoding (${name}) with pipeline parallelism (pp ${layout.pp}); use pp 1 or --nextn 0`;
  return null;
}

/**
 * Which engine releases and GPUs serve the hybrid and sparse layer kinds, each with its evidence. A rule names the
 * kind, the engine (any when absent), the first release that serves it, or the GPU capability it needs.
 */
interface FamilyRuleRow {
  kind: LayerKind;
  backend?: Backend;
  from?: string;
  /** The GPU needs fp8 tensor cores (Hopper or newer kernels). */
  fp8Gpu?: boolean;
  never?: boolean;
  why: string;
}

const FAMILY_RULES: readonly FamilyRuleRow[] = [
  { kind: 'gdn', backend: 'vllm', from: '0.16', why: 'vLLM 0.15 rejects the Qwen3.5 architectures (Qwen3_5*ForConditionalGeneration); 0.16 serves them' },
  { kind: 'dsa', fp8Gpu: true, why: 'the DSA indexer runs DeepGEMM fp8 kernels, built for Hopper and Blackwell only' },
  { kind: 'compressed', fp8Gpu: true, why: 'the DeepSeek-V4 indexer and compressed attention run DeepGEMM fp8 kernels, built for Hopper and Blackwell only' },
  { kind: 'kda', backend: 'trtllm', never: true, why: 'TRT-LLM has no Kimi-delta-attention (Kimi Linear) model' },
];

const familyRuleCache = new WeakMap<EngineContext, string | null>();

/** Why the engine release or GPU cannot serve one of the model's layer kinds, or null (once per context). */
export function familyRule(ctx: EngineContext): string | null {
  let why = familyRuleCache.get(ctx);
  if (why === undefined) familyRuleCache.set(ctx, (why = familyRuleOf(ctx)));
  return why;
}

function familyRuleOf(ctx: EngineContext): string | null {
  const kinds = countKinds(ctx.model);
  const release = engineRelease(ctx.backend, ctx.version);
  for (const r of FAMILY_RULES) {
    if (!kinds[r.kind] || (r.backend && r.backend !== ctx.backend)) continue;
    const name = `${ctx.model.id} (${LAYER_KIND_NAMES[r.kind]} layers)`;
    if (r.never) return `${ctx.backend} cannot serve ${name}: ${r.why}`;
    if (r.from && onLineBefore(release, r.from)) return `${ctx.backend} ${ctx.version} cannot serve ${name}: ${r.why}; use ${ctx.backend} ${r.from} or later`;
    if (r.fp8Gpu && !(ctx.system.gpu.tflops.fp8 ?? 0)) return `${ctx.system.name} cannot serve ${name}: ${r.why}`;
  }
  return null;
}
