// Rules each engine's arguments must obey, checked independently of how the generator builds them.
import YAML from 'yaml';

export interface Expect {
  backend: 'vllm' | 'sglang' | 'trtllm';
  /** Engine version deployed. */
  version: string;
  dynamo: '0.9' | '1.x';
  /** Dynamo release of the manifest: it serves DGD nvidia.com/v1beta1 from 1.2.0 on. */
  release?: string;
  /** Images the user gave, by role; the others must be the release's runtime image. */
  userImages?: Record<string, string>;
  isl: number;
  osl: number;
  /**
   * Per role: GPUs per worker, simulated batch per worker, dp, token budget, fp4 experts on a GPU with fp4 tensor
   * cores, and (SGLang) whether the estimate priced the experts on FlashInfer's TRT-LLM-gen runner.
   */
  roles: Record<string, { gpus: number; batch: number; dp: number; tokens: number; fp4Moe?: boolean; flashinferTrtllmMoe?: boolean }>;
}

const VLLM_FLAGS = new Set([
  '--model', '--served-model-name', '--tensor-parallel-size', '--pipeline-parallel-size', '--data-parallel-size',
  '--enable-expert-parallel', '--max-num-seqs', '--max-num-batched-tokens', '--max-model-len', '--kv-cache-dtype',
  '--quantization', '--enable-prefix-caching', '--is-prefill-worker', '--is-decode-worker', '--connector',
  '--disaggregation-mode', '--kv-transfer-config', '--kv-events-config', '--speculative-config',
]);
const SGLANG_FLAGS = new Set([
  '--model-path', '--served-model-name', '--tp-size', '--pp-size', '--dp-size', '--enable-dp-attention', '--ep-size',
  '--max-running-requests', '--chunked-prefill-size', '--max-prefill-tokens', '--context-length', '--kv-cache-dtype',
  '--quantization', '--port', '--disaggregation-mode', '--disaggregation-transfer-backend', '--disaggregation-bootstrap-port',
  '--host', '--kv-events-config', '--speculative-algorithm', '--speculative-draft-model-path', '--speculative-num-steps',
  '--speculative-eagle-topk', '--speculative-num-draft-tokens', '--moe-runner-backend',
]);
const TRTLLM_FLAGS = new Set(['--model-path', '--served-model-name', '--extra-engine-args', '--disaggregation-mode', '--publish-events-and-metrics']);
const TRTLLM_KEYS = new Set([
  'backend', 'tensor_parallel_size', 'pipeline_parallel_size', 'moe_expert_parallel_size', 'moe_tensor_parallel_size',
  'enable_attention_dp', 'max_batch_size', 'max_num_tokens', 'max_seq_len', 'enable_chunked_prefill', 'disable_overlap_scheduler',
  'kv_cache_config', 'cuda_graph_config', 'cache_transceiver_config', 'print_iter_log', 'attention_dp_config', 'moe_config',
  'speculative_config',
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

/** 1.2.0 or later: the releases that serve DGD nvidia.com/v1beta1 (Dynamo 1.2.0 release notes, #8414/#8647). */
function servesV1beta1(release: string): boolean {
  const [a, b] = release.split('.').map(Number);
  return a! > 1 || (a === 1 && b! >= 2);
}

/**
 * The graph as v1alpha1 services, whichever version the manifest is: a v1beta1 component becomes a service whose
 * componentType is worker for worker/prefill/decode types, with its `main` container as mainContainer, its
 * `nvidia.com/gpu` limit as the gpu limit and its secretRef as envFromSecret.
 */
export function servicesOf(dgd: Record<string, any>): Record<string, any> {
  if (dgd.apiVersion === 'nvidia.com/v1alpha1') return dgd.spec.services;
  if (dgd.apiVersion !== 'nvidia.com/v1beta1') throw new Error(`unknown apiVersion ${dgd.apiVersion}`);
  const out: Record<string, any> = {};
  for (const c of dgd.spec.components as any[]) {
    const main = (c.podTemplate?.spec?.containers ?? []).find((x: any) => x.name === 'main');
    const role = c.type === 'prefill' || c.type === 'decode' ? c.type : undefined;
    const secret = (main?.envFrom ?? []).map((e: any) => e.secretRef?.name).find(Boolean);
    const gpu = main?.resources?.limits?.['nvidia.com/gpu'];
    out[c.name] = {
      componentType: role ? 'worker' : c.type,
      ...(role ? { subComponentType: role } : {}),
      replicas: c.replicas,
      envFromSecret: secret,
      ...(gpu !== undefined ? { resources: { limits: { gpu } } } : {}),
      ...(c.multinode ? { multinode: c.multinode } : {}),
      runtimeVersionOverride: c.runtimeVersionOverride,
      extraPodSpec: { mainContainer: main ?? {}, volumes: c.podTemplate?.spec?.volumes },
    };
  }
  return out;
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
  if (exp.release) {
    const want = servesV1beta1(exp.release) ? 'nvidia.com/v1beta1' : 'nvidia.com/v1alpha1';
    if (dgd.apiVersion !== want) errors.push(`Dynamo ${exp.release} needs ${want}, not ${dgd.apiVersion}`);
  }
  const services = servicesOf(dgd);
  if (services.Frontend?.componentType !== 'frontend') errors.push('Frontend missing');
  const imageName = { vllm: 'vllm-runtime', sglang: 'sglang-runtime', trtllm: 'tensorrtllm-runtime' }[exp.backend];
  for (const [name, s] of Object.entries(services)) {
    const role = s.componentType === 'frontend' ? 'frontend' : roleOf(name);
    const image: string = s.extraPodSpec.mainContainer.image;
    const given = exp.userImages?.[role];
    if (given !== undefined && image !== given) errors.push(`${name}: image ${image}, not the one given (${given})`);
    if (given === undefined && !image.startsWith(`nvcr.io/nvidia/ai-dynamo/${imageName}:`)) errors.push(`${name}: image ${image}`);
    if (given === undefined && exp.release && !/^0\./.test(exp.release) && image.split(':').pop() !== exp.release) errors.push(`${name}: image ${image} is not Dynamo ${exp.release}`);
    // Dynamo 1.4 admission needs the runtime version of an image whose tag may not be one.
    const needsOverride = given !== undefined && dgd.apiVersion === 'nvidia.com/v1beta1' && /^(1\.([4-9]|\d\d+)|[2-9])\./.test(exp.release ?? '');
    if (needsOverride && s.runtimeVersionOverride !== exp.release) errors.push(`${name}: runtimeVersionOverride ${s.runtimeVersionOverride} for a given image`);
    if (!needsOverride && s.runtimeVersionOverride !== undefined) errors.push(`${name}: runtimeVersionOverride without a given image`);
  }
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
      const runner = f.get('--moe-runner-backend');
      if ((runner === 'flashinfer_trtllm') !== (want.flashinferTrtllmMoe === true)) errors.push(`${name}: --moe-runner-backend ${String(runner)} (flashinfer_trtllm expected: ${want.flashinferTrtllmMoe === true})`);
      // DP attention divides the worker's chunk among its ranks (SGLang server_args).
      if (num('--chunked-prefill-size') !== want.tokens * want.dp) errors.push(`${name}: token budget`);
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

type WorkerLayout = Omit<DeployedWorker, 'service' | 'role' | 'replicas' | 'gpus'>;

/** What one worker group of a manifest deploys, read back the way its engine reads its flags. */
export interface DeployedWorker {
  service: string;
  role: string;
  replicas: number;
  /** GPUs of one worker: the pod's GPU limit times its nodes. */
  gpus: number;
  tp: number;
  pp: number;
  /** Attention data-parallel ranks. */
  dp: number;
  moeTp: number;
  moeEp: number;
  /** Running sequences one scheduler admits (vLLM and TRT-LLM: per attention-DP rank; SGLang: per worker). */
  batch: number;
  /** Tokens one attention-DP rank takes into a step. */
  tokens: number;
  /** Speculative decoding the worker runs: "off", "mtp<n>" or "eagle3-<n>" (n draft tokens per step). */
  speculative: string;
}

/**
 * The speculative decoding a worker runs, by each engine's documented options:
 * - vLLM: --speculative-config JSON, method (mtp or eagle3 with a draft "model") and num_speculative_tokens.
 * - SGLang: --speculative-algorithm EAGLE over the checkpoint's NextN layers (MTP) or EAGLE3 with a
 *   --speculative-draft-model-path; a chain (--speculative-eagle-topk 1) of --speculative-num-steps drafts
 *   verifies --speculative-num-draft-tokens = steps + 1 tokens.
 * - TRT-LLM: speculative_config with decoding_type MTP (num_nextn_predict_layers) or Eagle3 (max_draft_len).
 */
function speculativeOf(backend: 'vllm' | 'sglang' | 'trtllm', f: Map<string, string | true>, cfg: Record<string, any> | undefined, where: string): string {
  if (backend === 'vllm') {
    const raw = f.get('--speculative-config');
    if (raw === undefined) return 'off';
    const sc = JSON.parse(String(raw)) as { method?: string; model?: string; num_speculative_tokens?: number };
    const n = count(sc.num_speculative_tokens, `${where} num_speculative_tokens`);
    if (sc.method === 'eagle3' && typeof sc.model === 'string') return `eagle3-${n}`;
    if (sc.method === 'mtp' && sc.model === undefined) return `mtp${n}`;
    throw new Error(`${where}: --speculative-config ${String(raw)} is neither MTP nor EAGLE-3 with a draft`);
  }
  if (backend === 'sglang') {
    const algo = f.get('--speculative-algorithm');
    if (algo === undefined) return 'off';
    const steps = count(f.get('--speculative-num-steps'), `${where} --speculative-num-steps`);
    if (f.get('--speculative-eagle-topk') !== '1') throw new Error(`${where}: --speculative-eagle-topk must be 1 for a chain`);
    if (count(f.get('--speculative-num-draft-tokens'), `${where} --speculative-num-draft-tokens`) !== steps + 1) throw new Error(`${where}: draft tokens != steps + 1`);
    const draft = f.get('--speculative-draft-model-path');
    if (algo === 'EAGLE' && draft === undefined) return `mtp${steps}`;
    if (algo === 'EAGLE3' && typeof draft === 'string') return `eagle3-${steps}`;
    throw new Error(`${where}: --speculative-algorithm ${String(algo)} with draft ${String(draft)}`);
  }
  const sc = cfg?.speculative_config as Record<string, unknown> | undefined;
  if (sc === undefined) return 'off';
  if (sc.decoding_type === 'MTP') return `mtp${count(sc.num_nextn_predict_layers, `${where} num_nextn_predict_layers`)}`;
  if (sc.decoding_type === 'Eagle3' && typeof sc.speculative_model_dir === 'string') return `eagle3-${count(sc.max_draft_len, `${where} max_draft_len`)}`;
  throw new Error(`${where}: speculative_config ${JSON.stringify(sc)}`);
}

function count(v: unknown, what: string, fallback?: number): number {
  if (v === undefined && fallback !== undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${what}: not a positive integer (${String(v)})`);
  return n;
}

/**
 * The layout a worker runs, from its arguments (and TRT-LLM's engine YAML), by each engine's documented
 * semantics rather than the generator's own mapping:
 * - vLLM: --tensor-parallel-size per --data-parallel-size rank; experts form one group of tp x dp GPUs, all
 *   expert parallel with --enable-expert-parallel, else all tensor parallel.
 * - SGLang: --tp-size counts the GPUs of a stage; --enable-dp-attention splits them into --dp-size attention
 *   groups; experts run --ep-size-way expert parallel and tp-size / ep-size-way tensor parallel; DP attention
 *   divides --chunked-prefill-size among the ranks.
 * - TRT-LLM: tensor_parallel_size GPUs per stage; enable_attention_dp makes each one an attention rank (tp 1);
 *   moe_expert_parallel_size x moe_tensor_parallel_size split the experts (tensor parallel when unset).
 */
function readWorker(args: string[], backend: 'vllm' | 'sglang' | 'trtllm', configOf: (file: string) => string | undefined, where: string): WorkerLayout {
  const f = flagMap(args);
  const flag = (k: string, fallback?: number) => count(f.get(k), `${where} ${k}`, fallback);
  if (backend === 'vllm') {
    const tp = flag('--tensor-parallel-size', 1);
    const dp = flag('--data-parallel-size', 1);
    const ep = f.get('--enable-expert-parallel') === true;
    return {
      tp, pp: flag('--pipeline-parallel-size', 1), dp, moeTp: ep ? 1 : tp * dp, moeEp: ep ? tp * dp : 1,
      batch: flag('--max-num-seqs'), tokens: flag('--max-num-batched-tokens'), speculative: speculativeOf(backend, f, undefined, where),
    };
  }
  if (backend === 'sglang') {
    const size = flag('--tp-size', 1);
    const dpAttention = f.get('--enable-dp-attention') === true;
    if (f.has('--dp-size') && !dpAttention) throw new Error(`${where}: --dp-size without --enable-dp-attention runs replicas, not attention ranks`);
    const dp = dpAttention ? flag('--dp-size') : 1;
    const ep = flag('--ep-size', 1);
    if (size % dp !== 0 || size % ep !== 0) throw new Error(`${where}: --tp-size ${size} is not a multiple of --dp-size ${dp} and --ep-size ${ep}`);
    const chunk = flag('--chunked-prefill-size');
    if (chunk % dp !== 0) throw new Error(`${where}: --chunked-prefill-size ${chunk} does not split over ${dp} ranks`);
    return {
      tp: size / dp, pp: flag('--pp-size', 1), dp, moeTp: size / ep, moeEp: ep, batch: flag('--max-running-requests'), tokens: chunk / dp,
      speculative: speculativeOf(backend, f, undefined, where),
    };
  }
  const file = String(f.get('--extra-engine-args')).split('/').pop()!;
  const raw = configOf(file);
  if (typeof raw !== 'string') throw new Error(`${where}: no engine config ${file}`);
  const cfg = YAML.parse(raw) as Record<string, any>;
  const size = count(cfg.tensor_parallel_size, `${file} tensor_parallel_size`, 1);
  const adp = cfg.enable_attention_dp === true;
  const ep = cfg.moe_expert_parallel_size === undefined ? undefined : count(cfg.moe_expert_parallel_size, `${file} moe_expert_parallel_size`);
  const etp = cfg.moe_tensor_parallel_size === undefined ? undefined : count(cfg.moe_tensor_parallel_size, `${file} moe_tensor_parallel_size`);
  const moeEp = ep ?? (etp !== undefined ? size / etp : 1);
  const moeTp = etp ?? size / moeEp;
  if (moeTp * moeEp !== size) throw new Error(`${file}: moe_tensor_parallel_size x moe_expert_parallel_size ${moeTp}x${moeEp} != tensor_parallel_size ${size}`);
  return {
    tp: adp ? 1 : size, pp: count(cfg.pipeline_parallel_size, `${file} pipeline_parallel_size`, 1), dp: adp ? size : 1,
    moeTp, moeEp, batch: count(cfg.max_batch_size, `${file} max_batch_size`), tokens: count(cfg.max_num_tokens, `${file} max_num_tokens`),
    speculative: speculativeOf(backend, f, cfg, file),
  };
}

/** Each worker group of a DynamoGraphDeployment (TRT-LLM engine YAML from its ConfigMap). */
export function deployedWorkers(text: string, backend: 'vllm' | 'sglang' | 'trtllm'): DeployedWorker[] {
  const docs = YAML.parseAllDocuments(text).map((d) => d.toJS() as Record<string, any>);
  const dgd = docs.find((d) => d.kind === 'DynamoGraphDeployment');
  if (!dgd) throw new Error('no DynamoGraphDeployment');
  const cm = docs.find((d) => d.kind === 'ConfigMap');
  const out: DeployedWorker[] = [];
  for (const [service, s] of Object.entries(servicesOf(dgd))) {
    if (s.componentType !== 'worker') continue;
    const gpus = count(s.resources?.limits?.gpu, `${service} gpu limit`) * count(s.multinode?.nodeCount, `${service} nodes`, 1);
    const layout = readWorker(s.extraPodSpec.mainContainer.args as string[], backend, (file) => cm?.data?.[file], service);
    out.push({ service, role: roleOf(service), replicas: count(s.replicas, `${service} replicas`, 1), gpus, ...layout });
  }
  return out;
}

/** Shell words of a command line: quotes removed, backslash-newlines joined, variables kept as written. */
function shellWords(text: string): string[] {
  const words: string[] = [];
  let cur = '';
  let has = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "'") {
      const j = text.indexOf("'", i + 1);
      cur += text.slice(i + 1, j);
      has = true;
      i = j;
    } else if (ch === '"') {
      const j = text.indexOf('"', i + 1);
      cur += text.slice(i + 1, j);
      has = true;
      i = j;
    } else if (ch === '\\' && text[i + 1] === '\n') {
      i++;
    } else if (/\s/.test(ch)) {
      if (has) words.push(cur);
      cur = '';
      has = false;
    } else {
      cur += ch;
      has = true;
    }
  }
  if (has) words.push(cur);
  return words;
}

const LAUNCH_FLAGS = new Set(['--nnodes', '--node-rank', '--master-addr', '--dist-init-addr']);

/** Each engine worker command of the bare-metal scripts, with its role and the layout it runs. */
export function scriptWorkers(
  scripts: Array<{ name: string; content: string }>,
  configs: Array<{ name: string; content: string }>,
  backend: 'vllm' | 'sglang' | 'trtllm',
): Array<WorkerLayout & { script: string; role: string }> {
  const out: Array<WorkerLayout & { script: string; role: string }> = [];
  const module = `dynamo.${backend}`;
  for (const s of scripts) {
    const lines = s.content.split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i]!.includes(`-m ${module}`)) continue;
      let cmd = lines[i]!;
      while (cmd.endsWith('\\') && i + 1 < lines.length) cmd = `${cmd.slice(0, -1)} ${lines[++i]!}`;
      const words = shellWords(cmd);
      const at = words.indexOf(module);
      const args = words.slice(at + 1).filter((w) => w !== '&');
      // Leave out the launch flags of a worker spread over nodes (with their values): they place, not shape, it.
      const own: string[] = [];
      for (let k = 0; k < args.length; k++) {
        if (LAUNCH_FLAGS.has(args[k]!)) k++;
        else if (args[k] !== '--headless') own.push(args[k]!);
      }
      const f = flagMap(own);
      const mode = f.get('--disaggregation-mode');
      const role = typeof mode === 'string' ? mode : f.has('--is-prefill-worker') ? 'prefill' : f.has('--is-decode-worker') ? 'decode' : 'agg';
      const layout = readWorker(own, backend, (file) => configs.find((c) => c.name === file)?.content, `${s.name}:${i + 1}`);
      out.push({ script: s.name, role, ...layout });
    }
  }
  return out;
}