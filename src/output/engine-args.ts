// The simulated configuration as engine arguments, shared by the Kubernetes manifest and the bare-metal
// scripts so both deploy the same thing. Which flag carries which value is data: templates/engine-flags.yaml.
import type { Backend, Dtype } from '../inputs/types.js';
import { adpBalanceTimeoutIters, backendProfile, sglangTrtllmMoe, trtllmGenMoe } from '../engine/backends.js';
import { trtllmReleaseOf } from '../inputs/dynamo-runtime.js';
import { UnsupportedError } from '../util/errors.js';
import { onLineAtLeast } from '../util/versions.js';
import { perSchedulerBatch, type DeployPlan, type WorkerGroup } from './plan.js';
import { backendFlagsOf, evalConfig, evalFlags, fillText, type FlagVars } from './templates.js';

/** Ports that must differ between workers sharing one host (Kubernetes pods use the defaults). */
export interface WorkerPorts {
  kvEventPort: number;
  bootstrapPort: number;
  enginePort: number;
  /** vLLM's NIXL side channel (bare-metal scripts set it per worker). */
  nixlSideChannelPort: number;
}

export const DEFAULT_PORTS: WorkerPorts = { kvEventPort: 20080, bootstrapPort: 8998, enginePort: 30000, nixlSideChannelPort: 20100 };

export interface WorkerCommand {
  /** python3 -m <module> */
  module: string;
  /** Arguments after the module; the model id is always the value after --model / --model-path. */
  args: string[];
  /** TRT-LLM only: the engine YAML file name this worker reads. */
  engineConfigFile?: string;
  /** Things a reader must know (quantization the checkpoint must provide, etc.). */
  notes: string[];
}

export const ENGINE_CONFIG_DIR = '/workspace/engine_configs';

/** The engine's --kv-cache-dtype value (from templates/engine-flags.yaml). */
function kvFlag(backend: Backend, kv: Dtype): string {
  const f = backendFlagsOf(backend);
  const v = f.kv_cache_dtype[f.kv_cache_dtype_aliases[kv] ?? kv];
  if (v !== undefined) return v;
  throw new UnsupportedError(`${backend} has no ${kv} KV cache; supported KV dtypes: ${Object.keys(f.kv_cache_dtype).join(', ')}`);
}

/** Load-time quantization flag value, or a note when the checkpoint itself must carry the format. */
function quantization(plan: DeployPlan): { value?: string; notes: string[] } {
  if (plan.gemmDtype === plan.checkpointGemmDtype) return { notes: [] };
  const q = backendFlagsOf(plan.backend).load_time_quantization;
  const value = q.from.includes(plan.checkpointGemmDtype) ? q.to[plan.gemmDtype] : undefined;
  if (value !== undefined) return { value, notes: [] };
  return {
    notes: [`the prediction assumes ${plan.gemmDtype} weights; point the model at a ${plan.gemmDtype} checkpoint (this one is ${plan.checkpointGemmDtype})`],
  };
}

/**
 * The simulated token budget; never below the batch, which the engines refuse at start-up. With speculative
 * decoding every running sequence verifies 1 + draft tokens a step, and the budget must hold them all.
 */
export function tokenBudget(backend: 'vllm' | 'sglang' | 'trtllm', g: WorkerGroup, draft = 0): number {
  return Math.max(g.maxNumTokens, perSchedulerBatch(backend, g) * (1 + draft));
}

/**
 * The speculative settings of a plan as template values (templates/engine-flags.yaml writes each engine's
 * syntax): the method as a condition, the draft depth, the verified tokens per step and the draft model.
 */
function speculationVars(plan: DeployPlan): FlagVars {
  const s = plan.speculation;
  if (!s || s.draft <= 0) return { speculative: false, mtp: false, eagle3: false };
  return {
    speculative: true,
    mtp: s.method === 'mtp',
    eagle3: s.method === 'eagle3',
    nextn: s.draft,
    nextn_plus_one: s.draft + 1,
    ...(s.draftModel !== undefined ? { draft_model: s.draftModel } : {}),
  };
}

