// `support`: for each backend and version of a system, can we model this model, do its weights fit on one
// node, and (given a budget and SLA) does any layout meet the targets. Context loading and the search are
// passed in so the check is testable with fakes and does not depend on the CLI.
import { familyRule, modelRefusal } from '../engine/index.js';
import type { EngineContext } from '../engine/types.js';
import type { Backend, Sla, SystemSpec } from '../inputs/types.js';
import { BACKENDS } from '../inputs/types.js';
import { InferplanError, NoFeasibleError } from '../util/errors.js';
import { smallestLayout, MAX_INSTANCE_GPUS, MIN_SEQUENCES, type GenerateEngine } from './generate.js';
import { explain, noFeasibleMessage } from './explain.js';
import type { Mode, SearchResult, SearchSpec } from './types.js';

export interface SupportFit {
  /** Whether some layout within one node holds the weights with KV room for MIN_SEQUENCES sequences. */
  fitsOneNode: boolean;
  /** The smallest such layout (possibly multi-node), when one exists up to MAX_INSTANCE_GPUS. */
  parallel?: string;
  gpus?: number;
  /** Weights summed over that layout's GPUs (parts replicated on every GPU count once per GPU). */
  weightsGiB?: number;
  reason?: string;
}

export interface SupportSla {
  met: boolean;
  mode?: Mode;
  parallel?: string;
  tokPerSPerGpu?: number;
  tokPerSPerUser?: number;
  ttftMs?: number;
  tpotMs?: number;
  /** What removed the candidates, or why the search could not run. */
  reason?: string;
}

export interface SupportRow {
  backend: Backend;
  version: string;
  isDefault: boolean;
  /** Whether we can model this architecture with this engine version. */
  modelled: boolean;
  reason?: string;
  fit?: SupportFit;
  sla?: SupportSla;
  /** Caveats that do not stop planning (e.g. a weight format without native tensor cores on this GPU). */
  notes?: string[];
}

export interface SupportReport {
  model: string;
  architecture?: string;
  family?: string;
  system: string;
  rows: SupportRow[];
  /** At least one backend/version can model it. */
  supported: boolean;
  /** With a budget and SLA: at least one backend/version has a layout meeting it. */
  slaMet?: boolean;
  budget?: { totalGpus: number; sla: Sla };
}

export interface SupportDeps {
  engine: GenerateEngine;
  /** Build the engine context for one backend and version; throws UnsupportedError when it cannot be modelled. */
  loadContext(backend: Backend, version: string): Promise<EngineContext>;
  /** The search; may return a result whose verdict is 'none', or throw NoFeasibleError. */
  search?(ctx: EngineContext, spec: SearchSpec): SearchResult;
}

export interface SupportRequest {
  modelId: string;
  system: SystemSpec;
  /** Only this backend; default every backend the system lists. */
  backend?: Backend;
  /** Only this version; default every version listed for the backend. */
  version?: string;
  budget?: { totalGpus: number; sla: Sla };
}

/** Tensor-core family a weight format's math needs natively (weight-only formats compute in 16 bit). */
const NATIVE: Partial<Record<string, 'fp8' | 'nvfp4'>> = { fp8: 'fp8', fp8_block: 'fp8', nvfp4: 'nvfp4', mxfp4: 'nvfp4' };

/** Weight formats of this context that the GPU has no native tensor cores for. */
export function dtypeNotes(ctx: EngineContext): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const d of [ctx.gemmDtype, ctx.moeDtype]) {
    const need = NATIVE[d];
    if (!need || seen.has(d) || ctx.system.gpu.tflops[need] !== undefined) continue;
    seen.add(d);
    out.push(`${ctx.system.gpu.name} has no native ${need} tensor cores: ${d} weights are timed at the fastest format it has; check that ${ctx.backend} runs ${d} checkpoints on this GPU`);
  }
  return out;
}

function fitOf(deps: SupportDeps, ctx: EngineContext): SupportFit {
  try {
    const s = smallestLayout(deps.engine, ctx, MAX_INSTANCE_GPUS);
    const gpus = s.trials[s.trials.length - 1]?.gpus ?? 0;
    return {
      fitsOneNode: gpus <= ctx.system.gpusPerNode,
      parallel: s.trials[s.trials.length - 1]?.parallel,
      gpus,
      weightsGiB: s.memory.weightsGiB * gpus,
    };
  } catch (err) {
    if (err instanceof NoFeasibleError) return { fitsOneNode: false, reason: err.message };
    throw err;
  }
}

function slaOf(deps: SupportDeps, ctx: EngineContext, budget: { totalGpus: number; sla: Sla }): SupportSla {
  if (!deps.search) return { met: false, reason: 'no search available' };
  let result: SearchResult;
  try {
    result = deps.search(ctx, { totalGpus: budget.totalGpus, sla: budget.sla, topN: 1, modes: ['agg', 'disagg'] });
  } catch (err) {
    if (err instanceof InferplanError && err.exitCode !== 1) return { met: false, reason: err.message.split('\n')[0] };
    throw err;
  }
  const winner = result.verdict.winner;
  const best = winner === 'none' ? undefined : result[winner]?.top.find((c) => c.meetsSla !== false);
  if (winner === 'none' || !best) return { met: false, reason: result.agg || result.disagg ? noFeasibleMessage(explain(result)) : result.verdict.text };
  const m = best.estimate.metrics;
  return {
    met: true,
    mode: winner,
    parallel: best.parallel,
    tokPerSPerGpu: best.clusterTokPerSPerGpu,
    tokPerSPerUser: m.tokPerSPerUser,
    ttftMs: m.ttftMs,
    tpotMs: m.tpotMs,
  };
}

/** Check every backend/version pair. Errors other than "unsupported"/"bad input" propagate. */
export async function checkSupport(deps: SupportDeps, req: SupportRequest): Promise<SupportReport> {
  const backends = req.backend ? [req.backend] : BACKENDS.filter((b) => req.system.backends[b]);
  const rows: SupportRow[] = [];
  let architecture: string | undefined;
  let family: string | undefined;
  for (const backend of backends) {
    const support = req.system.backends[backend];
    if (!support) {
      rows.push({ backend, version: '-', isDefault: false, modelled: false, reason: `${req.system.name} lists no ${backend} versions` });
      continue;
    }
    const versions = req.version ? [req.version] : support.versions;
    for (const version of versions) {
      const row: SupportRow = { backend, version, isDefault: version === support.default, modelled: false };
      rows.push(row);
      let ctx: EngineContext;
      try {
        ctx = await deps.loadContext(backend, version);
      } catch (err) {
        if (err instanceof InferplanError && (err.exitCode === 4 || err.exitCode === 2)) {
          row.reason = err.message.split('\n')[0];
          continue;
        }
        throw err;
      }
      architecture ??= ctx.model.architecture;
      family ??= ctx.model.family;
      // A model the engine cannot price, or a family this release or GPU does not serve (src/engine/rules.ts).
      const refused = modelRefusal(ctx.model) ?? familyRule(ctx);
      if (refused) {
        row.reason = refused;
        continue;
      }
      row.modelled = true;
      const notes = dtypeNotes(ctx);
      if (notes.length) row.notes = notes;
      row.fit = fitOf(deps, ctx);
      if (req.budget) row.sla = slaOf(deps, ctx, req.budget);
    }
  }
  const supported = rows.some((r) => r.modelled);
  return {
    model: req.modelId,
    architecture,
    family,
    system: req.system.name,
    rows,
    supported,
    slaMet: req.budget ? rows.some((r) => r.sla?.met) : undefined,
    budget: req.budget,
  };
}

export { MIN_SEQUENCES };
