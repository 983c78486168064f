// Public API of the search: enumerate, evaluate, filter by SLA, rank, frontier, verdict.
import type { EngineContext } from '../engine/types.js';
import type { SearchResult, SearchSpec } from './types.js';
import { realEngine } from './engine-port.js';
import { runSearchWith } from './search.js';
import { recommendWith, type RecommendResult, type RecommendSpec } from './recommend.js';

export type * from './types.js';
export type { SearchEngine, Role } from './port.js';
export { runSearchWith } from './search.js';
export { paretoFrontier, topPerLayout, verdictOf, slaBreaks, compareCandidates } from './rank.js';
export { layoutName, batchGrid, enumerateLayouts } from './candidates.js';

/** Search both modes (or those in spec.modes) with the inference model; pure and synchronous. */
export function runSearch(ctx: EngineContext, spec: SearchSpec): SearchResult {
  return runSearchWith(realEngine, ctx, spec);
}

export { recommendWith, matchLoad, compareRecommendations, type LoadTarget, type Recommendation, type RecommendResult, type RecommendSpec } from './recommend.js';
export { searchToJson, candidateJson, type SearchJson, type CandidateJson } from './json.js';
export { explain, hasFeasible, noFeasibleMessage, type NoFeasibleDetail } from './explain.js';

/** The fewest GPUs and the layout that serve a target load under the SLA. */
export function recommend(ctx: EngineContext, spec: RecommendSpec): RecommendResult {
  return recommendWith(realEngine, ctx, spec);
}
