import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Command } from 'commander';
import { compareTables, errorStats, p90Floor, parseTableCsv, quantile } from '../../src/perf/compare.js';
import { registerPerfCompare, renderCompare } from '../../src/cli/commands/perf-compare.js';
import { InputError } from '../../src/util/errors.js';

let root: string;
let dirA: string;
let dirB: string;

function write(dir: string, file: string, text: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, file), text);
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'perf-compare-'));
  dirA = join(root, 'measured');
  dirB = join(root, 'synth');
  write(dirA, 'meta.yaml', 'system: h200_sxm\nbackend: torch\nversion: 2.5.1\nkind: measured\ncalibrated_on: "measured on NVIDIA H200"\nborrowed: false\ngenerator: test\ngpu: "NVIDIA H200"\ndriver: "550"\ntorch: 2.5.1\ncuda: "12.4"\ndate: "2026-12-02"\n');
  write(dirB, 'meta.yaml', 'system: h200_sxm\nbackend: vllm\nversion: 0.12.0\nkind: synthesized\ncalibrated_on: vllm 0.12.0\nborrowed: false\ngenerator: test\n');
  // bf16: B is 10%, 20%, -10%, 0% off; fp8: B is +50% on both; one row only in A, one only in B.
  write(dirA, 'gemm.csv', [
    'dtype,m,n,k,latency_ms',
    'bfloat16,1,4096,4096,1.0',
    'bfloat16,2,4096,4096,2.0',
    'bfloat16,4,4096,4096,4.0',
    'bfloat16,8,4096,4096,8.0',
    'fp8,1,4096,4096,1.0',
    'fp8,2,4096,4096,2',
    'fp8,4,4096,4096,3',
  ].join('\n') + '\n');
  write(dirB, 'gemm.csv', [
    '# synthesized',
    'dtype,m,n,k,latency_ms',
    'bfloat16,1.0,4096,4096,1.1', // numeric keys are canonicalised
    'bfloat16,2,4096,4096,2.4',
    'bfloat16,4,4096,4096,3.6',
    'bfloat16,8,4096,4096,8',
    'fp8,1,4096,4096,1.5',
    'fp8,2,4096,4096,3',
    'fp8,16,4096,4096,9',
    '',
  ].join('\n'));
  write(dirA, 'elementwise.csv', 'op,bytes,latency_ms\ncopy,1048576,0.01\nadd,1048576,0.02\n');
  write(dirB, 'elementwise.csv', 'op,bytes,latency_ms\ncopy,1048576,0.0105\nadd,1048576,0.018\n');
  write(dirA, 'nccl.csv', 'collective,dtype,gpus,elements,latency_ms\nall_reduce,bfloat16,2,1024,0.01\n');
  write(dirB, 'moe.csv', 'dtype,tokens,hidden,inter,topk,experts,moe_tp,moe_ep,latency_ms\nbfloat16,1,4096,1536,8,128,1,1,0.1\n');
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('errorStats and quantile', () => {
  it('computes median, p90, bias and max of the relative error', () => {
    const s = errorStats([
      [1, 1.1],
      [2, 2.4],
      [4, 3.6],
      [8, 8],
    ]);
    expect(s.count).toBe(4);
    expect(s.medianAbsPct).toBeCloseTo(10, 9); // |err| = 0, 10, 10, 20
    expect(s.p90AbsPct).toBeCloseTo(17, 9); // 10 + 0.7 * (20 - 10)
    expect(s.biasPct).toBeCloseTo(5, 9); // signed = -10, 0, 10, 20
    expect(s.maxAbsPct).toBeCloseTo(20, 9);
  });
  it('is NaN without rows', () => {
    expect(errorStats([]).medianAbsPct).toBeNaN();
    expect(quantile([3], 0.9)).toBe(3);
  });
});

describe('parseTableCsv', () => {
  it('skips comments and blank lines', () => {
    const t = parseTableCsv('# c\n\nop,bytes,latency_ms\ncopy,4,0.1\n', 'x.csv');
    expect(t.header).toEqual(['op', 'bytes', 'latency_ms']);
    expect(t.rows).toEqual([{ op: 'copy', bytes: '4', latency_ms: '0.1' }]);
  });
  it('names the file and line of a malformed row', () => {
    expect(() => parseTableCsv('op,bytes,latency_ms\ncopy,4\n', 'x.csv')).toThrow(/x\.csv:2: expected 3 cells/);
    expect(() => parseTableCsv('op,bytes\ncopy,4\n', 'y.csv')).toThrow(InputError);
  });
});

