// A --perf-data directory with bad contents is bad input (exit 2) naming the file, never an internal error, and
// never silently priced.
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSystem } from '../../src/inputs/systems.js';
import { loadPerfSource, tableDir } from '../../src/perf/index.js';
import { PACKED_FILE } from '../../src/perf/tables.js';
import { InputError } from '../../src/util/errors.js';

const h200 = loadSystem('h200_sxm');
const META = 'system: h200_sxm\nbackend: vllm\nversion: 0.19.0\nkind: measured\ngpu: H200\n';

function perfDir(files: Record<string, string | Buffer>): string {
  const dir = mkdtempSync(join(tmpdir(), 'bad-perf-'));
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
  return dir;
}

async function loadError(dir: string): Promise<InputError> {
  const err = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0', perfData: dir }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InputError);
  expect((err as InputError).exitCode).toBe(2);
  return err as InputError;
}

const gemm = (lat: string) => `dtype,m,n,k,latency_ms\nbfloat16,1,4096,4096,0.5\nbfloat16,1024,4096,4096,${lat}\n`;

describe('bad --perf-data tables', () => {
  for (const [what, lat] of [['negative', '-1.5'], ['zero', '0'], ['NaN', 'NaN'], ['non-numeric', 'fast'], ['empty', ''], ['infinite', 'Infinity']] as const) {
    it(`a ${what} latency is refused with the file and line`, async () => {
      const dir = perfDir({ 'meta.yaml': META, 'gemm.csv': gemm(lat) });
      const e = await loadError(dir);
      expect(e.message).toContain(join(dir, 'gemm.csv'));
      expect(e.message).toMatch(/:3: latency_ms/);
    });
  }

  it('a row with missing fields is refused with the file and line', async () => {
    const dir = perfDir({ 'meta.yaml': META, 'gemm.csv': 'dtype,m,n,k,latency_ms\nbfloat16,1,4096\n' });
    expect((await loadError(dir)).message).toMatch(/gemm\.csv:2: expected 5 fields, got 3/);
  });

  it('a CSV with the wrong columns is refused', async () => {
    const dir = perfDir({ 'meta.yaml': META, 'gemm.csv': 'a,b,c\n1,2,3\n' });
    expect((await loadError(dir)).message).toMatch(/gemm\.csv: missing column/);
  });

  it('a meta.yaml that is not a mapping is refused', async () => {
    for (const body of ['- a\n- b\n', 'just text\n', 'system: [1, 2]\n']) {
      const dir = perfDir({ 'meta.yaml': body, 'gemm.csv': gemm('1.5') });
      expect((await loadError(dir)).message).toContain(join(dir, 'meta.yaml'));
    }
  });

  it('a meta.yaml that is not YAML, or is an alias bomb, is refused', async () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]', ...'bcdefgh'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(', ')}]`)].join('\n') + '\n';
    for (const body of [bomb, 'system: [unclosed\n']) {
      const dir = perfDir({ 'meta.yaml': body, 'gemm.csv': gemm('1.5') });
      expect((await loadError(dir)).message).toContain('meta.yaml');
    }
  });

  it('a corrupt or truncated tables.bin is refused', async () => {
    const own = readFileSync(join(tableDir('h200_sxm', 'vllm', '0.19.0')!, PACKED_FILE));
    const flipped = Buffer.from(own);
    for (let i = 200; i < Math.min(flipped.length, 4000); i += 7) flipped[i] = 0xff;
    for (const body of [Buffer.from('not a table file'), own.subarray(0, Math.floor(own.length / 2)), flipped]) {
      const dir = perfDir({ 'meta.yaml': META, [PACKED_FILE]: body });
      expect((await loadError(dir)).message).toContain(PACKED_FILE);
    }
  });

  it('a corrupt parquet file of an aiconfigurator directory is refused', async () => {
    const root = mkdtempSync(join(tmpdir(), 'bad-aic-'));
    const d = join(root, 'h200_sxm', 'gemm', 'vllm', '0.19.0');
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'gemm_perf.parquet'), 'PAR1 this is not parquet PAR1');
    const e = await loadError(root);
    expect(e.message).toContain('gemm_perf.parquet');
  });
});