/** TRT-LLM engine YAML file name of one role. */
function engineConfigFile(plan: DeployPlan, g: WorkerGroup): string | undefined {
  const t = backendFlagsOf(plan.backend).engine_config_file;
  return t === undefined ? undefined : fillText(t, { role: g.role });
}

/** Everything templates/engine-flags.yaml may name, for one worker. */
export function flagVars(plan: DeployPlan, g: WorkerGroup, ports: WorkerPorts = DEFAULT_PORTS): FlagVars {
  const l = g.layout;
  const q = quantization(plan);
  const file = engineConfigFile(plan, g);
  const balanceIters = adpBalanceTimeoutIters(plan.backend, plan.version);
  const moeProfile = plan.isMoe ? backendProfile(plan.backend, plan.version, g.system.gpu) : undefined;
  return {
    model: plan.modelId,
    served_model_name: plan.servedModelName ?? plan.modelId,
    role: g.role,
    tp: l.tp,
    pp: l.pp,
    dp: l.dp,
    moe_tp: l.moeTp,
    moe_ep: l.moeEp,
    tp_x_dp: l.tp * l.dp,
    batch_size: perSchedulerBatch(plan.backend, g),
    max_num_tokens: g.maxNumTokens,
    max_num_tokens_x_dp: g.maxNumTokens * l.dp,
    token_budget: tokenBudget(plan.backend, g, plan.speculation?.draft ?? 0),
    max_model_len: plan.maxModelLen,
    // On demand: TRT-LLM's worker flags never name it, only its engine YAML does.
    kv_cache_dtype: () => kvFlag(plan.backend, plan.kvDtype),
    ...(q.value !== undefined ? { quantization: q.value } : {}),
    ...(file !== undefined ? { engine_config_path: `${ENGINE_CONFIG_DIR}/${file}` } : {}),
    engine_port: ports.enginePort,
    bootstrap_port: ports.bootstrapPort,
    kv_event_port: ports.kvEventPort,
    nixl_side_channel_port: ports.nixlSideChannelPort,
    adp_balance_timeout_iters: balanceIters ?? 0,
    agg: g.role === 'agg',
    prefill: g.role === 'prefill',
    decode: g.role === 'decode',
    disagg: g.role !== 'agg',
    prefix_caching: plan.prefix > 0,
    expert_parallel: l.moeEp > 1,
    attention_dp: l.dp > 1,
    adp_balance: balanceIters !== undefined,
    trtllm_gen_moe: !!moeProfile && trtllmGenMoe(moeProfile, plan.moeDtype, g.system, l),
    // Stated, not left to the engine's auto choice, which differs by release and quantization.
    flashinfer_trtllm_moe: !!moeProfile && sglangTrtllmMoe(moeProfile, plan.architecture, g.system),
    moe: plan.isMoe,
    'dynamo_0.9': plan.dynamo === '0.9',
    'dynamo_1.x': plan.dynamo === '1.x',
    load_time_quantization: q.value !== undefined,
    cache_transceiver: plan.backend === 'trtllm' && !onLineAtLeast(trtllmReleaseOf(plan.version), '1.3'),
    ...speculationVars(plan),
  };
}

export function workerCommand(plan: DeployPlan, g: WorkerGroup, ports: WorkerPorts = DEFAULT_PORTS): WorkerCommand {
  const f = backendFlagsOf(plan.backend);
  const vars = flagVars(plan, g, ports);
  const args = evalFlags(f.args, vars).flatMap((o) => (o.value === undefined ? [o.flag] : [o.flag, o.value]));
  const file = engineConfigFile(plan, g);
  return { module: f.module, args, ...(file !== undefined ? { engineConfigFile: file } : {}), notes: quantization(plan).notes };
}

/** TRT-LLM's extra engine arguments (LLM API YAML) for one role. */
export function trtllmEngineConfig(plan: DeployPlan, g: WorkerGroup): Record<string, unknown> {
  const entries = backendFlagsOf('trtllm').engine_config ?? [];
  return evalConfig(entries, flagVars({ ...plan, backend: 'trtllm' }, g));
}