describe('compareTables', () => {
  it('joins on exact keys per table and dtype group', () => {
    const r = compareTables(dirA, dirB);
    expect(r.groups.map((g) => `${g.op}:${g.group}`)).toEqual([
      'elementwise:add',
      'elementwise:copy',
      'gemm:bfloat16',
      'gemm:fp8',
    ]);
    const bf16 = r.groups.find((g) => g.group === 'bfloat16')!;
    expect(bf16.count).toBe(4);
    expect(bf16.medianAbsPct).toBeCloseTo(10, 9);
    expect(bf16.biasPct).toBeCloseTo(5, 9);
    expect([bf16.onlyA, bf16.onlyB]).toEqual([0, 0]);
    const fp8 = r.groups.find((g) => g.group === 'fp8')!;
    expect([fp8.count, fp8.onlyA, fp8.onlyB]).toEqual([2, 1, 1]);
    expect(fp8.medianAbsPct).toBeCloseTo(50, 9);
    expect(fp8.biasPct).toBeCloseTo(50, 9);
    const add = r.groups.find((g) => g.group === 'add')!;
    expect(add.biasPct).toBeCloseTo(-10, 9);
    expect(r.overall.count).toBe(8);
    expect(r.notes).toEqual(['nccl.csv: only in A', 'moe.csv: only in B']);
    expect(r.metaA?.kind).toBe('measured');
    expect(r.metaB?.backend).toBe('vllm');
  });

  it('swapping A and B changes the reference', () => {
    const r = compareTables(dirB, dirA);
    const fp8 = r.groups.find((g) => g.group === 'fp8')!;
    expect(fp8.biasPct).toBeCloseTo(-100 / 3, 9);
  });

  it('rejects a missing or empty directory with an input error', () => {
    expect(() => compareTables(join(root, 'nope'), dirB)).toThrow(/A ".*nope" is not a directory/);
    const empty = join(root, 'empty');
    mkdirSync(empty, { recursive: true });
    expect(() => compareTables(dirA, empty)).toThrow(InputError);
  });

  it('follows tables_from to the version whose tables a borrowed version uses', () => {
    const borrowed = join(root, 'synth-versions', '0.1');
    write(borrowed, 'meta.yaml', 'system: h200_sxm\nkind: synthesized\nborrowed: true\ntables_from: "0.2"\n');
    write(join(root, 'synth-versions', '0.2'), 'elementwise.csv', 'op,bytes,latency_ms\ncopy,1048576,0.02\n');
    const r = compareTables(dirA, borrowed);
    expect(r.groups.map((g) => [g.group, g.count, Math.round(g.biasPct)])).toEqual([
      ['add', 0, NaN],
      ['copy', 1, 100],
    ]);
    expect(r.notes).toContain(`B borrows the tables of ${join(root, 'synth-versions', '0.2')}`);
  });

  it('joins on shared columns when one table has an extra key column', () => {
    const a = join(root, 'extraA');
    const b = join(root, 'extraB');
    write(a, 'elementwise.csv', 'op,bytes,latency_ms\ncopy,8,2\n');
    write(b, 'elementwise.csv', 'op,bytes,dtype,latency_ms\ncopy,8,bfloat16,3\n');
    const r = compareTables(a, b);
    expect(r.overall.count).toBe(1);
    expect(r.overall.biasPct).toBeCloseTo(50, 9);
    expect(r.notes[0]).toMatch(/columns dtype are in one table only/);
  });

  it('reads a MoE table without the routing column as balanced routing', () => {
    const a = join(root, 'moeA');
    const b = join(root, 'moeB');
    write(a, 'moe.csv', 'dtype,tokens,hidden,inter,topk,experts,moe_tp,moe_ep,latency_ms\nfp8,64,4096,1536,8,128,1,1,1.0\n');
    write(b, 'moe.csv', 'dtype,distribution,tokens,hidden,inter,topk,experts,moe_tp,moe_ep,latency_ms\n'
      + 'fp8,balanced,64,4096,1536,8,128,1,1,1.2\nfp8,power_law_1.2,64,4096,1536,8,128,1,1,3.0\n');
    const r = compareTables(a, b);
    expect(r.overall.count).toBe(1);
    expect(r.overall.biasPct).toBeCloseTo(20, 9);
    expect(r.notes.join(' ')).not.toMatch(/in one table only/);
  });
});

describe('compareTables with interpolation', () => {
  it("estimates B at A's rows from B's grid and counts them", () => {
    const a = join(root, 'interpA');
    const b = join(root, 'interpB');
    write(a, 'gemm.csv', 'dtype,m,n,k,latency_ms\nbfloat16,2,4096,4096,2.2\nbfloat16,4,4096,4096,4\nfp8,2,4096,4096,1\n');
    write(b, 'gemm.csv', 'dtype,m,n,k,latency_ms\nbfloat16,1,4096,4096,1\nbfloat16,4,4096,4096,4\n');
    const exact = compareTables(a, b);
    expect(exact.groups.find((g) => g.group === 'bfloat16')!.count).toBe(1);
    const r = compareTables(a, b, { interpolate: true, system: 'h200_sxm' });
    const bf16 = r.groups.find((g) => g.group === 'bfloat16')!;
    expect([bf16.count, bf16.interpolated, bf16.onlyA, bf16.onlyB]).toEqual([2, 1, 0, 1]);
    // m=2 sits halfway between m=1 and m=4 in log2 space: exp(mean(ln 1, ln 4)) = 2 against 2.2 measured.
    expect(bf16.biasPct).toBeCloseTo(((2 - 2.2) / 2.2) * 100 / 2, 6);
    expect(bf16.maxAbsPct).toBeCloseTo((0.2 / 2.2) * 100, 6);
    const fp8 = r.groups.find((g) => g.group === 'fp8')!;
    expect([fp8.count, fp8.onlyA]).toEqual([0, 1]);
    expect(r.interpolationSystem).toBe('h200_sxm');
    expect(renderCompare(r)).toMatch(/interpolated/);
    const onlyB = join(root, 'interpB2');
    write(onlyB, 'gemm.csv', 'dtype,m,n,k,latency_ms\nbfloat16,1,4096,4096,1\nbfloat16,4,4096,4096,4\nnvfp4,4,4096,4096,1\n');
    const text = renderCompare(compareTables(a, onlyB));
    expect(text).toMatch(/note: only in B: gemm nvfp4/);
    expect(text).not.toMatch(/│ gemm\s+│ nvfp4/);
  });

  it('needs a system to interpolate', () => {
    const a = join(root, 'interpA');
    expect(() => compareTables(a, a, { interpolate: true })).toThrow(/needs a system/);
  });
});

