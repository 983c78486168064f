// Answering a DynamoGraphDeploymentRequest: the system and engine release it names, and the search over
// disaggregated layouts its spec asks for (a load target sizes the deployment, else the GPU budget), ranked by
// its optimization type. `configure dgdr` reads the request and writes the DGD of the answer.
import type { Backend, SystemSpec } from '../inputs/types.js';
import { BACKENDS } from '../inputs/types.js';
import { loadSystem } from '../inputs/systems.js';
import { DYNAMO_RUNTIME_TABLE, engineRelease } from '../inputs/dynamo-runtime.js';
import type { DisaggEstimate, EngineContext } from '../engine/types.js';
import type { DgdrRequest } from '../output/planner-dgdr.js';
import { parseDynamoVersion } from '../output/images.js';
import { NoFeasibleError, UnsupportedError, InputError } from '../util/errors.js';
import { escapeControl } from '../util/text.js';
import { compareVersions } from '../util/versions.js';
import { explain, noFeasibleMessage, type NoFeasibleDetail } from './explain.js';
import { recommend, runSearch } from './index.js';
import { compareCandidates } from './rank.js';
import { gpusOf } from './port.js';
import type { RankedCandidate, SearchResult } from './types.js';

/** What an engine context is loaded from for one engine the request allows. */
export interface DgdrEngineInputs {
  hfId: string;
  system: string;
  backend: Backend;
  backendVersion?: string;
  isl: number;
  osl: number;
  prefix: number;
  ttft: number;
  tpot: number;
  requestLatency?: number;
}

/** GPU SKUs a v1beta1 DGDR may name (its hardware.gpuSku enum); those we have no data for exit 4, not 2. */
const DGDR_GPU_SKUS = ['gb200_sxm', 'gb10', 'b200_sxm', 'h200_sxm', 'h100_sxm', 'h100_pcie', 'a100_sxm', 'a100_pcie', 'a30', 'l40s', 'l40', 'l4', 'v100_sxm', 'v100_pcie', 't4', 'mi200', 'mi300'];

/** The system a request names: our name or alias, or a bare GPU name with the SXM suffix (H200 -> h200_sxm). */
export function systemOfRequest(name: string | undefined, flag: string | undefined): SystemSpec {
  const given = flag ?? name;
  if (given === undefined) {
    throw new InputError('the request names no GPU (v1beta1 spec.hardware.gpuSku, v1alpha1 profilingConfig.config.sweep.aicSystem or hardware.gpuType); pass --system');
  }
  const key = given.trim().toLowerCase().replace(/^nvidia[-_ ]/, '').replace(/[- ]/g, '_');
  for (const candidate of [key, `${key}_sxm`]) {
    try {
      return loadSystem(candidate);
    } catch {
      // try the next spelling
    }
  }
  if (DGDR_GPU_SKUS.includes(key)) throw new UnsupportedError(`GPU ${escapeControl(given)}: no performance data for this GPU; pass --system with one we have (configure systems)`);
  return loadSystem(given); // the InputError listing the systems
}

/**
 * The engine release to price when the request names none: the one the newest runtime image of the Dynamo
 * release (or line) ships, else the newest release we have below it, else the system's default.
 */
export function engineVersionFor(system: SystemSpec, backend: Backend, dynamoVersion: string): string | undefined {
  const support = system.backends[backend];
  const newest = parseDynamoVersion(dynamoVersion)?.releases[0];
  const row = DYNAMO_RUNTIME_TABLE.find((r) => r.tag === newest);
  if (!support || !row) return undefined;
  const ships = engineRelease(backend, row[backend]);
  const below = support.versions.filter((v) => compareVersions(v, ships) <= 0).sort(compareVersions);
  return below.at(-1) ?? support.default;
}

/** The engine of a Dynamo runtime image (vllm-runtime, sglang-runtime, tensorrtllm-runtime), if the name says. */
function runtimeBackendOf(image: string | undefined): Backend | undefined {
  const m = image ? /\/(vllm|sglang|tensorrtllm)-runtime(?::|@|$)/.exec(image) : null;
  return m ? (m[1] === 'tensorrtllm' ? 'trtllm' : (m[1] as Backend)) : undefined;
}

/** Disaggregated candidates meeting the SLA, best first for the request's optimization type. */
function rank(list: RankedCandidate[], req: DgdrRequest): RankedCandidate[] {
  const inLimits = (g: number) => (req.minGpusPerEngine === undefined || g >= req.minGpusPerEngine) && (req.maxGpusPerEngine === undefined || g <= req.maxGpusPerEngine);
  const ok = list.filter((c) => {
    const e = c.estimate as DisaggEstimate;
    return c.meetsSla !== false && inLimits(gpusOf(e.config.prefill)) && inLimits(gpusOf(e.config.decode));
  });
  // latency: the fastest tokens per user; throughput: the search's ranking (tokens/s/GPU over the budget).
  return req.optimization === 'latency'
    ? ok.sort((a, b) => a.estimate.metrics.tpotMs - b.estimate.metrics.tpotMs || compareCandidates(a, b))
    : ok.sort(compareCandidates);
}

