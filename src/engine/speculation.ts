// Speculative decoding (multi-token prediction with the checkpoint's own MTP layers, or an EAGLE-3 draft model),
// in agg replicas and in disagg decode pools. An estimate runs it only when its context says so
// (`ctx.speculation`), which only the user's --nextn / --speculative or a row's `nextn` columns set: nothing is
// inferred from where a measurement came from. docs/engine.md "Speculative decoding" derives the figures.
import type { ModelSpec } from '../inputs/types.js';
import type { PerfSource } from '../perf/types.js';
import { InputError } from '../util/errors.js';
import { decodeStepMs, hostOverheadMs } from './steps.js';
import type { EngineContext, ParallelLayout, Speculation } from './types.js';

export type { Speculation, SpeculativeMethod } from './types.js';

/** Draft depths `--nextn auto` searches (the published recipes use 1 to 3). */
export const AUTO_DEPTHS = [0, 1, 2, 3] as const;
/** Draft depth of the TRT-LLM and SGLang DeepSeek serving recipes (nextn 3 / speculative-num-steps 3). */
export const RECIPE_MTP_DEPTH = 3;
/** Deepest draft accepted as input (the published recipes use 1 to 3; deeper drafts are accepted up to this). */
export const MAX_NEXTN = 8;

/**
 * Default acceptance of each draft position (the chance it is accepted given the ones before it were), with the
 * published figure it comes from. Used when the user gives no --nextn-accept-rates, and labelled an assumption.
 */
export interface AcceptanceDefault {
  rates: readonly number[];
  source: string;
}

/**
 * DeepSeek-V3 report (arXiv 2412.19437, section 5.4.3): the first MTP token is accepted 85-90% of the time (the
 * lower end here). LMSYS "Accelerating SGLang with Multiple Token Prediction" (2025-07-17): DeepSeek-V3 with MTP
 * reaches an average acceptance length of 2.44 tokens per step; taken at the recipes' depth 3, 0.85, 0.50, 0.40
 * give 1 + 0.85 + 0.425 + 0.17 = 2.445.
 */
const DEEPSEEK_MTP: AcceptanceDefault = {
  rates: [0.85, 0.5, 0.4],
  source: 'DeepSeek-V3 report 5.4.3 (first position 85-90%) and the LMSYS MTP post of 2025-07-17 (average acceptance length 2.44, taken at depth 3)',
};

/**
 * EAGLE-3 paper (arXiv 2503.01840, table 1): LLaMA-3.1-8B chat accepts about 6 tokens per step with a depth-8
 * tree; a chain (topk 1, as deployed here) accepts less. SGLang's speculative-decoding docs measure 2.36x
 * throughput with EAGLE-3 on LLaMA-3.1-8B (MT-Bench, one H100), which needs well over 2 tokens per step.
 * 0.8, 0.7, 0.6 (0.5 beyond) give 2.90 tokens per step at depth 3: a chain's share of the tree's figure.
 */
const EAGLE3_CHAIN: AcceptanceDefault = {
  rates: [0.8, 0.7, 0.6, 0.5],
  source: 'EAGLE-3 paper (arXiv 2503.01840) and the SGLang speculative-decoding docs (LLaMA-3.1-8B, MT-Bench), as a topk-1 chain',
};

/** Families whose MTP figures are published; other MTP checkpoints take DeepSeek's, said so in the source. */
const MTP_DEFAULTS: Record<string, AcceptanceDefault> = { deepseek_v3: DEEPSEEK_MTP };

/**
 * Published EAGLE-3 drafts of bundled checkpoints (the draft's Hub id goes into the deployment). Both are the
 * EAGLE authors' own (github.com/SafeAILab/EAGLE, "EAGLE-3 models").
 */
export const EAGLE3_DRAFTS: Record<string, string> = {
  'meta-llama/Llama-3.1-8B': 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B',
  'meta-llama/Llama-3.1-8B-Instruct': 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B',
  'meta-llama/Llama-3.3-70B-Instruct': 'yuhuili/EAGLE3-LLaMA3.3-Instruct-70B',
};