describe('configure perf compare', () => {
  async function run(args: string[], parentJson = false): Promise<{ out: string; err: string; code: number | undefined }> {
    const perf = new Command('perf').exitOverride();
    if (parentJson) perf.option('--json', 'the group may own --json itself');
    registerPerfCompare(perf);
    let out = '';
    let err = '';
    const so = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((out += String(s)), true));
    const se = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((err += String(s)), true));
    const before = process.exitCode;
    try {
      await perf.parseAsync(['compare', ...args], { from: 'user' });
      return { out, err, code: process.exitCode as number | undefined };
    } finally {
      so.mockRestore();
      se.mockRestore();
      process.exitCode = before;
    }
  }

  it('prints the table', async () => {
    const { out, code } = await run([dirA, dirB]);
    expect(code).toBe(0);
    expect(out).toMatch(/measured h200_sxm torch 2\.5\.1 \(NVIDIA H200\)/);
    const cells = (line: string) => line.split('│').map((c) => c.trim()).filter(Boolean);
    const rows = out.split('\n').map(cells);
    expect(rows).toContainEqual(['gemm', 'fp8', '2', '50.0%', '50.0%', '+50.0%', '50.0%', '1', '1']);
    expect(rows).toContainEqual(['all', '8', '10.0%', '50.0%', '+7.5%', '50.0%']);
    expect(out).toMatch(/note: nccl\.csv: only in A/);
    expect(out).not.toMatch(/only in B: /);
  });

  it('prints one JSON document with --json', async () => {
    const { out, code } = await run([dirA, dirB, '--json']);
    expect(code).toBe(0);
    const doc = JSON.parse(out);
    expect(doc.groups).toHaveLength(4);
    expect(doc.overall.count).toBe(8);
  });

  it('honours --json when the perf group defines it too', async () => {
    const { out, code } = await run([dirA, dirB, '--json'], true);
    expect(code).toBe(0);
    expect(JSON.parse(out).overall.count).toBe(8);
  });

  it('exits 2 with a one-line message on a bad directory', async () => {
    const { err, code } = await run([join(root, 'missing'), dirB]);
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/is not a directory/);
  });

  it('renders a note when nothing joins', () => {
    const a = join(root, 'disjA');
    const b = join(root, 'disjB');
    write(a, 'gemm.csv', 'dtype,m,n,k,latency_ms\nbfloat16,1,2,3,1\n');
    write(b, 'gemm.csv', 'dtype,m,n,k,latency_ms\nbfloat16,9,2,3,1\n');
    const text = renderCompare(compareTables(a, b));
    expect(text).toMatch(/nothing was compared/);
  });
});

describe('p90Floor', () => {
  const row = (key: string, latency: number, sol = 0.1) => ({ key, latency, sol });

  it('is zero when every shape can be met exactly', () => {
    expect(p90Floor(Array.from({ length: 20 }, (_, i) => row(`s${i}`, 1 + i)))).toBe(0);
  });

  it('is set by rows measured below the roofline once they are more than a tenth', () => {
    // 2 of 10 rows measured at half their speed of light: one of them must stay 100% off.
    const rows = [...Array.from({ length: 8 }, (_, i) => row(`s${i}`, 1)), row('a', 0.5, 1), row('b', 0.5, 1)];
    expect(p90Floor(rows)).toBeCloseTo(100, 0);
    // One such row is within the tenth a p90 leaves out.
    expect(p90Floor(rows.slice(1))).toBeGreaterThan(99);
    expect(p90Floor([...rows.slice(0, 9), row('c', 1)])).toBe(0);
  });

  it('splits the difference between duplicate measurements of one shape', () => {
    // One table value serves both: 1 and 3 ms are both met within 50% by 1.5 ms.
    const rows = [...Array.from({ length: 3 }, (_, i) => row(`s${i}`, 1)), row('dup', 1), row('dup', 3)];
    expect(p90Floor(rows)).toBeCloseTo(50, 0);
  });
});