export interface Answer {
  ctx: EngineContext;
  result: SearchResult;
  candidate?: RankedCandidate;
  why?: string;
  detail?: NoFeasibleDetail;
}

/** Search one engine as the request asks: a load target sizes the deployment (fewest GPUs), else the budget. */
function answerWith(ctx: EngineContext, req: DgdrRequest, totalGpus: number, sla: { ttftMs: number; tpotMs: number; requestLatencyMs?: number }): Answer {
  const limits = req.minGpusPerEngine !== undefined || req.maxGpusPerEngine !== undefined
    ? ` with ${req.minGpusPerEngine ?? 1} to ${req.maxGpusPerEngine ?? 'any number of'} GPUs per worker`
    : '';
  if (req.load) {
    const rec = recommend(ctx, { target: req.load, sla, maxGpus: totalGpus, topN: 5, modes: ['disagg'] });
    const candidates = rank(rec.disagg.filter((r) => r.share >= 1).map((r) => r.candidate), req);
    const best = req.optimization === 'throughput' ? candidates.sort((a, b) => a.gpusUsed - b.gpusUsed || compareCandidates(a, b))[0] : candidates[0];
    if (best) return { ctx, result: rec.search, candidate: best };
    const detail = explain(rec.search);
    const load = req.load.kind === 'rate' ? `${req.load.requestsPerS} requests/s` : `${req.load.clients} concurrent clients`;
    return { ctx, result: rec.search, why: `no disaggregated layout${limits} serves ${load} within ${totalGpus} GPUs and the SLA`, detail };
  }
  const result = runSearch(ctx, { totalGpus, topN: 5, modes: ['disagg'], sla, keepFeasible: true });
  const best = rank(result.disagg?.feasibleAll ?? result.disagg?.top ?? [], req)[0];
  if (best) return { ctx, result, candidate: best };
  const detail = explain(result);
  return { ctx, result, why: limits && (result.disagg?.feasible ?? 0) > 0 ? `no disaggregated layout meeting the SLA runs${limits}` : noFeasibleMessage(detail), detail };
}

/**
 * Search every engine the request allows (one, or each the GPU has for backend auto; an image naming a runtime
 * picks its engine) and keep the best answer; NoFeasibleError (exit 3) when none meets the SLA.
 */
export async function searchRequest(
  req: DgdrRequest,
  system: SystemSpec,
  totalGpus: number,
  sla: { ttftMs: number; tpotMs: number; requestLatencyMs?: number },
  defaults: { isl: number; osl: number },
  dynamoVersion: string,
  load: (inputs: DgdrEngineInputs) => Promise<EngineContext>,
  note: (line: string) => void,
): Promise<{ answer: Answer; chosen: RankedCandidate }> {
  const backends: Backend[] = req.backend === 'auto' ? BACKENDS.filter((b) => system.backends[b]) : [req.backend];
  // backend auto with a runtime image named: that image's engine is the one that will run.
  const imageBackend = runtimeBackendOf(req.image ?? req.workersImage);
  if (req.backend === 'auto' && imageBackend && backends.includes(imageBackend)) {
    backends.splice(0, backends.length, imageBackend);
    note(`spec.backend auto: the image ${req.image ?? req.workersImage} runs ${imageBackend}, so only ${imageBackend} is searched`);
  }
  const answers: Answer[] = [];
  let firstError: unknown;
  for (const backend of backends) {
    let ctx: EngineContext;
    try {
      ctx = await load({
        hfId: req.model, system: system.name, backend, backendVersion: req.backendVersion ?? engineVersionFor(system, backend, dynamoVersion),
        isl: req.isl ?? defaults.isl, osl: req.osl ?? defaults.osl, prefix: 0,
        ttft: sla.ttftMs, tpot: sla.tpotMs, requestLatency: sla.requestLatencyMs,
      });
    } catch (err) {
      if (req.backend !== 'auto' || !(err instanceof UnsupportedError)) throw err;
      firstError ??= err;
      continue;
    }
    answers.push(answerWith(ctx, req, totalGpus, sla));
  }
  if (answers.length === 0) throw firstError;
  const found = answers.filter((a) => a.candidate);
  const chosen = rank(found.map((a) => a.candidate!), req)[0];
  const answer = found.find((a) => a.candidate === chosen);
  if (!answer || !chosen) {
    const first = answers[0]!;
    throw new NoFeasibleError(`${req.name}: ${first.why}`, first.detail);
  }
  return { answer, chosen };
}
