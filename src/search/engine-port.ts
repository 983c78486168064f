// The real inference model behind the search's port.
import * as engine from '../engine/index.js';
import type { EngineContext } from '../engine/types.js';
import type { SearchEngine } from './port.js';

export const realEngine: SearchEngine = {
  estimateAgg: engine.estimateAgg,
  estimateDisagg: engine.estimateDisagg,
  memoryFor: engine.memoryFor,
  layoutRule: engine.layoutRule,
  disaggRule: engine.disaggRule,
  defaultMaxNumTokens: (ctx: EngineContext) => engine.profileOf(ctx).maxNumTokens,
  bandBasis: engine.bandBasisFor,
};
