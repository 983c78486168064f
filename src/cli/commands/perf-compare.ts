// `configure perf compare A B`: per-op error table between two perf-table directories.
import { existsSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import type { Command } from 'commander';
import Table from 'cli-table3';
import { NO_ROW_RULES, PLAIN_STYLE } from '../../output/table.js';
import { printJson, runAction } from '../common.js';
import { compareTables, type CompareReport, type TableMeta } from '../../perf/compare.js';
import { dataPath } from '../../util/paths.js';

interface CompareCliOptions {
  json?: boolean;
  verbose?: boolean;
  interpolate?: boolean;
  system?: string;
}

/** A directory as given, or `<system>/<backend>/<version>` under the bundled data/perf. */
export function resolveTableDir(arg: string): string {
  if (existsSync(arg)) return arg;
  const bundled = dataPath('perf', arg);
  return existsSync(bundled) ? bundled : arg;
}

/** Paths under the working directory are shown relative to it. */
function shown(dir: string): string {
  const rel = relative(process.cwd(), dir);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : dir;
}

function pct(x: number, signed = false): string {
  if (!Number.isFinite(x)) return '-';
  return `${signed && x > 0 ? '+' : ''}${x.toFixed(1)}%`;
}

function describeMeta(meta: TableMeta | null): string {
  if (!meta) return 'no meta.yaml';
  const parts = [meta.kind, meta.system, meta.backend, meta.version].filter((v) => v !== undefined && v !== null);
  const on = meta.kind === 'measured' ? meta.gpu : meta.calibrated_on;
  return parts.join(' ') + (on ? ` (${String(on)})` : '');
}

/** The console report: one row per table and dtype group, then the overall row. */
export function renderCompare(r: CompareReport): string {
  const interp = r.interpolationSystem !== null;
  const head = ['op', 'group', 'rows', ...(interp ? ['interpolated'] : []), 'median |err|', 'p90 |err|', 'bias', 'max |err|', 'only A', 'only B'];
  const table = new Table({
    head,
    ...PLAIN_STYLE,
    // No rule between body rows: the table can run to dozens of rows.
    chars: NO_ROW_RULES,
    colAligns: head.map((_, i) => (i < 2 ? 'left' : 'right')),
  });
  // Groups that only B has (e.g. dtypes A did not measure) are listed in one note instead of empty rows.
  const onlyB = r.groups.filter((g) => g.count === 0 && g.onlyA === 0);
  for (const g of r.groups.filter((x) => !onlyB.includes(x)))
    table.push([g.op, g.group || '-', g.count, ...(interp ? [g.interpolated] : []), pct(g.medianAbsPct), pct(g.p90AbsPct), pct(g.biasPct, true), pct(g.maxAbsPct), g.onlyA, g.onlyB]);
  const o = r.overall;
  const interpTotal = r.groups.reduce((acc, g) => acc + g.interpolated, 0);
  table.push(['all', '', o.count, ...(interp ? [interpTotal] : []), pct(o.medianAbsPct), pct(o.p90AbsPct), pct(o.biasPct, true), pct(o.maxAbsPct), '', '']);
  const lines = [
    `A (reference): ${shown(r.dirA)}  [${describeMeta(r.metaA)}]`,
    `B (compared):  ${shown(r.dirB)}  [${describeMeta(r.metaB)}]`,
    `error = ${r.errorDefinition}; bias > 0: B is slower than A`,
    ...(interp ? [`interpolation uses the ${r.interpolationSystem} roofline outside B's grid`] : []),
    table.toString(),
    ...r.notes.map((n) => `note: ${n}`),
  ];
  if (onlyB.length) lines.push(`note: only in B: ${onlyB.map((g) => (g.group ? `${g.op} ${g.group}` : g.op)).join(', ')}`);
  if (o.count === 0) lines.push('note: no row has the same key in both directories; nothing was compared');
  return lines.join('\n');
}

/** Adds `compare <dirA> <dirB>` to the `perf` command group. */
export function registerPerfCompare(perf: Command): void {
  perf
    .command('compare')
    .description('per-op error between two perf-table directories (A is the reference, e.g. measured; B e.g. synthesized)')
    .argument('<dirA>', 'reference tables: a directory, or <system>/<backend>/<version> under data/perf')
    .argument('<dirB>', 'tables to check against A (same forms)')
    .option('--interpolate', "estimate B at A's rows that B lacks, with the planner's table lookup")
    .option('--system <name>', 'system whose roofline guides --interpolate (default: from meta.yaml of B, else A)')
    .option('--json', 'print one JSON document on stdout')
    .option('--verbose', 'show stack traces on internal errors')
    .action(async (dirA: string, dirB: string, _opts: CompareCliOptions, cmd: Command) => {
      // With globals: the parent `perf` group may define --json or --system itself and take them first.
      const opts = cmd.optsWithGlobals<CompareCliOptions>();
      await runAction(opts, () => {
        const report = compareTables(resolveTableDir(dirA), resolveTableDir(dirB), { interpolate: opts.interpolate, system: opts.system });
        if (opts.json) printJson(report);
        else process.stdout.write(renderCompare(report) + '\n');
      });
    });
}
