// Rules each engine's arguments must obey, checked independently of how the generator builds them.
import YAML from 'yaml';

export interface Expect {
  backend: 'vllm' | 'sglang' | 'trtllm';
  /** Engine version deployed. */
  version: string;
  dynamo: '0.9' | '1.x';
  isl: number;
  osl: number;
  /** Per role: GPUs per worker, simulated batch per worker, dp, token budget, fp4 experts on a GPU with fp4 tensor cores. */
  roles: Record<string, { gpus: number; batch: number; dp: number; tokens: number; fp4Moe?: boolean }>;
}

const VLLM_FLAGS = new Set([
  '--model', '--served-model-name', '--tensor-parallel-size', '--pipeline-parallel-size', '--data-parallel-size',
  '--enable-expert-parallel', '--max-num-seqs', '--max-num-batched-tokens', '--max-model-len', '--kv-cache-dtype',
  '--quantization', '--enable-prefix-caching', '--is-prefill-worker', '--is-decode-worker', '--connector',
  '--disaggregation-mode', '--kv-transfer-config', '--kv-events-config',
]);
const SGLANG_FLAGS = new Set([
  '--model-path', '--served-model-name', '--tp-size', '--pp-size', '--dp-size', '--enable-dp-attention', '--ep-size',
  '--max-running-requests', '--chunked-prefill-size', '--max-prefill-tokens', '--context-length', '--kv-cache-dtype',
  '--quantization', '--port', '--disaggregation-mode', '--disaggregation-transfer-backend', '--disaggregation-bootstrap-port',
  '--host', '--kv-events-config',
]);
const TRTLLM_FLAGS = new Set(['--model-path', '--served-model-name', '--extra-engine-args', '--disaggregation-mode', '--publish-events-and-metrics']);
const TRTLLM_KEYS = new Set([
  'backend', 'tensor_parallel_size', 'pipeline_parallel_size', 'moe_expert_parallel_size', 'moe_tensor_parallel_size',
  'enable_attention_dp', 'max_batch_size', 'max_num_tokens', 'max_seq_len', 'enable_chunked_prefill', 'disable_overlap_scheduler',
  'kv_cache_config', 'cuda_graph_config', 'cache_transceiver_config', 'print_iter_log', 'attention_dp_config', 'moe_config',
]);

/** Flags (with their value, or true) from an argument list. */
export function flagMap(args: string[]): Map<string, string | true> {
  const m = new Map<string, string | true>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith('--')) throw new Error(`value without a flag: ${a}`);
    const next = args[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      if (m.has(a)) throw new Error(`flag given twice: ${a}`);
      m.set(a, next);
      i++;
    } else m.set(a, true);
  }
  return m;
}

function roleOf(name: string): string {
  return /Prefill/.test(name) ? 'prefill' : /Decode/.test(name) ? 'decode' : 'agg';
}

