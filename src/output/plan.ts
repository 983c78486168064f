// One ranked candidate turned into what every artifact needs: worker groups with their totals, the image,
// the flag profile and the engine limits. Builders read this, never the raw estimate.
import type { Backend, Dtype, SystemSpec } from '../inputs/types.js';
import type { AggEstimate, DisaggEstimate, EngineContext, ParallelLayout, Speculation } from '../engine/types.js';
import type { Mode, RankedCandidate, SearchInputs } from '../search/types.js';
import { gpusOf } from '../search/port.js';
import { deploymentConcurrency } from '../search/json.js';
import { dgdApiVersion } from '../inputs/dynamo-runtime.js';
import { parseDynamoVersion, releaseProfile, runtimeImage, type DynamoProfile, type ImageChoice } from './images.js';
import type { ClusterOptions } from './cluster.js';
import type { PlannerSettings } from './planner.js';

/** What the builders take: the search inputs, the engine context and one ranked candidate. */
export interface PlanInput {
  inputs: SearchInputs;
  ctx: EngineContext;
  candidate: RankedCandidate;
  /** --dynamo-version: a Dynamo release (1.2.0) or a line (0.9, 1.x); default: the newest release shipping the engine. */
  dynamoVersion?: string;
  /** Images given by the user, replacing the release's runtime image for those components. */
  images?: ImageOverrides;
  /** Namespace, secrets, model cache and model names of the manifests (src/output/cluster.ts). */
  cluster?: ClusterOptions;
  /** The SLA planner to add to a disaggregated deployment, with its profiles (src/output/planner.ts). */
  planner?: PlannerSettings;
}

export type Role = 'agg' | 'prefill' | 'decode';

/** A component of the deployment that runs an image. */
export type ImageComponent = 'frontend' | Role;

/** Images the user gave (--image for all components; per role in an experiment file). */
export type ImageOverrides = Partial<Record<ImageComponent, string>>;

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
  /** Clients over the whole deployment at the predicted point (what AIPerf sends to the one frontend). */
  concurrency: number;
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
  /** HF architecture of the model (engines pick some kernels per architecture). */
  architecture: string;
  /** Flag profile of the worker arguments: the one of the Dynamo release. */
  dynamo: DynamoProfile;
  /** The Dynamo release's runtime image and how well it matches the engine version. */
  image: ImageChoice;
  /** DynamoGraphDeployment API version the release serves (v1beta1 from 1.2.0). */
  apiVersion: 'nvidia.com/v1alpha1' | 'nvidia.com/v1beta1';
  /** Images the user gave, by component; the others run image.image. */
  userImages: ImageOverrides;
  /** The name the workers serve the model under, when not modelId (the manifest's --served-model-name). */
  servedModelName?: string;
  /** Speculative decoding the workers run (the engine's speculative flags); absent: none. */
  speculation?: Speculation;
}

/** The image a component runs: the user's, else the release's runtime image. */
export function imageOf(plan: DeployPlan, component: ImageComponent): string {
  return plan.userImages[component] ?? plan.image.image;
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
  const image = runtimeImage(inputs.backend, inputs.version, parseDynamoVersion(p.dynamoVersion));
  const base = {
    modelId: inputs.model,
    backend: inputs.backend,
    version: inputs.version,
    parallel: candidate.parallel,
    totalGpus: inputs.totalGpus,
    concurrency: deploymentConcurrency(candidate),
    isl: inputs.workload.isl,
    osl: inputs.workload.osl,
    prefix: inputs.workload.prefix,
    maxModelLen: maxModelLen(inputs.workload.isl, inputs.workload.osl, ctx.model.maxPositionEmbeddings),
    gemmDtype: ctx.gemmDtype,
    moeDtype: ctx.moeDtype,
    kvDtype: ctx.kvDtype,
    checkpointGemmDtype: ctx.model.quant.gemmDtype,
    isMoe: ctx.model.moe !== undefined,
    architecture: ctx.model.architecture,
    dynamo: releaseProfile(image.release),
    image,
    apiVersion: dgdApiVersion(image.release),
    userImages: { ...(p.images ?? {}) },
    // The speculative decoding the candidate was priced with (each candidate its own under --nextn auto).
    ...((est.speculation ?? ctx.speculation)?.draft ? { speculation: est.speculation ?? ctx.speculation } : {}),
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
