// The CLI as the end of a shell pipe whose reader stops early (`configure ... | head`).
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

describe('a closed output pipe', () => {
  it('ends the command quietly, with exit code 0 and no stack trace', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'perf', 'query', '--system', 'h200_sxm', '--backend', 'vllm'], { cwd: ROOT });
    // About 2 MB of answers: far more than a pipe holds, so the writer meets the closed end.
    child.stdin.end(`${JSON.stringify({ op: 'gemm', dtype: 'bfloat16', m: 1, n: 4096, k: 4096 })}\n`.repeat(20000));
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).not.toMatch(/EPIPE|\n\s+at /);
    expect(code).toBe(0);
  }, 60_000);
});

describe('an output device that is full', () => {
  it.skipIf(!existsSync('/dev/full'))('exits 2 with one line naming standard output, no stack trace', async () => {
    const out = openSync('/dev/full', 'w');
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'systems'], { cwd: ROOT, stdio: ['ignore', out, 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    closeSync(out);
    expect(stderr.trim()).toBe('configure: error: cannot write to standard output: ENOSPC');
    expect(code).toBe(2);
  }, 60_000);
});
