// The simulated configuration as engine arguments: one function per backend, shared by the Kubernetes
// manifest and the bare-metal scripts so both deploy the same thing.
import type { Dtype } from '../inputs/types.js';
import { UnsupportedError } from '../util/errors.js';
import { perSchedulerBatch, type DeployPlan, type WorkerGroup } from './plan.js';

/** Ports that must differ between workers sharing one host (Kubernetes pods use the defaults). */
export interface WorkerPorts {
  kvEventPort: number;
  bootstrapPort: number;
  enginePort: number;
}

export const DEFAULT_PORTS: WorkerPorts = { kvEventPort: 20080, bootstrapPort: 8998, enginePort: 30000 };

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
const NIXL_KV_TRANSFER = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}';

function kvEvents(port: number): string {
  return `{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:${port}","enable_kv_cache_events":true}`;
}

function kvFlag(backend: string, kv: Dtype): string {
  if (kv === 'bfloat16' || kv === 'float16') return 'auto';
  if (kv === 'fp8' || kv === 'fp8_block') return backend === 'sglang' ? 'fp8_e4m3' : 'fp8';
  if (kv === 'nvfp4' && backend === 'trtllm') return 'nvfp4';
  throw new UnsupportedError(`${backend} has no ${kv} KV cache; supported KV dtypes: bfloat16, float16, fp8${backend === 'trtllm' ? ', nvfp4' : ''}`);
}

/** Load-time quantization flag, or a note when the checkpoint itself must carry the format. */
function quantization(plan: DeployPlan): { args: string[]; notes: string[] } {
  if (plan.gemmDtype === plan.checkpointGemmDtype) return { args: [], notes: [] };
  const fromHalf = plan.checkpointGemmDtype === 'bfloat16' || plan.checkpointGemmDtype === 'float16';
  if (fromHalf && plan.gemmDtype === 'fp8' && plan.backend !== 'trtllm') {
    return { args: ['--quantization', 'fp8'], notes: [] };
  }
  return {
    args: [],
    notes: [`the prediction assumes ${plan.gemmDtype} weights; point the model at a ${plan.gemmDtype} checkpoint (this one is ${plan.checkpointGemmDtype})`],
  };
}

/** The simulated token budget; never below the batch, which the engines refuse at start-up. */
export function tokenBudget(backend: 'vllm' | 'sglang' | 'trtllm', g: WorkerGroup): number {
  return Math.max(g.maxNumTokens, perSchedulerBatch(backend, g));
}

export function workerCommand(plan: DeployPlan, g: WorkerGroup, ports: WorkerPorts = DEFAULT_PORTS): WorkerCommand {
  switch (plan.backend) {
    case 'vllm':
      return vllmCommand(plan, g, ports);
    case 'sglang':
      return sglangCommand(plan, g, ports);
    case 'trtllm':
      return trtllmCommand(plan, g);
  }
}

function vllmCommand(plan: DeployPlan, g: WorkerGroup, ports: WorkerPorts): WorkerCommand {
  const l = g.layout;
  const q = quantization(plan);
  const args = [
    '--model', plan.modelId,
    '--served-model-name', plan.modelId,
    '--tensor-parallel-size', String(l.tp),
    '--pipeline-parallel-size', String(l.pp),
    '--data-parallel-size', String(l.dp),
  ];
  if (l.moeEp > 1) args.push('--enable-expert-parallel');
  args.push(
    '--max-num-seqs', String(perSchedulerBatch('vllm', g)),
    '--max-num-batched-tokens', String(tokenBudget('vllm', g)),
    '--max-model-len', String(plan.maxModelLen),
    '--kv-cache-dtype', kvFlag('vllm', plan.kvDtype),
    ...q.args,
  );
  if (plan.prefix > 0) args.push('--enable-prefix-caching');
  if (g.role !== 'agg') {
    if (plan.dynamo === '0.9') args.push(g.role === 'prefill' ? '--is-prefill-worker' : '--is-decode-worker', '--connector', 'nixl');
    else args.push('--disaggregation-mode', g.role, '--kv-transfer-config', NIXL_KV_TRANSFER);
  }
  // From 1.0 KV events are opt-in; the KV router needs them when prompts share a prefix.
  if (plan.dynamo === '1.x' && plan.prefix > 0 && g.role !== 'decode') args.push('--kv-events-config', kvEvents(ports.kvEventPort));
  return { module: 'dynamo.vllm', args, notes: q.notes };
}

