// Speed of `configure default`: wall time of the whole built CLI process (node start to exit, no --save-dir)
// and candidates evaluated per second, for three reference cases. Run with `npm run bench:sweep [-- --runs N]`.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import os from 'node:os';
import Table from 'cli-table3';

interface Case {
  name: string;
  args: string[];
}

const CASES: Case[] = [
  { name: 'Qwen3-32B 8 x h200_sxm vllm', args: ['--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--total-gpus', '8', '--backend', 'vllm'] },
  { name: 'Llama-3.1-70B 16 x h100_sxm trtllm', args: ['--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h100_sxm', '--total-gpus', '16', '--backend', 'trtllm'] },
  { name: 'gpt-oss-120b 8 x b200_sxm sglang', args: ['--hf-id', 'openai/gpt-oss-120b', '--system', 'b200_sxm', '--total-gpus', '8', '--backend', 'sglang'] },
];

interface ModeDoc {
  evaluated: number;
  screened: number;
  engineCalls: number;
}
interface Doc {
  evaluated: number;
  elapsed: { searchMs: number; searchCpuMs: number | null };
  agg: ModeDoc | null;
  disagg: ModeDoc | null;
  verdict: { text: string };
}

/** CPU time (user + system) of waited-for children so far, ms (Linux /proc; undefined elsewhere). */
function childrenCpuMs(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 16 and 17 of stat (cutime, cstime) are at 13 and 14 after the command name.
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function main(): void {
  const runsFlag = process.argv.indexOf('--runs');
  const runs = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : 7;
  const cli = join(process.cwd(), 'dist', 'cli', 'main.js');
  if (!existsSync(cli)) {
    console.error(`bench:sweep: ${cli} not found; run \`npm run build\` first`);
    process.exit(1);
  }
  const table = new Table({
    style: { head: [], border: [] },
    head: ['case', 'runs', 'wall ms (median)', 'min', 'max', 'cpu ms (median)', 'search ms', 'search cpu ms', 'evaluated', 'priced by the model', 'rate-matched only', 'candidates/s', 'candidates/cpu-s', 'verdict'],
  });
  let failed = false;
  for (const c of CASES) {
    const walls: number[] = [];
    const searches: number[] = [];
    const cpus: number[] = [];
    const searchCpus: number[] = [];
    let doc: Doc | undefined;
    for (let i = 0; i < runs; i++) {
      const cpu0 = childrenCpuMs();
      const t0 = process.hrtime.bigint();
      const r = spawnSync(process.execPath, [cli, 'default', ...c.args, '--json'], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const cpu1 = childrenCpuMs();
      if (cpu0 !== undefined && cpu1 !== undefined) cpus.push(cpu1 - cpu0);
      if (r.status !== 0) {
        console.error(`${c.name}: exit ${r.status}: ${r.stderr.trim().split('\n').pop()}`);
        failed = true;
        break;
      }
      doc = JSON.parse(r.stdout) as Doc;
      walls.push(ms);
      searches.push(doc.elapsed.searchMs);
      if (doc.elapsed.searchCpuMs !== null) searchCpus.push(doc.elapsed.searchCpuMs);
    }
    if (!doc || walls.length === 0) continue;
    const screened = (doc.agg?.screened ?? 0) + (doc.disagg?.screened ?? 0);
    const priced = doc.evaluated - screened;
    const s = median(searches);
    const sc = searchCpus.length ? median(searchCpus) : undefined;
    table.push([
      c.name,
      String(walls.length),
      median(walls).toFixed(0),
      Math.min(...walls).toFixed(0),
      Math.max(...walls).toFixed(0),
      cpus.length ? median(cpus).toFixed(0) : 'n/a',
      s.toFixed(0),
      sc !== undefined ? sc.toFixed(0) : 'n/a',
      String(doc.evaluated),
      String(priced),
      String(screened),
      String(Math.round(doc.evaluated / (s / 1000))),
      sc !== undefined ? String(Math.round(doc.evaluated / (sc / 1000))) : 'n/a',
      doc.verdict.text,
    ]);
  }
  console.log(table.toString());
  console.log('wall: node start to exit of `node dist/cli/main.js default ... --json`; cpu: user+system time of that process;');
console.log(`candidates/s: evaluated / search wall time (in-process); candidates/cpu-s: evaluated / search CPU time; priced: evaluated by the inference model, the rest are disagg worker splits scored by rate matching. ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}.`);
  if (failed) process.exitCode = 1;
}

main();
