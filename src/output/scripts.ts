// Bare-metal launch scripts (one per node) and the AIPerf sweep that checks the prediction.
import { DEFAULT_PORTS, ENGINE_CONFIG_DIR, workerCommand, type WorkerPorts } from './engine-args.js';
import { derivePlan, hostGpus, type DeployPlan, type PlanInput, type WorkerGroup } from './plan.js';

/** Single-quote a value for bash: nothing inside can expand or end the word. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Text for a `#` comment: control characters (a newline would end the comment) become '?'. */
function commentText(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f]/g, '?');
}

/** One worker's share of one node. */
interface Placement {
  group: WorkerGroup;
  /** Index of the worker within its role. */
  worker: number;
  /** GPUs of this node it uses. */
  gpus: number[];
  /** Multi-node workers: rank of this node among the worker's nodes, and their count. */
  nodeRank: number;
  nodeCount: number;
  /** Node that holds rank 0 of this worker. */
  firstNode: number;
}

/**
 * Greedy packing: replicas in order, prefill workers before decode workers, each worker on the first node
 * with room; a worker larger than a node takes whole nodes of its own.
 */
export function packNodes(plan: DeployPlan): Placement[][] {
  const nodes: Placement[][] = [];
  const free: number[] = [];
  const next: Record<string, number> = {};
  const host = hostGpus(plan.groups[0].system);
  for (let r = 0; r < plan.replicas; r++) {
    for (const g of plan.groups) {
      for (let k = 0; k < g.workersPerReplica; k++) {
        const worker = (next[g.role] = (next[g.role] ?? -1) + 1);
        if (g.gpusPerWorker > host) {
          const count = Math.ceil(g.gpusPerWorker / host);
          const first = nodes.length;
          const per = Math.ceil(g.gpusPerWorker / count);
          for (let i = 0; i < count; i++) {
            nodes.push([{ group: g, worker, gpus: range(0, per), nodeRank: i, nodeCount: count, firstNode: first }]);
            free.push(host - per);
          }
          continue;
        }
        let n = free.findIndex((f) => f >= g.gpusPerWorker);
        if (n < 0) {
          nodes.push([]);
          free.push(host);
          n = nodes.length - 1;
        }
        const start = host - free[n];
        nodes[n].push({ group: g, worker, gpus: range(start, g.gpusPerWorker), nodeRank: 0, nodeCount: 1, firstNode: n });
        free[n] -= g.gpusPerWorker;
      }
    }
  }
  return nodes;
}

function range(start: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => start + i);
}

function portsFor(local: number): WorkerPorts {
  return {
    kvEventPort: DEFAULT_PORTS.kvEventPort + local,
    bootstrapPort: DEFAULT_PORTS.bootstrapPort + local,
    enginePort: DEFAULT_PORTS.enginePort + 100 * local,
  };
}

/** Replace the literal model id and engine-config path with shell variables; quote the rest. */
function argWords(plan: DeployPlan, args: string[]): string[] {
  return args.map((a) => {
    if (a === plan.modelId) return '"$MODEL"';
    if (a.startsWith(`${ENGINE_CONFIG_DIR}/`)) return `"$SCRIPT_DIR/${a.slice(ENGINE_CONFIG_DIR.length + 1)}"`;
    // Flag names are fixed words of ours; every value is quoted.
    return /^--[a-z0-9-]+$/.test(a) ? a : shQuote(a);
  });
}

function multinodeArgs(plan: DeployPlan, p: Placement): string[] {
  if (p.nodeCount === 1) return [];
  if (plan.backend === 'vllm') {
    const a = ['--nnodes', shQuote(String(p.nodeCount)), '--node-rank', shQuote(String(p.nodeRank)), '--master-addr', '"$WORKER_MASTER_ADDR"'];
    if (p.nodeRank > 0) a.push('--headless');
    return a;
  }
  if (plan.backend === 'sglang') {
    return ['--nnodes', shQuote(String(p.nodeCount)), '--node-rank', shQuote(String(p.nodeRank)), '--dist-init-addr', '"$WORKER_MASTER_ADDR:29500"'];
  }
  return [];
}

function roleLabel(g: WorkerGroup): string {
  return g.role === 'agg' ? 'worker' : `${g.role} worker`;
}