/** Whether a model can speculate with `method`: MTP layers in the checkpoint, or a known EAGLE-3 draft. */
export function canSpeculate(model: ModelSpec, method: 'mtp' | 'eagle3'): boolean {
  return method === 'mtp' ? (model.mtpLayers ?? 0) > 0 : EAGLE3_DRAFTS[model.id] !== undefined;
}

/** The method a model speculates with when the user names none: its own MTP layers first. */
export function defaultMethod(model: ModelSpec): 'mtp' | 'eagle3' | undefined {
  if (canSpeculate(model, 'mtp')) return 'mtp';
  if (canSpeculate(model, 'eagle3')) return 'eagle3';
  return undefined;
}

/** Default acceptance rates of a model and method, `depth` of them (the last published one repeats). */
export function defaultAcceptance(model: ModelSpec, method: 'mtp' | 'eagle3', depth: number): { rates: number[]; source: string } {
  const d = method === 'eagle3' ? EAGLE3_CHAIN : MTP_DEFAULTS[model.family];
  const base = d ?? DEEPSEEK_MTP;
  const rates = Array.from({ length: depth }, (_, i) => base.rates[Math.min(i, base.rates.length - 1)]!);
  const source = d ? base.source : `no published figure for ${model.family}; DeepSeek's: ${base.source}`;
  return { rates, source };
}

/** What the user asked for: --nextn, --nextn-accept-rates, --speculative (or the same keys of an exp file). */
export interface SpeculationRequest {
  /** Draft tokens per step; 'auto' searches AUTO_DEPTHS (default only); undefined: from the other two. */
  nextn?: number | 'auto';
  acceptRates?: number[];
  method?: 'mtp' | 'eagle3' | 'off';
}

/**
 * A `nextn_accept_rates` cell or --nextn-accept-rates value: blank, or rates in (0, 1] separated by commas, semicolons or spaces, optionally
 * in brackets ("0.85,0.5,0.4", "[0.85; 0.5]"). Undefined when malformed.
 */
export function parseAcceptRates(cell: string): number[] | undefined {
  const t = cell.trim().replace(/^\[|\]$/g, '').trim();
  if (t === '') return [];
  const parts = t.split(/[\s,;]+/).filter((p) => p !== '');
  const rates = parts.map((p) => (/^[+]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(p) ? Number(p) : NaN));
  return rates.every((a) => Number.isFinite(a) && a > 0 && a <= 1) ? rates : undefined;
}

/** Expected tokens a step emits: 1 + a1 + a1 a2 + ... (position k counts only when the k-1 before it were accepted). */
export function tokensPerStep(acceptRates: readonly number[]): number {
  let tokens = 1;
  let reach = 1;
  for (const a of acceptRates) {
    reach *= a;
    tokens += reach;
  }
  return tokens;
}

/** Expected draft tokens accepted per step (tokensPerStep - 1). */
export function acceptedPerStep(spec: Pick<Speculation, 'acceptRates'>): number {
  return tokensPerStep(spec.acceptRates) - 1;
}

/** "MTP nextn 3 (accept 0.85/0.50/0.40: 2.45 tokens/step, assumed)" for reports; "off" without speculation. */
export function speculationLabel(s: Speculation | undefined): string {
  if (!s || s.draft <= 0) return 'off';
  const rates = s.acceptRates.map((a) => a.toFixed(2)).join('/');
  return `${s.method === 'eagle3' ? 'EAGLE-3' : 'MTP'} nextn ${s.draft} (accept ${rates}: ${tokensPerStep(s.acceptRates).toFixed(2)} tokens/step${s.assumed ? ', assumed' : ''})`;
}

/** The label with where the rates come from, for report headers: "... (assumed: DeepSeek-V3 report ...)". */
export function speculationDescription(s: Speculation): string {
  return `${speculationLabel(s)}; acceptance ${s.assumed ? `assumed from ${s.source}` : 'given'}`;
}

