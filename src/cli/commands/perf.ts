// `configure perf`: the performance tables. `perf tables` lists them; `perf query` answers op latencies
// for JSON lines on stdin; `perf compare` (registered from perf-compare.ts) diffs two table directories.
import type { Command } from 'commander';
import Table from 'cli-table3';
import { PLAIN_STYLE } from '../../output/table.js';
import { printJson, runAction } from '../common.js';
import { listPerfTables } from '../../perf/index.js';
import { answerLines } from '../../perf/query.js';
import { registerPerfCompare } from './perf-compare.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function registerPerf(program: Command): void {
  const perf = program.command('perf').description('performance tables: list them, query op latencies, compare two table sets');

  perf
    .command('tables')
    .description('list the bundled table directories (system, backend, version) and how each was made')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) =>
      runAction(opts, () => {
        const rows = listPerfTables();
        if (opts.json) {
          printJson(rows.map((t) => ({ system: t.system, backend: t.backend, version: t.version, dir: t.dir, meta: t.meta })));
          return;
        }
        const table = new Table({ head: ['system', 'backend', 'version', 'kind', 'calibrated on', 'tables'], ...PLAIN_STYLE });
        for (const t of rows)
          table.push([t.system, t.backend, t.version, t.meta.kind, String(t.meta.calibrated_on ?? '-'), t.meta.tables_from ? `same as ${t.meta.tables_from}` : 'own']);
        process.stdout.write(table.toString() + '\n');
        process.stdout.write(`${rows.length} table directories\n`);
      }),
    );

  perf
    .command('query')
    .description('read JSON lines on stdin ({"system","backend","version","op",...}) and write each with latency_ms (or error)')
    .option('--system <name>', 'default system for lines without one')
    .option('--backend <name>', 'default backend for lines without one')
    .option('--backend-version <version>', 'default engine version for lines without one')
    .option('--perf-data <dir>', 'default table source: a directory in our format or an aiconfigurator data directory')
    .option('--json', 'accepted for symmetry; output is always JSON lines')
    .addHelpText('after', `
ops: gemm, context_attention, generation_attention, allreduce, nccl, moe, mla, and the hybrid / sparse-attention families:
  {"op":"linear_attention","kind":"gdn|mamba2|kda","phase":"context|generation","batch":8,"seq":1024,"heads":64,"key_heads":16}
  {"op":"sparse_attention","kind":"dsa|dsv4_csa|dsv4_hca|minimax_msa","phase":"generation","batch":32,"seq":8192,"heads":16}
  {"op":"hyper_connection","tokens":4096,"hidden":4096,"multiplier":4}
  {"op":"quantize","mode":"dynamic","m":4096,"k":7168}
Head counts are per GPU; dimensions left out default to Qwen3.5-397B (gdn), Nemotron-3-Super (mamba2), Kimi linear (kda),
DeepSeek-V3.2 (dsa), DeepSeek-V4-Flash (dsv4_*) and MiniMax-M3 (minimax_msa).`)
    .action(async (opts: { system?: string; backend?: string; backendVersion?: string; perfData?: string; json?: boolean }) =>
      runAction({}, async () => {
        const text = await readStdin();
        const out = await answerLines(text.split('\n'), {
          ...(opts.system ? { system: opts.system } : {}),
          ...(opts.backend ? { backend: opts.backend } : {}),
          ...(opts.backendVersion ? { version: opts.backendVersion } : {}),
          ...(opts.perfData ? { perfData: opts.perfData } : {}),
        });
        if (out.length) process.stdout.write(out.join('\n') + '\n');
      }),
    );

  registerPerfCompare(perf);
}