/** Returns a list of broken rules (empty when all hold). */
export function checkManifest(text: string, exp: Expect): string[] {
  const errors: string[] = [];
  const docs = YAML.parseAllDocuments(text).map((d) => d.toJS() as Record<string, any>);
  const dgd = docs.find((d) => d.kind === 'DynamoGraphDeployment');
  if (!dgd) return ['no DynamoGraphDeployment'];
  const cm = docs.find((d) => d.kind === 'ConfigMap');
  const services = dgd.spec.services as Record<string, any>;
  if (services.Frontend?.componentType !== 'frontend') errors.push('Frontend missing');
  const workers = Object.entries(services).filter(([, s]) => s.componentType === 'worker');
  const roles = workers.map(([n]) => roleOf(n)).sort();
  const wantRoles = Object.keys(exp.roles).sort();
  if (roles.join() !== wantRoles.join()) errors.push(`roles ${roles} != ${wantRoles}`);
  const tpByRole: Record<string, string> = {};
  for (const [name, s] of workers) {
    const role = roleOf(name);
    const want = exp.roles[role];
    if (!want) continue;
    if (role !== 'agg' && s.subComponentType !== role) errors.push(`${name}: subComponentType ${s.subComponentType}`);
    const gpu = s.resources?.limits?.gpu;
    if (typeof gpu !== 'string') errors.push(`${name}: gpu limit must be a string`);
    const nodes = s.multinode?.nodeCount ?? 1;
    if (Number(gpu) * nodes !== want.gpus) errors.push(`${name}: ${gpu} x ${nodes} GPUs != ${want.gpus}`);
    const c = s.extraPodSpec.mainContainer;
    const image: string = c.image;
    const imageName = { vllm: 'vllm-runtime', sglang: 'sglang-runtime', trtllm: 'tensorrtllm-runtime' }[exp.backend];
    if (!image.startsWith(`nvcr.io/nvidia/ai-dynamo/${imageName}:`)) errors.push(`${name}: image ${image}`);
    if (s.envFromSecret !== 'hf-token-secret') errors.push(`${name}: envFromSecret`);
    const args: string[] = c.args;
    if (!args.every((a) => typeof a === 'string')) errors.push(`${name}: non-string arg`);
    const f = flagMap(args);
    const allowed = { vllm: VLLM_FLAGS, sglang: SGLANG_FLAGS, trtllm: TRTLLM_FLAGS }[exp.backend];
    for (const k of f.keys()) if (!allowed.has(k)) errors.push(`${name}: unknown ${exp.backend} flag ${k}`);
    const num = (k: string) => Number(f.get(k));
    if (exp.backend === 'vllm') {
      if (num('--tensor-parallel-size') * num('--pipeline-parallel-size') * num('--data-parallel-size') !== want.gpus) errors.push(`${name}: tp*pp*dp != gpus`);
      if (num('--max-num-seqs') !== Math.ceil(want.batch / want.dp)) errors.push(`${name}: --max-num-seqs ${f.get('--max-num-seqs')} != simulated ${want.batch}/${want.dp}`);
      if (num('--max-num-batched-tokens') !== want.tokens) errors.push(`${name}: token budget`);
      if (num('--max-num-batched-tokens') < num('--max-num-seqs')) errors.push(`${name}: token budget below max-num-seqs`);
      if (num('--max-model-len') < exp.isl + exp.osl) errors.push(`${name}: max-model-len`);
      if (!['auto', 'fp8'].includes(String(f.get('--kv-cache-dtype')))) errors.push(`${name}: kv dtype`);
      const old = f.has('--is-prefill-worker') || f.has('--is-decode-worker');
      const neu = f.has('--disaggregation-mode');
      if (role === 'agg' && (old || neu)) errors.push(`${name}: role flag on an aggregated worker`);
      if (role !== 'agg' && exp.dynamo === '0.9' && (!f.has(`--is-${role}-worker`) || neu)) errors.push(`${name}: 0.9 needs --is-${role}-worker`);
      if (role !== 'agg' && exp.dynamo === '1.x' && (f.get('--disaggregation-mode') !== role || old || f.has('--connector'))) errors.push(`${name}: 1.x needs --disaggregation-mode ${role}`);
      if (role !== 'agg' && exp.dynamo === '1.x' && !String(f.get('--kv-transfer-config')).includes('NixlConnector')) errors.push(`${name}: 1.x needs the NIXL kv-transfer-config`);
      if (f.has('--connector') && f.has('--kv-transfer-config')) errors.push(`${name}: --connector with --kv-transfer-config`);
    } else if (exp.backend === 'sglang') {
      if (num('--tp-size') * num('--pp-size') !== want.gpus) errors.push(`${name}: tp-size*pp-size != gpus`);
      if (num('--max-running-requests') !== want.batch) errors.push(`${name}: --max-running-requests != simulated batch`);
      if (num('--chunked-prefill-size') !== want.tokens) errors.push(`${name}: token budget`);
      if (num('--context-length') < exp.isl + exp.osl) errors.push(`${name}: context-length`);
      if (!['auto', 'fp8_e4m3', 'fp8_e5m2'].includes(String(f.get('--kv-cache-dtype')))) errors.push(`${name}: kv dtype`);
      if (role !== 'agg' && (f.get('--disaggregation-mode') !== role || f.get('--disaggregation-transfer-backend') !== 'nixl')) errors.push(`${name}: disagg flags`);
      if (role === 'agg' && f.has('--disaggregation-mode')) errors.push(`${name}: role flag on an aggregated worker`);
      tpByRole[role] = String(f.get('--tp-size'));
    } else {
      const path = String(f.get('--extra-engine-args'));
      const file = path.split('/').pop()!;
      if (file !== `${role}_config.yaml`) errors.push(`${name}: engine config ${file}`);
      const mounted = (c.volumeMounts ?? []).some((v: any) => path.startsWith(v.mountPath + '/'));
      if (!mounted) errors.push(`${name}: engine config not mounted`);
      if (!cm?.data?.[file]) {
        errors.push(`${name}: ConfigMap lacks ${file}`);
        continue;
      }
      const cfg = YAML.parse(cm.data[file]) as Record<string, any>;
      for (const k of Object.keys(cfg)) if (!TRTLLM_KEYS.has(k)) errors.push(`${file}: unknown key ${k}`);
      if (cfg.backend !== 'pytorch') errors.push(`${file}: backend must be pytorch`);
      if (cfg.tensor_parallel_size * cfg.pipeline_parallel_size !== want.gpus) errors.push(`${file}: tp*pp != gpus`);
      if (cfg.max_batch_size !== Math.ceil(want.batch / want.dp)) errors.push(`${file}: max_batch_size != simulated batch`);
      if (cfg.max_num_tokens !== want.tokens) errors.push(`${file}: max_num_tokens`);
      if (cfg.max_seq_len < exp.isl + exp.osl) errors.push(`${file}: max_seq_len`);
      if (!['auto', 'fp8', 'nvfp4'].includes(cfg.kv_cache_config?.dtype)) errors.push(`${file}: kv dtype`);
      if (role !== 'agg' && f.get('--disaggregation-mode') !== role) errors.push(`${name}: --disaggregation-mode`);
      // The estimate prices attention-DP balancing in aggregated workers only, with the recipes' 60-step timeout;
      // TRT-LLM's LLM API takes attention_dp_config from 1.1 (0.x Dynamo image tags ship 1.1 or later).
      const balanced = role === 'agg' && want.dp > 1 && !/^1\.0\./.test(exp.version);
      const adp = cfg.attention_dp_config;
      if (balanced && !(adp?.enable_balance === true && adp.timeout_iters === 60)) errors.push(`${file}: attention_dp_config`);
      if (!balanced && adp !== undefined) errors.push(`${file}: attention_dp_config without aggregated attention DP`);
      // The estimate prices fp4 experts on Blackwell with the trtllm-gen kernels unless attention is data parallel.
      const gen = want.fp4Moe === true && want.dp === 1;
      if (gen !== (cfg.moe_config?.backend === 'TRTLLM')) errors.push(`${file}: moe_config.backend ${cfg.moe_config?.backend} (trtllm-gen expected: ${gen})`);
    }
  }
  if (exp.backend === 'sglang' && tpByRole.prefill && tpByRole.prefill !== tpByRole.decode) errors.push('sglang disagg needs the same tp-size for prefill and decode');
  return errors;
}
