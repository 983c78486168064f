// Aggregated serving: every layout x token budget x batch size within the budget, replicated over it.
import type { EngineContext } from '../engine/types.js';
import type { ModeResult, SearchSpec } from './types.js';
import { isRefusal, type SearchEngine } from './port.js';
import { batchGrid, enumerateLayouts, gpusOf, layoutName, tokenBudgets } from './candidates.js';
import { ModeCollector } from './collect.js';
import { walkBatches } from './walk.js';


export function searchAgg(engine: SearchEngine, ctx: EngineContext, spec: SearchSpec): ModeResult {
  const col = new ModeCollector('agg', spec.sla, spec.totalGpus);
  const moe = ctx.model.moe !== undefined;
  const budgets = tokenBudgets(engine.defaultMaxNumTokens(ctx), ctx.workload.isl, spec.restrict?.maxNumTokens);
  const fixedBatches = spec.restrict?.batch;
  for (const layout of enumerateLayouts(ctx, spec.totalGpus, spec.restrict)) {
    const name = layoutName(layout, moe);
    const gpus = gpusOf(layout);
    const rule = engine.layoutRule(ctx, layout, 'agg');
    if (rule) {
      col.refuse('engine', name, rule, gpus, budgets.length);
      continue;
    }
    const replicas = Math.floor(spec.totalGpus / gpus);
    for (const maxNumTokens of budgets) {
      col.engineCalls++;
      const mem = engine.memoryFor(ctx, layout, maxNumTokens, 'agg');
      if (isRefusal(mem)) {
        col.refuse(mem.constraint, name, mem.reason, gpus);
        continue;
      }
      const grid = batchGrid(mem.maxSequences, fixedBatches, layout.dp);
      if (grid.length === 0) {
        col.refuse('memory', name, `no sequence of ${ctx.workload.isl}+${ctx.workload.osl} tokens fits in the KV cache`, gpus);
        continue;
      }
      walkBatches(
        grid,
        (batchSize) => {
          col.engineCalls++;
          const est = engine.estimateAgg(ctx, { ...layout, batchSize, maxNumTokens }, { replicas });
          if (isRefusal(est)) {
            col.refuse(est.constraint, name, est.reason, gpus);
            return null;
          }
          const c = col.add(est, name, replicas, gpus);
          return { value: est.metrics.tokPerSPerGpu, meetsSla: c.meetsSla === true, margin: col.margin(c) };
        },
        fixedBatches !== undefined,
        layout.dp,
      );
    }
  }
  return col.finish(spec.topN, spec.keepFeasible);
}