function nodeScript(plan: DeployPlan, nodes: Placement[][], index: number): string {
  const placements = nodes[index];
  const needsMaster = plan.backend !== 'trtllm' && placements.some((p) => p.nodeCount > 1);
  const trtllmFollower = plan.backend === 'trtllm' && placements.every((p) => p.nodeRank > 0);
  const L: string[] = [];
  L.push('#!/usr/bin/env bash');
  L.push(commentText(`# Node ${index} of ${nodes.length}: ${plan.modelId} with ${plan.backend} ${plan.version}, ${plan.mode} ${plan.parallel}.`));
  L.push('# Start etcd and NATS on the head node first; set HEAD_NODE_IP on every other node.');
  L.push('set -euo pipefail');
  L.push('');
  L.push('SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"');
  L.push(`MODEL=${shQuote(plan.modelId)}`);
  L.push('HEAD_NODE_IP="${HEAD_NODE_IP:-127.0.0.1}"');
  L.push('export ETCD_ENDPOINTS="${ETCD_ENDPOINTS:-http://${HEAD_NODE_IP}:2379}"');
  L.push('export NATS_SERVER="${NATS_SERVER:-nats://${HEAD_NODE_IP}:4222}"');
  if (index === 0) L.push('HTTP_PORT="${HTTP_PORT:-8000}"');
  if (needsMaster) L.push(`WORKER_MASTER_ADDR="\${WORKER_MASTER_ADDR:?set WORKER_MASTER_ADDR to the IP of node ${placements[0].firstNode}}"`);
  L.push('echo "node ' + index + ': model $MODEL, etcd $ETCD_ENDPOINTS, nats $NATS_SERVER, scripts in $SCRIPT_DIR" >&2');
  L.push('');
  if (trtllmFollower) {
    L.push(`# TRT-LLM multi-node workers are started by mpirun from node ${placements[0].firstNode}; keep this node reachable over SSH.`);
    L.push('exit 0');
    return L.join('\n') + '\n';
  }
  L.push('pids=()');
  L.push('# shellcheck disable=SC2317  # called by the EXIT trap');
  L.push('stop_all() {');
  L.push('  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done');
  L.push('}');
  L.push('trap stop_all EXIT');
  L.push('');
  if (index === 0) {
    const router = plan.prefix > 0 ? ' --router-mode kv' : '';
    L.push('# Frontend (OpenAI-compatible HTTP), only on node 0');
    L.push(`python3 -m dynamo.frontend --http-port "$HTTP_PORT"${router} &`);
    L.push('pids+=("$!")');
    L.push('');
  }
  placements.forEach((p, local) => {
    const g = p.group;
    const cmd = workerCommand(plan, g, portsFor(local));
    const env = [`CUDA_VISIBLE_DEVICES=${shQuote(p.gpus.join(','))}`, `DYN_SYSTEM_PORT=${shQuote(String(8081 + local))}`];
    if (plan.backend === 'vllm') {
      if (plan.dynamo === '0.9') env.push(`DYN_VLLM_KV_EVENT_PORT=${shQuote(String(20080 + local))}`);
      env.push(`VLLM_NIXL_SIDE_CHANNEL_PORT=${shQuote(String(20100 + 16 * local))}`);
    }
    const span = p.nodeCount > 1 ? `, node ${p.nodeRank + 1} of ${p.nodeCount}` : '';
    L.push(`# ${roleLabel(g)} ${p.worker}: ${g.layout.tp}x tp, ${g.layout.pp}x pp, ${g.layout.dp}x dp on GPUs ${p.gpus.join(',')}${span}`);
    for (const n of cmd.notes) L.push(commentText(`# note: ${n}`));
    const launch =
      plan.backend === 'trtllm' && p.nodeCount > 1
        ? [`mpirun --allow-run-as-root -np ${shQuote(String(g.gpusPerWorker))} -H "$WORKER_HOSTS"`, 'trtllm-llmapi-launch']
        : [];
    if (launch.length > 0) L.push(`WORKER_HOSTS="\${WORKER_HOSTS:?set WORKER_HOSTS to host:slots of the ${p.nodeCount} nodes of this worker}"`);
    L.push(`${env.join(' ')} \\`);
    const words = argWords(plan, [...cmd.args]).concat(multinodeArgs(plan, p));
    // One flag (with its value) per line.
    const lines: string[] = [];
    for (const w of words) {
      if (w.startsWith('--') || lines.length === 0) lines.push(w);
      else lines[lines.length - 1] += ` ${w}`;
    }
    L.push(`  ${[...launch, 'python3', '-m', cmd.module].join(' ')} \\`);
    lines.forEach((l, i) => L.push(`    ${l}${i === lines.length - 1 ? ' &' : ' \\'}`));
    L.push('pids+=("$!")');
    L.push('');
  });
  L.push('# Stop everything as soon as one process exits.');
  L.push('wait -n || true');
  L.push(`echo "run_${index}.sh: a process exited; stopping the others" >&2`);
  L.push('exit 1');
  return L.join('\n') + '\n';
}

