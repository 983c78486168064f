// `configure systems`: the bundled GPU systems, their key figures, and the engine versions each supports.
import type { Command } from 'commander';
import { alignColumns } from '../../util/format.js';
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

/** Words in lines of at most `width` characters (a longer word stands alone). */
function wrapWords(words: string[], width: number): string[] {
  const lines: string[] = [];
  for (const w of words) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last]!.length + 1 + w.length <= width) lines[last] += ` ${w}`;
    else lines.push(w);
  }
  return lines;
}

/**
 * Plain aligned columns, one line per backend (its versions wrapped) and the system's figures on its first line.
 * A box-drawing table library took two thirds of this command's own run time laying out these cells.
 */
export function systemsTable(systems: SystemSpec[]): string {
  const rows: string[][] = [['system', 'GPU', 'HBM GiB', 'HBM GB/s', 'TFLOPS bf16/fp8/fp4', 'GPUs/node', 'GB/s per GPU (scale-up, net)', 'backend', 'versions (* = default)']];
  for (const s of systems) {
    const t = s.gpu.tflops;
    const flops = [t.bfloat16, t.fp8 ?? '-', t.nvfp4 ?? '-'].join('/');
    let figures = [s.name, s.gpu.name, s.gpu.memGiB, s.gpu.memBwGBs, flops, s.gpusPerNode, `${s.intraNodeLink} ${s.intraNodeBwGBs}, ${s.interNodeBwGBs}`].map(String);
    if (rows.length > 1) rows.push([]);
    for (const b of BACKENDS.filter((x) => s.backends[x])) {
      const sup = s.backends[b]!;
      wrapWords(sup.versions.map((v) => (v === sup.default ? `${v}*` : v)), 52).forEach((line, i) => {
        rows.push([...figures, i === 0 ? b : '', line]);
        figures = figures.map(() => '');
      });
    }
  }
  return alignColumns(rows, { right: (i) => i >= 2 && i <= 5, rule: true }).join('\n');
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
