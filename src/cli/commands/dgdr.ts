// `configure dgdr FILE`: answer a DynamoGraphDeploymentRequest offline. Run the search its spec asks for
// (model, backend, GPUs, workload, SLA) over disaggregated layouts, and write the DGD the operator would deploy,
// with the SLA planner and its profile ConfigMap; exit 3 with the reason when no layout meets the SLA.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import YAML from 'yaml';
import { gpuCount, log, positiveInt, printJson, runAction } from '../common.js';
import { addGlobalOptions, DEFAULTS, dynamoVersionParser, DYNAMO_VERSION_HELP } from '../options.js';
import { loadEngineContext } from '../context.js';
import { addGridOptions, gridOf } from './planner-profile.js';
import { compareCandidates, explain, noFeasibleMessage, recommend, runSearch, type NoFeasibleDetail } from '../../search/index.js';
import type { RankedCandidate, SearchResult } from '../../search/types.js';
import { gpusOf } from '../../search/port.js';
import { loadSystem } from '../../inputs/systems.js';
import { BACKENDS, type Backend, type SystemSpec } from '../../inputs/types.js';
import type { DisaggEstimate, EngineContext } from '../../engine/types.js';
import { InputError, NoFeasibleError, UnsupportedError } from '../../util/errors.js';
import { escapeControl } from '../../util/text.js';
import { parseDgdr, mergePatch, type DgdrRequest } from '../../output/planner-dgdr.js';
import { parseDynamoVersion } from '../../output/images.js';
import { DYNAMO_RUNTIME_TABLE, engineRelease } from '../../inputs/dynamo-runtime.js';
import { compareVersions } from '../../util/versions.js';
import type { PlanInput } from '../../output/plan.js';

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

