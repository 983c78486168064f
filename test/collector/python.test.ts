// Runs the collector's Python unit tests (grid generation, CSV and meta writing; GPU tests skip without CUDA).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const probe = spawnSync('python3', ['-c', 'import sys; print(sys.version_info >= (3, 8))'], { encoding: 'utf8' });
const havePython = probe.status === 0 && probe.stdout.trim() === 'True';
if (!havePython) console.log('collector tests skipped: python3 (>= 3.8) not found');

describe.skipIf(!havePython)('collector (python3 -m unittest)', () => {
  it('passes its unit tests', () => {
    const res = spawnSync('python3', ['-m', 'unittest', 'discover', '-s', 'collector/tests'], {
      cwd: new URL('../..', import.meta.url),
      encoding: 'utf8',
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    const out = `${res.stdout}\n${res.stderr}`;
    expect(res.status, out).toBe(0);
    expect(out).toMatch(/Ran [1-9]\d* tests/);
    expect(out).toMatch(/\nOK/);
  });
});
