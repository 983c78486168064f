// Whole-process wall time of the CLI as users run it (node dist/cli/main.js, built first): the README's main
// command, `configure systems`, `configure --version` and one `estimate`. Prints the median (and min, max) of
// 5 runs each, and the machine's load average, which the figures depend on.
// Usage: npm run bench:cli [-- --runs 9] [-- --no-build]
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/util/paths.js';

const args = process.argv.slice(2);
const runs = args.includes('--runs') ? Number(args[args.indexOf('--runs') + 1]) : 5;
const root = projectRoot();
if (!args.includes('--no-build')) {
  const b = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (b.status !== 0) throw new Error('npm run build failed');
}
const main = join(root, 'dist', 'cli', 'main.js');

const CASES: [string, string[]][] = [
  ['default (README)', ['default', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--total-gpus', '8', '--isl', '4000', '--osl', '500', '--ttft', '600', '--tpot', '16.67']],
  ['systems', ['systems']],
  ['--version', ['--version']],
  ['estimate (tp 4, batch 32)', ['estimate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--tp', '4', '--batch-size', '32', '--isl', '4000', '--osl', '500']],
];

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const before = loadavg();
const width = Math.max(...CASES.map(([name]) => name.length));
for (const [name, argv] of CASES) {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const p = spawnSync(process.execPath, [main, ...argv], { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
    times.push((performance.now() - t0) / 1000);
    if (p.status !== 0) throw new Error(`configure ${argv.join(' ')} exited ${p.status}: ${p.stderr.trim().split('\n').at(-1)}`);
  }
  console.log(`${name.padEnd(width)}  median ${median(times).toFixed(3)} s  (min ${Math.min(...times).toFixed(3)}, max ${Math.max(...times).toFixed(3)}, ${runs} runs)`);
}
const after = loadavg();
console.log(`load average (1 min) ${before[0]!.toFixed(2)} before, ${after[0]!.toFixed(2)} after; ${process.version}`);
