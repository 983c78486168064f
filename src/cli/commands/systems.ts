// `configure systems`: the bundled GPU systems, their key figures, and the engine versions each supports.
import type { Command } from 'commander';
import Table from 'cli-table3';
import { PLAIN_STYLE } from '../../output/table.js';
import { addGlobalOptions, type GlobalOptions, printJson, runAction } from '../common.js';
import { systemsMarkdown } from '../../inputs/markdown.js';
import { listSystems } from '../../inputs/systems.js';
import { BACKENDS, type SystemSpec } from '../../inputs/types.js';

const EXAMPLES = `
Examples:
  $ configure systems                 # table of systems, GPUs, memory and engine versions
  $ configure systems --json          # the full system specs as one JSON document
  $ configure systems --markdown      # the same table in Markdown
`;

export function systemsTable(systems: SystemSpec[]): string {
  const table = new Table({
    head: ['system', 'GPU', 'HBM GiB', 'HBM GB/s', 'dense TFLOPS\nbf16/fp8/fp4', 'GPUs/\nnode', 'GB/s per GPU\nscale-up, net', 'backend', 'versions (* = default)'],
    colWidths: [null, null, null, null, null, null, null, null, 52],
    wordWrap: true,
    ...PLAIN_STYLE,
  });
  // One row per backend, the system's figures spanning them: cli-table3 spends time quadratic in a cell's
  // length on each line of a cell of several lines (it was a third of this command's run time).
  for (const s of systems) {
    const t = s.gpu.tflops;
    const flops = [t.bfloat16, t.fp8 ?? '-', t.nvfp4 ?? '-'].join('/');
    const link = `${s.intraNodeLink} ${s.intraNodeBwGBs}, ${s.interNodeBwGBs}`;
    const backends = BACKENDS.filter((b) => s.backends[b]);
    const figures = [s.name, s.gpu.name, s.gpu.memGiB, s.gpu.memBwGBs, flops, s.gpusPerNode, link].map((content) => ({ content, rowSpan: backends.length }));
    backends.forEach((b, i) => {
      const sup = s.backends[b]!;
      const versions = sup.versions.map((v) => (v === sup.default ? `${v}*` : v)).join(' ');
      table.push(i === 0 ? [...figures, b, versions] : [b, versions]);
    });
  }
  return table.toString();
}

export function registerSystems(program: Command): void {
  const cmd = program
    .command('systems')
    .description('list the bundled GPU systems with their figures and the supported engine versions')
    .addHelpText('after', EXAMPLES);
  cmd.option('--markdown', 'print a Markdown table (as in the README)');
  addGlobalOptions(cmd).action(async (opts: GlobalOptions & { markdown?: boolean }) =>
    runAction(opts, () => {
      const systems = listSystems();
      if (opts.json) printJson({ systems });
      else if (opts.markdown) process.stdout.write(systemsMarkdown(systems) + '\n');
      else process.stdout.write(systemsTable(systems) + '\n');
    }),
  );
}
