// The search over both serving modes with an injected inference model (pure and synchronous).
import type { EngineContext } from '../engine/types.js';
import type { ModeResult, SearchResult, SearchSpec } from './types.js';
import type { SearchEngine } from './port.js';
import { searchAgg } from './agg.js';
import { searchDisagg } from './disagg.js';
import { verdictOf } from './rank.js';
import { speculationDescription } from '../engine/speculation.js';

/** "calibrated on vllm 0.14.0" (+ " + user calibration <file>" when a correction profile is applied). */
export function calibrationText(ctx: EngineContext): string {
  const base = ctx.perf.info.calibratedOn || `${ctx.perf.info.kind} tables for ${ctx.backend} ${ctx.version}`;
  return ctx.correction ? `${base} + user calibration ${ctx.correction.source}` : base;
}

export function runSearchWith(engine: SearchEngine, ctx: EngineContext, spec: SearchSpec): SearchResult {
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const agg: ModeResult | undefined = spec.modes.includes('agg') ? searchAgg(engine, ctx, spec) : undefined;
  const disagg: ModeResult | undefined = spec.modes.includes('disagg') ? searchDisagg(engine, ctx, spec) : undefined;
  return {
    inputs: {
      model: ctx.model.id,
      system: ctx.system.name,
      decodeSystem: ctx.decodeSystem?.name,
      backend: ctx.backend,
      version: ctx.version,
      totalGpus: spec.totalGpus,
      workload: ctx.workload,
      sla: spec.sla,
      calibratedOn: calibrationText(ctx),
      topN: spec.topN,
      ...(ctx.speculation && ctx.speculation.draft > 0 && { speculation: speculationDescription(ctx.speculation) }),
      ...(engine.bandBasis && { bandBasis: { agg: engine.bandBasis(ctx, 'agg'), disagg: engine.bandBasis(ctx, 'disagg') } }),
    },
    agg,
    disagg,
    verdict: verdictOf(agg, disagg),
    elapsedMs: performance.now() - started,
    cpuMs: cpuMsSince(cpu0),
  };
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}