export interface ScriptFile {
  name: string;
  content: string;
}

/** run_0.sh ... run_<n-1>.sh, one per node. */
export function buildRunScripts(p: PlanInput): ScriptFile[] {
  const plan = derivePlan(p);
  const nodes = packNodes(plan);
  return nodes.map((_, i) => ({ name: `run_${i}.sh`, content: nodeScript(plan, nodes, i) }));
}

/** Concurrencies around the predicted operating point: 0.25x to 1.5x, rounded, unique, ascending. */
export function benchConcurrencies(predicted: number): number[] {
  const c = Math.max(1, Math.round(predicted));
  const set = new Set<number>();
  for (const f of [0.25, 0.5, 0.75, 1, 1.25, 1.5]) set.add(Math.max(1, Math.round(c * f)));
  return [...set].sort((a, b) => a - b);
}

/** bench.sh: an AIPerf sweep whose artifacts land in <script dir>/bench/c<concurrency>/. */
export function buildBenchScript(p: PlanInput): string {
  const plan = derivePlan(p);
  const conc = benchConcurrencies(p.candidate.estimate.metrics.concurrency);
  const synthetic = plan.isl - plan.prefix;
  const L: string[] = [];
  L.push('#!/usr/bin/env bash');
  L.push(`# AIPerf sweep around the predicted operating point (concurrency ${Math.round(p.candidate.estimate.metrics.concurrency)}).`);
  L.push('# Results land in bench/c<concurrency>/ next to this script, where `configure validate --plan` looks.');
  L.push('set -euo pipefail');
  L.push('');
  L.push('SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"');
  L.push(`MODEL=${shQuote(plan.modelId)}`);
  L.push('URL="${URL:-http://localhost:8000}"');
  L.push('REQUESTS_PER_CONCURRENCY="${REQUESTS_PER_CONCURRENCY:-10}"');
  L.push(`CONCURRENCIES=(${conc.map((c) => shQuote(String(c))).join(' ')})`);
  L.push('');
  L.push('for c in "${CONCURRENCIES[@]}"; do');
  L.push('  out="$SCRIPT_DIR/bench/c$c"');
  L.push('  mkdir -p "$out"');
  L.push('  echo "aiperf: concurrency $c -> $out" >&2');
  const args = [
    'aiperf profile',
    '--model "$MODEL"',
    '--tokenizer "$MODEL"',
    '--url "$URL"',
    '--endpoint-type chat',
    '--streaming',
    `--synthetic-input-tokens-mean ${shQuote(String(synthetic))}`,
    '--synthetic-input-tokens-stddev 0',
    `--output-tokens-mean ${shQuote(String(plan.osl))}`,
    '--output-tokens-stddev 0',
    `--extra-inputs ${shQuote(`min_tokens:${plan.osl}`)}`,
    `--extra-inputs ${shQuote('ignore_eos:true')}`,
  ];
  if (plan.prefix > 0) args.push(`--prefix-prompt-length ${shQuote(String(plan.prefix))}`, '--prefix-prompt-pool-size 1');
  args.push(
    '--concurrency "$c"',
    '--request-count "$((c * REQUESTS_PER_CONCURRENCY))"',
    '--warmup-request-count "$c"',
    '--random-seed 100',
    '--ui none',
    '--artifact-dir "$out"',
  );
  L.push(`  ${args.join(' \\\n    ')}`);
  L.push('done');
  return L.join('\n') + '\n';
}
