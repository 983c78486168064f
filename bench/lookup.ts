// Lookup speed: GEMM lookups per second through the engine's path, and `configure perf query` throughput
// for 100,000 mixed queries (in-process and as a CLI process). Usage: npm run bench:lookup
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { loadSystem } from '../src/inputs/systems.js';
import { loadPerfSource } from '../src/perf/index.js';
import { answerLines } from '../src/perf/query.js';
import { projectRoot } from '../src/util/paths.js';
import type { Dtype } from '../src/inputs/types.js';
import { rng } from '../src/util/rng.js';

const r = rng(42);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const sys = loadSystem('h200_sxm');
const t0 = performance.now();
const src = await loadPerfSource({ system: sys, backend: 'vllm', version: '0.19.0' });
src.gemm({ dtype: 'bfloat16', m: 1, n: 1024, k: 1024 });
const loadMs = performance.now() - t0;

// GEMM lookups: shapes of dense layers at tp 1..8 and token counts 1..65536.
const N = 2_000_000;
const ms = new Float64Array(4096), ns = new Float64Array(4096), ks = new Float64Array(4096);
const dts: Dtype[] = [];
for (let i = 0; i < 4096; i++) {
  ms[i] = Math.max(1, Math.floor(2 ** (r() * 16)));
  ns[i] = pick([1024, 1280, 2560, 3584, 5120, 6144, 7168, 8192, 14336, 28672, 151936 / 4]);
  ks[i] = pick([1024, 2048, 3584, 4096, 5120, 8192, 3072, 14336]);
  dts.push(pick(['bfloat16', 'fp8', 'fp8_block'] as Dtype[]));
}
let sink = 0;
const g0 = performance.now();
for (let i = 0; i < N; i++) {
  const j = i & 4095;
  sink += src.gemm({ dtype: dts[j]!, m: ms[j]!, n: ns[j]!, k: ks[j]! });
}
const gemmSec = (performance.now() - g0) / 1000;

// Mixed perf-query lines.
const systems = [['h200_sxm', 'vllm', '0.19.0'], ['b200_sxm', 'trtllm', '1.2.0rc5'], ['h100_sxm', 'sglang', '0.5.9']];
const lines: string[] = [];
for (let i = 0; i < 100_000; i++) {
  const [system, backend, version] = pick(systems)!;
  const base = { system, backend, version };
  const op = pick(['gemm', 'gemm', 'context_attention', 'generation_attention', 'allreduce', 'nccl', 'moe']);
  let q: Record<string, unknown>;
  switch (op) {
    case 'gemm': q = { op, dtype: pick(['bfloat16', 'fp8']), m: Math.floor(2 ** (r() * 16)) + 1, n: pick([4096, 6144, 14336]), k: pick([4096, 5120, 8192]) }; break;
    case 'context_attention': q = { op, batch: pick([1, 2, 4]), seq: Math.floor(2 ** (4 + r() * 13)), heads: pick([8, 16, 32]), kv_heads: pick([1, 2, 8]), head_dim: 128, dtype: 'bfloat16', kv_dtype: 'bfloat16', window: 0 }; break;
    case 'generation_attention': q = { op, batch: pick([1, 8, 64, 256]), kv_len: Math.floor(2 ** (4 + r() * 13)), heads: pick([8, 32]), kv_heads: pick([1, 8]), head_dim: 128, kv_dtype: 'bfloat16', window: 0 }; break;
    case 'allreduce': q = { op, dtype: 'bfloat16', gpus: pick([2, 4, 8]), elements: Math.floor(2 ** (10 + r() * 18)) }; break;
    case 'nccl': q = { op, collective: pick(['all_gather', 'alltoall', 'reduce_scatter']), dtype: 'bfloat16', gpus: pick([2, 4, 8]), elements: Math.floor(2 ** (10 + r() * 18)) }; break;
    default: q = { op, dtype: 'bfloat16', tokens: Math.floor(2 ** (r() * 14)) + 1, hidden: 4096, inter: 1536, topk: 8, experts: 128, moe_tp: 1, moe_ep: pick([1, 2, 4, 8]) };
  }
  lines.push(JSON.stringify({ ...base, ...q }));
}
const q0 = performance.now();
const out = await answerLines(lines);
const querySec = (performance.now() - q0) / 1000;
const errors = out.filter((l) => l.includes('"error"')).length;

const cli = join(projectRoot(), 'src', 'cli', 'main.ts');
const c0 = performance.now();
const proc = spawnSync(process.execPath, ['--import', 'tsx', cli, 'perf', 'query'], { input: lines.join('\n') + '\n', maxBuffer: 1 << 28, encoding: 'utf8' });
const cliSec = (performance.now() - c0) / 1000;
const cliLines = proc.stdout ? proc.stdout.split('\n').filter(Boolean).length : 0;

console.log(`table load (h200_sxm vllm 0.19.0, first GEMM): ${loadMs.toFixed(0)} ms`);
console.log(`GEMM lookups: ${(N / gemmSec / 1e6).toFixed(2)} M/s on one core (${N} lookups, checksum ${sink.toExponential(3)})`);
console.log(`perf query, in-process: 100000 mixed queries in ${querySec.toFixed(2)} s (${errors} errors)`);
console.log(`perf query, CLI process (tsx, includes startup): ${cliLines} lines in ${cliSec.toFixed(2)} s${proc.status ? ` (exit ${proc.status})` : ''}`);