/** " +mtp3" after a candidate's parallel layout in tables, CSVs and charts; "" without speculation. */
export function speculationSuffix(s: Speculation | undefined): string {
  return s && s.draft > 0 ? ` +${speculationTag(s)}` : '';
}

/** Short form for table cells and CSV: "mtp3", "eagle3-2", or "off". */
export function speculationTag(s: Speculation | undefined): string {
  if (!s || s.draft <= 0) return 'off';
  return s.method === 'eagle3' ? `eagle3-${s.draft}` : `mtp${s.draft}`;
}

function checkRates(rates: number[], what: string): void {
  for (const a of rates) {
    if (!(Number.isFinite(a) && a > 0 && a <= 1)) throw new InputError(`${what}: ${a} is not an acceptance rate; accepted: numbers in (0, 1], one per draft position`);
  }
}

/**
 * The speculation a context runs for a request at one depth, or undefined for none. Throws InputError (exit 2)
 * for a method the model cannot run (no MTP layers, no known EAGLE-3 draft) or rates that do not fit the depth.
 */
export function resolveSpeculation(model: ModelSpec, req: SpeculationRequest, depth?: number): Speculation | undefined {
  const nextn = depth ?? (req.nextn === 'auto' ? undefined : req.nextn);
  if (req.method === 'off') {
    if ((nextn ?? 0) > 0) throw new InputError(`--nextn ${nextn} asks for draft tokens but --speculative is off; drop one of them`);
    return undefined;
  }
  const draft = nextn ?? req.acceptRates?.length ?? (req.method ? RECIPE_MTP_DEPTH : 0);
  if (draft <= 0) return undefined;
  if (!Number.isInteger(draft) || draft > MAX_NEXTN) throw new InputError(`--nextn ${draft}: accepted: 0 to ${MAX_NEXTN} draft tokens, or auto`);
  const method = req.method ?? defaultMethod(model);
  if (!method || !canSpeculate(model, method)) {
    const known = Object.keys(EAGLE3_DRAFTS).join(', ');
    const why = method === 'eagle3'
      ? `no EAGLE-3 draft is known for ${model.id} (known: ${known})`
      : `${model.id} ships no MTP layers (num_nextn_predict_layers / mtp_num_hidden_layers)${method ? '' : ` and no EAGLE-3 draft is known for it (known: ${known})`}`;
    throw new InputError(`--nextn ${draft}: ${why}; use --nextn 0 or --speculative off`);
  }
  let rates: number[];
  let source: string;
  if (req.acceptRates) {
    checkRates(req.acceptRates, '--nextn-accept-rates');
    if (req.acceptRates.length < draft) {
      throw new InputError(`--nextn-accept-rates gives ${req.acceptRates.length} rate(s) for --nextn ${draft}; accepted: at least one per draft position`);
    }
    rates = req.acceptRates.slice(0, draft);
    source = 'given';
  } else {
    ({ rates, source } = defaultAcceptance(model, method, draft));
  }
  const spec: Speculation = { method, draft, acceptRates: rates, assumed: !req.acceptRates, source };
  if (method === 'eagle3') spec.draftModel = EAGLE3_DRAFTS[model.id];
  return spec;
}

/** The depths `--nextn auto` tries for a model: 0 always, 1-3 when it can speculate (limited by given rates). */
export function autoDepths(model: ModelSpec, req: SpeculationRequest): number[] {
  if (req.method === 'off') return [0];
  const method = req.method ?? defaultMethod(model);
  if (!method || !canSpeculate(model, method)) return [0];
  return AUTO_DEPTHS.filter((d) => req.acceptRates === undefined || d <= req.acceptRates.length);
}

/** `--nextn auto`: one context per depth the model can run (the plain one first), each with its speculation. */
export function depthContexts(ctx: EngineContext, req: SpeculationRequest): EngineContext[] {
  return autoDepths(ctx.model, req).map((depth) => {
    const speculation = depth > 0 ? resolveSpeculation(ctx.model, req, depth) : undefined;
    return speculation ? { ...ctx, speculation } : ctx;
  });
}