function sglangCommand(plan: DeployPlan, g: WorkerGroup, ports: WorkerPorts): WorkerCommand {
  const l = g.layout;
  const q = quantization(plan);
  // SGLang's tp-size counts every GPU of a pipeline stage; attention DP splits it.
  const args = [
    '--model-path', plan.modelId,
    '--served-model-name', plan.modelId,
    '--tp-size', String(l.tp * l.dp),
    '--pp-size', String(l.pp),
  ];
  if (l.dp > 1) args.push('--dp-size', String(l.dp), '--enable-dp-attention');
  if (l.moeEp > 1) args.push('--ep-size', String(l.moeEp));
  args.push(
    '--max-running-requests', String(perSchedulerBatch('sglang', g)),
    '--chunked-prefill-size', String(g.maxNumTokens),
    '--max-prefill-tokens', String(g.maxNumTokens),
    '--context-length', String(plan.maxModelLen),
    '--kv-cache-dtype', kvFlag('sglang', plan.kvDtype),
    ...q.args,
    '--port', String(ports.enginePort),
  );
  if (g.role !== 'agg') {
    args.push('--disaggregation-mode', g.role, '--disaggregation-transfer-backend', 'nixl');
    if (g.role === 'prefill') args.push('--disaggregation-bootstrap-port', String(ports.bootstrapPort));
    args.push('--host', '0.0.0.0');
  }
  if (plan.prefix > 0 && g.role !== 'decode') args.push('--kv-events-config', `{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:${ports.kvEventPort}"}`);
  return { module: 'dynamo.sglang', args, notes: q.notes };
}

function trtllmCommand(plan: DeployPlan, g: WorkerGroup): WorkerCommand {
  const file = `${g.role}_config.yaml`;
  const args = ['--model-path', plan.modelId, '--served-model-name', plan.modelId, '--extra-engine-args', `${ENGINE_CONFIG_DIR}/${file}`];
  if (g.role !== 'agg') args.push('--disaggregation-mode', g.role);
  if (plan.prefix > 0) args.push('--publish-events-and-metrics');
  const q = quantization(plan);
  return { module: 'dynamo.trtllm', args, engineConfigFile: file, notes: q.notes };
}

/** TRT-LLM's extra engine arguments (LLM API YAML) for one role. */
export function trtllmEngineConfig(plan: DeployPlan, g: WorkerGroup): Record<string, unknown> {
  const l = g.layout;
  const batch = perSchedulerBatch('trtllm', g);
  const cfg: Record<string, unknown> = {
    backend: 'pytorch',
    tensor_parallel_size: l.tp * l.dp,
    pipeline_parallel_size: l.pp,
  };
  if (plan.isMoe) {
    cfg.moe_expert_parallel_size = l.moeEp;
    cfg.moe_tensor_parallel_size = l.moeTp;
  }
  cfg.enable_attention_dp = l.dp > 1;
  cfg.max_batch_size = batch;
  cfg.max_num_tokens = tokenBudget('trtllm', g);
  cfg.max_seq_len = plan.maxModelLen;
  cfg.enable_chunked_prefill = g.role !== 'decode';
  cfg.disable_overlap_scheduler = g.role === 'prefill';
  cfg.kv_cache_config = { dtype: kvFlag('trtllm', plan.kvDtype), enable_block_reuse: plan.prefix > 0 };
  if (g.role !== 'prefill') cfg.cuda_graph_config = { enable_padding: true, max_batch_size: batch };
  // TRT-LLM 1.3 rejects cache_transceiver_config (it moved); earlier versions need it for disagg.
  if (g.role !== 'agg' && !trtllmAtLeast13(plan.version)) {
    cfg.cache_transceiver_config = { backend: 'DEFAULT', max_tokens_in_buffer: plan.maxModelLen };
  }
  cfg.print_iter_log = false;
  return cfg;
}

function trtllmAtLeast13(v: string): boolean {
  const m = /^(\d+)\.(\d+)/.exec(v);
  if (!m) return false;
  const [maj, min] = [Number(m[1]), Number(m[2])];
  // 0.x versions are Dynamo image tags (0.8.x ships TRT-LLM 1.2).
  return maj > 1 || (maj === 1 && min >= 3) || (maj === 0 && min >= 9);
}
