// The collector's Python writer and the TypeScript readers agree on the table format: tables written by
// collector.tables are read by `perf compare` and by the planner's own CSV parser.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compareTables, parseTableCsv } from '../../src/perf/compare.js';
import { OP_SPECS, PACKED_FILE, packedAsCsv, parseCsv } from '../../src/perf/tables.js';
import { loadPerfSource } from '../../src/perf/index.js';
import { loadSystem } from '../../src/inputs/systems.js';
import { dataPath } from '../../src/util/paths.js';

const probe = spawnSync('python3', ['-c', 'import sys; print(sys.version_info >= (3, 8))'], { encoding: 'utf8' });
const havePython = probe.status === 0 && probe.stdout.trim() === 'True';

/** A synthesized h200_sxm directory that has tables of its own (packed), if the tables are built. */
function synthesizedDir(): string | undefined {
  const sys = dataPath('perf', 'h200_sxm');
  if (!existsSync(sys)) return undefined;
  for (const backend of readdirSync(sys).filter((b) => b !== 'torch').sort())
    for (const version of readdirSync(join(sys, backend)).sort()) {
      const dir = join(sys, backend, version);
      if (existsSync(join(dir, PACKED_FILE))) return dir;
    }
  return undefined;
}

/** The synthesized GEMM table as the CSV text perf:build -- --csv exports. */
const synthGemmCsv = (dir: string): string => packedAsCsv(readFileSync(join(dir, PACKED_FILE)), dir)['gemm.csv']!;

const synth = synthesizedDir();
if (!havePython) console.log('collector format test skipped: python3 not found');
else if (!synth) console.log('collector format test skipped: no synthesized h200_sxm tables under data/perf');

const tmp = mkdtempSync(join(tmpdir(), 'collector-format-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe.skipIf(!havePython || !synth)('collector tables read by perf compare', () => {
  it('tables written by Python join with synthesized ones and load as --perf-data', async () => {
    const b = parseTableCsv(synthGemmCsv(synth!), 'gemm.csv');
    const picked = b.rows.filter((r) => r.dtype === 'bfloat16').slice(0, 20);
    expect(picked.length).toBeGreaterThan(0);
    // Measured = synthesized x 1.25, so B is 20% faster than A on every joined row.
    const rows = picked.map((r) => ({ dtype: r.dtype, m: Number(r.m), n: Number(r.n), k: Number(r.k), latency_ms: Number(r.latency_ms) * 1.25 }));
    const script = [
      'import json, sys',
      'from collector import env, tables',
      'rows = json.load(sys.stdin)',
      'd = tables.table_dir(sys.argv[1], "h200_sxm", "2.5.1+cu124")',
      'ts = tables.TableSet()',
      '[ts.add("gemm", r) for r in rows]',
      '[ts.add("elementwise", {"op": "memory", "bytes": 1 << e, "latency_ms": 0.002 + (1 << e) / 4.0e9}) for e in range(20, 31, 2)]',
      'ts.write(d)',
      'tables.write_meta(d, env.measured_meta("h200_sxm", "2.5.1+cu124", "12.4", "NVIDIA H200", "550.54.15", "2026-12-02", "test"))',
      'print(d)',
    ].join('\n');
    const res = spawnSync('python3', ['-c', script, tmp], {
      cwd: new URL('../..', import.meta.url),
      input: JSON.stringify(rows),
      encoding: 'utf8',
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(res.status, res.stderr).toBe(0);
    const measured = res.stdout.trim();
    expect(measured).toBe(join(tmp, 'h200_sxm', 'torch', '2.5.1'));

    // The planner's parser accepts the file.
    const parsed = parseCsv(OP_SPECS.gemm, readFileSync(join(measured, 'gemm.csv'), 'utf8'), 'gemm.csv');
    expect(parsed).toHaveLength(picked.length);

    const report = compareTables(measured, synth!);
    expect(report.metaA).toMatchObject({ kind: 'measured', backend: 'torch', version: '2.5.1', torch: '2.5.1+cu124', cuda: '12.4', date: '2026-12-02' });
    const g = report.groups.find((x) => x.op === 'gemm' && x.group === 'bfloat16')!;
    expect(g.count).toBe(picked.length);
    expect(g.onlyA).toBe(0);
    // 5 significant digits in the measured file: within 0.01% of -20%.
    expect(Math.abs(g.biasPct + 20)).toBeLessThan(0.01);
    expect(Math.abs(g.medianAbsPct - 20)).toBeLessThan(0.01);

    // The planner can plan from the measured directory (--perf-data): the elementwise lookup reads it.
    const src = await loadPerfSource({ system: loadSystem('h200_sxm'), backend: 'vllm', version: '0.14.0', perfData: measured });
    expect(src.info.kind).toBe('measured');
    const bytes = 1 << 24;
    expect(src.elementwise({ bytes })).toBeCloseTo(0.002 + bytes / 4.0e9, 6);
  });
});