/** The report line of a `--nextn auto` search: the depths tried and where the acceptance rates come from. */
export function autoDescription(contexts: EngineContext[]): string {
  const depths = contexts.map((c) => c.speculation?.draft ?? 0);
  const deepest = contexts.at(-1)?.speculation;
  if (!deepest) return `--nextn auto: ${contexts[0]?.model.id} has no MTP layers and no known draft; searched without speculative decoding`;
  const rates = deepest.assumed ? `assumed from ${deepest.source}` : `given: ${deepest.acceptRates.join(', ')}`;
  return `--nextn auto: draft depths ${depths.join(', ')} searched (${deepest.method === 'eagle3' ? 'EAGLE-3' : 'MTP'}; acceptance ${rates})`;
}

/** Speculative decoding of a context: draft tokens verified per step and tokens emitted per step. */
export function speculationOf(ctx: EngineContext): { draft: number; perStep: number } {
  const s = ctx.speculation;
  if (!s || s.draft <= 0) return { draft: 0, perStep: 1 };
  return { draft: s.draft, perStep: tokensPerStep(s.acceptRates) };
}

/**
 * Draft modules that run over every prompt in prefill (they build their own KV and the first draft): the
 * checkpoint's MTP layers (TRT-LLM and SGLang reuse them for deeper drafts), or the one EAGLE-3 layer.
 */
export function draftLayersOf(ctx: Pick<EngineContext, 'model' | 'speculation'>): number {
  const s = ctx.speculation;
  if (!s || s.draft <= 0) return 0;
  return s.method === 'eagle3' ? 1 : Math.min(s.draft, Math.max(1, ctx.model.mtpLayers ?? 1));
}

/** Prefill work with the draft layers over the prompt, relative to the main model's (1 without speculation). */
export function draftPrefillFactor(ctx: Pick<EngineContext, 'model' | 'speculation'>): number {
  return 1 + draftLayersOf(ctx) / Math.max(1, ctx.model.numLayers);
}

/** One decode step's parts with speculation: verifying running x (1 + draft) tokens, drafting `draft` times, host. */
export interface SpeculativeStep {
  verifyMs: number;
  draftMs: number;
  hostMs: number;
}

/**
 * One decode step over `running` sequences at KV length `kv`, in parts, ms. The main model verifies
 * running x (1 + draft) tokens in one pass, each sequence's tokens over one read of its KV cache; the draft layer
 * runs `draft` times, each priced as one layer of that verify pass (the draft layer is one decoder layer, and the
 * first draft step re-reads the accepted tokens).
 */
export function speculativeStepParts(ctx: EngineContext, layout: ParallelLayout, running: number, kv: number, perf?: PerfSource): SpeculativeStep {
  const hostMs = hostOverheadMs(ctx, layout, running);
  const draft = speculationOf(ctx).draft;
  if (draft === 0) return { verifyMs: decodeStepMs(ctx, layout, running, kv, perf), draftMs: 0, hostMs };
  const verifyMs = decodeStepMs(ctx, layout, running, kv, perf, 1 + draft);
  return { verifyMs, draftMs: (verifyMs * draft) / ctx.model.numLayers, hostMs };
}

/** One decode step over `running` sequences at KV length `kv`, host time included, ms. */
export function speculativeDecodeStepMs(ctx: EngineContext, layout: ParallelLayout, running: number, kv: number, perf?: PerfSource): number {
  const p = speculativeStepParts(ctx, layout, running, kv, perf);
  return p.verifyMs + p.draftMs + p.hostMs;
}

/** Time per output token of a decode step (speculativeDecodeStepMs over the tokens it emits per sequence), ms. */
export function decodeTpotMs(ctx: EngineContext, layout: ParallelLayout, running: number, kv: number, perf?: PerfSource): number {
  return speculativeDecodeStepMs(ctx, layout, running, kv, perf) / speculationOf(ctx).perStep;
}