interface Answer {
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
async function searchRequest(
  req: DgdrRequest,
  system: SystemSpec,
  totalGpus: number,
  sla: { ttftMs: number; tpotMs: number; requestLatencyMs?: number },
  dynamoVersion: string,
): Promise<{ answer: Answer; chosen: RankedCandidate }> {
  const backends: Backend[] = req.backend === 'auto' ? BACKENDS.filter((b) => system.backends[b]) : [req.backend];
  // backend auto with a runtime image named: that image's engine is the one that will run.
  const imageBackend = runtimeBackendOf(req.image ?? req.workersImage);
  if (req.backend === 'auto' && imageBackend && backends.includes(imageBackend)) {
    backends.splice(0, backends.length, imageBackend);
    log(`note: spec.backend auto: the image ${req.image ?? req.workersImage} runs ${imageBackend}, so only ${imageBackend} is searched`);
  }
  const answers: Answer[] = [];
  let firstError: unknown;
  for (const backend of backends) {
    let ctx: EngineContext;
    try {
      ctx = await loadEngineContext({
        hfId: req.model, system: system.name, backend, backendVersion: req.backendVersion ?? engineVersionFor(system, backend, dynamoVersion),
        isl: req.isl ?? DEFAULTS.isl, osl: req.osl ?? DEFAULTS.osl, prefix: 0,
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

export function registerDgdr(program: Command): void {
  const cmd = program
    .command('dgdr')
    .description('answer a DynamoGraphDeploymentRequest offline: search its model, backend, GPUs and SLA, write the DGD with the SLA planner')
    .argument('<file>', 'the DynamoGraphDeploymentRequest (nvidia.com/v1alpha1 or v1beta1) as YAML');
  cmd
    .option('--out <dir>', 'write k8s_deploy.yaml, planner_profile_configmap.yaml and planner/ here (default: print the manifest on stdout)')
    .option('--force', 'write into a directory that already holds files')
    .option('--plots', "with --out: also draw the profiles (planner/*.png; about a second more)")
    .option('--system <name>', 'GPU system, when the request names none or one we name differently')
    .option('--total-gpus <n>', 'GPU budget, when the request gives none (default: one node)', gpuCount('--total-gpus'))
    .option('--dynamo-version <v>', `${DYNAMO_VERSION_HELP}; default: the request's runtimeVersionOverride, else 0.9 for v1alpha1 and 1.x for v1beta1`, dynamoVersionParser);
  addGridOptions(cmd);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
Exit codes: 0 answered; 2 bad input (an unknown field is named); 3 no layout meets the SLA (with the reason); 4 no data for the GPU or engine.

Examples:
  configure dgdr dgdr.yaml > dgd.yaml && kubectl apply -f dgd.yaml
  configure dgdr dgdr.yaml --out answer/ && kubectl apply -f answer/k8s_deploy.yaml`,
  );
  cmd.action(async (file: string, o: Record<string, unknown>) =>
    runAction(o, async () => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (e) {
        throw new InputError(`${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      }
      const req = parseDgdr(text, file);
      for (const n of req.notes) log(`note: ${n}`);
      const system = systemOfRequest(req.system, o.system as string | undefined);
      const totalGpus = (o.totalGpus as number | undefined) ?? req.totalGpus ?? req.gpusPerNode ?? system.gpusPerNode;
      const sla = { ttftMs: req.ttftMs ?? DEFAULTS.ttft, tpotMs: req.itlMs ?? DEFAULTS.tpot, requestLatencyMs: req.requestLatencyMs };
      if (req.ttftMs === undefined || req.itlMs === undefined) log(`note: the request sets no ${req.ttftMs === undefined ? 'ttft' : 'itl'} target; using ttft ${sla.ttftMs} ms, itl ${sla.tpotMs} ms`);
      const dynamoVersion = (o.dynamoVersion as string | undefined) ?? req.dynamoVersion ?? (req.version === 'v1alpha1' ? '0.9' : '1.x');
      parseDynamoVersion(dynamoVersion);
      const { answer, chosen } = await searchRequest(req, system, totalGpus, sla, dynamoVersion);
      const { plannerSettingsFor, writeHandoff } = await import('../../output/planner-bundle.js');
      const { clusterOf, deployDocuments } = await import('../../output/k8s.js');
      const { withPlanner } = await import('../../output/planner.js');
      const { derivePlan } = await import('../../output/plan.js');
      const ctx = answer.ctx;
      const inputs = { ...answer.result.inputs, totalGpus };
      const grid = { ...Object.fromEntries(Object.entries(req.grid).filter(([, v]) => v !== undefined)), ...gridOf(o) };
      const settings = plannerSettingsFor(inputs, ctx, chosen, { grid, maxGpuBudget: totalGpus, overrides: req.plannerOverrides });
      if (typeof settings === 'string') throw new UnsupportedError(settings);
      const images = req.image !== undefined
        ? { frontend: req.image, prefill: req.image, decode: req.image }
        : req.workersImage !== undefined ? { prefill: req.workersImage, decode: req.workersImage } : undefined;
      const p: PlanInput & { planner: typeof settings } = {
        inputs,
        ctx,
        candidate: chosen,
        dynamoVersion,
        images,
        cluster: req.cluster,
        planner: settings,
      };
      const plan = derivePlan(p);
      const docs = patched(withPlanner(named(deployDocuments(plan, clusterOf(p)), req), plan, settings), req);
      const e = chosen.estimate;
      const summary = `${req.name}: ${ctx.backend} ${ctx.version} ${chosen.parallel} on ${chosen.gpusUsed} GPUs, TTFT ${e.metrics.ttftMs.toFixed(0)} ms, ITL ${e.metrics.tpotMs.toFixed(2)} ms, ${chosen.clusterTokPerSPerGpu.toFixed(1)} tokens/s/GPU`;
      let written: { dir: string; files: string[] } | undefined;
      if (typeof o.out === 'string') {
        written = await writeHandoff('--out', o.out, p, Boolean(o.force), docs, o.plots === true);
        log(`${summary}; written to ${written.dir}`);
      } else log(summary);
      if (o.json) {
        printJson({ request: { name: req.name, apiVersion: `nvidia.com/${req.version}` }, backend: ctx.backend, version: ctx.version, parallel: chosen.parallel, gpus: chosen.gpusUsed, metrics: e.metrics, notes: req.notes, ...(written ? { out: written.dir, files: written.files } : { documents: docs }) });
      } else if (!written) {
        process.stdout.write(docs.map((d) => YAML.stringify(d, { version: '1.1', lineWidth: 0 })).join('---\n'));
      }
    }),
  );
}

/** The request's name, labels and annotations on the generated DGD (before the planner, whose ConfigMap takes the name). */
function named(docs: Record<string, unknown>[], req: DgdrRequest): Record<string, unknown>[] {
  return docs.map((d) => {
    if (d.kind !== 'DynamoGraphDeployment') return d;
    const meta: Record<string, unknown> = { ...(d.metadata as Record<string, unknown>), name: req.dgdName };
    if (req.dgdLabels) meta.labels = { ...(meta.labels as Record<string, string> | undefined), ...req.dgdLabels };
    if (req.dgdAnnotations) meta.annotations = { ...(meta.annotations as Record<string, string> | undefined), ...req.dgdAnnotations };
    return { ...d, metadata: meta };
  });
}

/** overrides.dgd (v1beta1) merged over the finished DGD. */
function patched(docs: Record<string, unknown>[], req: DgdrRequest): Record<string, unknown>[] {
  const patch = req.dgdPatch;
  if (!patch) return docs;
  return docs.map((d) => (d.kind === 'DynamoGraphDeployment' ? (mergePatch(d, patch) as Record<string, unknown>) : d));
}
