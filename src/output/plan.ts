// One ranked candidate turned into what every artifact needs: worker groups with their totals, the image,
// the flag profile and the engine limits. Builders read this, never the raw estimate.
import type { Backend, Dtype, SystemSpec } from '../inputs/types.js';
import type { AggEstimate, DisaggEstimate, EngineContext, ParallelLayout } from '../engine/types.js';
import type { Mode, RankedCandidate, SearchInputs } from '../search/types.js';
import { gpusOf } from '../search/port.js';
import { parseDynamoVersion, runtimeImage, type DynamoProfile, type ImageChoice } from './images.js';

/** What the builders take: the search inputs, the engine context and one ranked candidate. */
export interface PlanInput {
  inputs: SearchInputs;
  ctx: EngineContext;
  candidate: RankedCandidate;
  /** --dynamo-version: 0.9 or 1.x; default: the profile of the runtime image. */
  dynamoVersion?: string;
}

export type Role = 'agg' | 'prefill' | 'decode';

export interface WorkerGroup {
  role: Role;
  layout: ParallelLayout;
  /** Simulated batch size of one worker (all its attention-DP ranks together). */
  batchSize: number;
  /** Simulated token budget per engine step. */
  maxNumTokens: number;
  gpusPerWorker: number;
  /** Workers of this role in the whole deployment (all replicas). */
  workers: number;
  /** Workers of this role in one replica (xPyD unit). */
  workersPerReplica: number;
  system: SystemSpec;
}

export interface DeployPlan {
  modelId: string;
  backend: Backend;
  version: string;
  mode: Mode;
  parallel: string;
  groups: WorkerGroup[];
  replicas: number;
  gpusPerReplica: number;
  gpusUsed: number;
  totalGpus: number;
  isl: number;
  osl: number;
  prefix: number;
  /** Longest sequence the engine accepts: isl + osl + 512 rounded up to 256, capped by the model. */
  maxModelLen: number;
  gemmDtype: Dtype;
  moeDtype: Dtype;
  kvDtype: Dtype;
  /** Weight format the checkpoint already has; a different gemmDtype means quantizing at load time. */
  checkpointGemmDtype: Dtype;
  isMoe: boolean;
  dynamo: DynamoProfile;
  image: ImageChoice;
}

export function maxModelLen(isl: number, osl: number, maxPositions: number): number {
  const want = Math.ceil((isl + osl + 512) / 256) * 256;
  return Math.max(isl + osl, Math.min(want, maxPositions > 0 ? maxPositions : want));
}

const planMemo = new WeakMap<PlanInput, DeployPlan>();

/** The deployment of one candidate; derived once per PlanInput, which every artifact builder reads. */
export function derivePlan(p: PlanInput): DeployPlan {
  let plan = planMemo.get(p);
  if (!plan) planMemo.set(p, (plan = buildPlan(p)));
  return plan;
}

function buildPlan(p: PlanInput): DeployPlan {
  const { inputs, ctx, candidate } = p;
  const est = candidate.estimate;
  const base = {
    modelId: inputs.model,
    backend: inputs.backend,
    version: inputs.version,
    parallel: candidate.parallel,
    totalGpus: inputs.totalGpus,
    isl: inputs.workload.isl,
    osl: inputs.workload.osl,
    prefix: inputs.workload.prefix,
    maxModelLen: maxModelLen(inputs.workload.isl, inputs.workload.osl, ctx.model.maxPositionEmbeddings),
    gemmDtype: ctx.gemmDtype,
    moeDtype: ctx.moeDtype,
    kvDtype: ctx.kvDtype,
    checkpointGemmDtype: ctx.model.quant.gemmDtype,
    isMoe: ctx.model.moe !== undefined,
    dynamo: flagProfile(p.dynamoVersion, runtimeImage(inputs.backend, inputs.version)),
    image: runtimeImage(inputs.backend, inputs.version),
  };
  if (est.mode === 'agg') {
    const e = est as AggEstimate;
    const g = gpusOf(e.config);
    const replicas = Math.max(1, candidate.replicas ?? e.replicas);
    return {
      ...base,
      mode: 'agg',
      replicas,
      gpusPerReplica: g,
      gpusUsed: replicas * g,
      groups: [
        {
          role: 'agg',
          layout: pickLayout(e.config),
          batchSize: e.config.batchSize,
          maxNumTokens: e.config.maxNumTokens,
          gpusPerWorker: g,
          workers: replicas,
          workersPerReplica: 1,
          system: ctx.system,
        },
      ],
    };
  }
  const e = est as DisaggEstimate;
  const pg = gpusOf(e.config.prefill);
  const dg = gpusOf(e.config.decode);
  const perReplica = e.config.prefill.workers * pg + e.config.decode.workers * dg;
  // Pool worker counts are per xPyD replica; the candidate's GPU count says how many replicas deploy.
  const replicas = Math.max(1, candidate.replicas ?? Math.round(candidate.gpusUsed / perReplica));
  const pool = (role: 'prefill' | 'decode'): WorkerGroup => {
    const c = e.config[role];
    return {
      role,
      layout: pickLayout(c),
      batchSize: c.batchSize,
      maxNumTokens: c.maxNumTokens,
      gpusPerWorker: gpusOf(c),
      workers: c.workers * replicas,
      workersPerReplica: c.workers,
      system: role === 'decode' && ctx.decodeSystem ? ctx.decodeSystem : ctx.system,
    };
  };
  return {
    ...base,
    mode: 'disagg',
    replicas,
    gpusPerReplica: perReplica,
    gpusUsed: replicas * perReplica,
    groups: [pool('prefill'), pool('decode')],
  };
}

/** The image's own Dynamo line: 0.x images take the 0.9 flags, 1.x images the 1.x flags. */
export function imageProfile(image: ImageChoice): DynamoProfile {
  return /^0\./.test(image.tag) ? '0.9' : '1.x';
}

/** --dynamo-version when given; otherwise the profile of the image that ships the predicted engine. */
function flagProfile(requested: string | undefined, image: ImageChoice): DynamoProfile {
  return requested ? parseDynamoVersion(requested) : imageProfile(image);
}

function pickLayout(l: ParallelLayout): ParallelLayout {
  return { tp: l.tp, pp: l.pp, dp: l.dp, moeTp: l.moeTp, moeEp: l.moeEp };
}

/** GPUs of one machine as the scheduler sees it: a GB200 NVL72 tray holds 4, HGX boards 8. */
export function hostGpus(system: SystemSpec): number {
  if (system.name.startsWith('gb')) return 4;
  return Math.min(system.gpusPerNode, 8);
}

/** Batch size and token budget per scheduler: vLLM and TRT-LLM schedule per attention-DP rank, SGLang per worker. */
export function perSchedulerBatch(backend: Backend, g: WorkerGroup): number {
  return backend === 'sglang' ? g.batchSize : Math.max(1, Math.ceil(g.batchSize / g.layout.dp));
}
