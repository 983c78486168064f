// Bare-metal launch scripts (one per node) and the AIPerf sweep that checks the prediction. The fixed text
// is in templates/run.sh.tmpl and templates/bench.sh.tmpl; every value filled in here is shell-quoted.
import { DEFAULT_PORTS, ENGINE_CONFIG_DIR, flagVars, workerCommand, type WorkerPorts } from './engine-args.js';
import { derivePlan, hostGpus, type DeployPlan, type PlanInput, type WorkerGroup } from './plan.js';
import { backendFlagsOf, evalEnv, evalFlags, renderTemplate } from './templates.js';

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
    nixlSideChannelPort: DEFAULT_PORTS.nixlSideChannelPort + 16 * local,
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

/** Flags of a worker spread over several nodes (templates/engine-flags.yaml multinode_args). */
function multinodeArgs(plan: DeployPlan, p: Placement): string[] {
  if (p.nodeCount === 1) return [];
  const vars = { node_count: p.nodeCount, node_rank: p.nodeRank, multinode_follower: p.nodeRank > 0 };
  return evalFlags(backendFlagsOf(plan.backend).multinode_args, vars).flatMap((o) =>
    o.value !== undefined ? [o.flag, shQuote(o.value)] : o.shell !== undefined ? [o.flag, o.shell] : [o.flag],
  );
}

function roleLabel(g: WorkerGroup): string {
  return g.role === 'agg' ? 'worker' : `${g.role} worker`;
}

/** The launch lines of one worker on this node. */
function workerBlock(plan: DeployPlan, p: Placement, local: number): string[] {
  const L: string[] = [];
  const g = p.group;
  const ports = portsFor(local);
  const cmd = workerCommand(plan, g, ports);
  const env = [`CUDA_VISIBLE_DEVICES=${shQuote(p.gpus.join(','))}`, `DYN_SYSTEM_PORT=${shQuote(String(8081 + local))}`];
  for (const e of evalEnv(backendFlagsOf(plan.backend).worker_env, flagVars(plan, g, ports))) env.push(`${e.name}=${shQuote(e.value)}`);
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
  return L;
}

function nodeScript(plan: DeployPlan, nodes: Placement[][], index: number): string {
  const placements = nodes[index];
  const trtllmFollower = plan.backend === 'trtllm' && placements.every((p) => p.nodeRank > 0);
  return renderTemplate('run.sh.tmpl', {
    index: String(index),
    node_count: String(nodes.length),
    summary: commentText(`${plan.modelId} with ${plan.backend} ${plan.version}, ${plan.mode} ${plan.parallel}`),
    model: shQuote(plan.modelId),
    head: index === 0,
    needs_master: plan.backend !== 'trtllm' && placements.some((p) => p.nodeCount > 1),
    master_node: String(placements[0].firstNode),
    follower: trtllmFollower,
    router: plan.prefix > 0 ? ' --router-mode kv' : '',
    // A follower's workers are started from another node; its script never shows them.
    workers: trtllmFollower ? '' : placements.flatMap((p, local) => workerBlock(plan, p, local)).join('\n'),
  });
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
  const conc = benchConcurrencies(plan.concurrency);
  return renderTemplate('bench.sh.tmpl', {
    concurrency: String(plan.concurrency),
    model: shQuote(plan.modelId),
    concurrencies: conc.map((c) => shQuote(String(c))).join(' '),
    synthetic_isl: shQuote(String(plan.isl - plan.prefix)),
    osl: shQuote(String(plan.osl)),
    min_tokens: shQuote(`min_tokens:${plan.osl}`),
    has_prefix: plan.prefix > 0,
    prefix: shQuote(String(plan.prefix)),
  });
}
