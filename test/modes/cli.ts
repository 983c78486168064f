// Run the CLI as users do (a separate process), so exit codes and stdout/stderr are the real ones.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], cwd: string = ROOT): CliRun {
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${ROOT}/src/cli/main.ts`, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', HF_HUB_OFFLINE: '1' },
    timeout: 60_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Run commands in this process (fast): a fresh commander program with only the given commands, with stdout,
 * stderr and the exit code captured the way src/cli/main.ts maps them.
 */
export async function runInProcess(registers: Array<(p: Command) => void>, args: string[]): Promise<CliRun> {
  const { Command, CommanderError } = await import('commander');
  const { normalizeArgv } = await import('../../src/cli/common.js');
  const { InferplanError } = await import('../../src/util/errors.js');
  const program = new Command('configure').exitOverride();
  program.configureOutput({ writeErr: (s) => void process.stderr.write(s), writeOut: (s) => void process.stdout.write(s) });
  for (const r of registers) r(program);
  for (const c of program.commands) c.exitOverride();
  let stdout = '';
  let stderr = '';
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  const saved = process.exitCode;
  process.exitCode = undefined;
  process.stdout.write = ((s: string | Uint8Array) => ((stdout += String(s)), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string | Uint8Array) => ((stderr += String(s)), true)) as typeof process.stderr.write;
  let code: number;
  try {
    await program.parseAsync(normalizeArgv(args), { from: 'user' });
    code = Number(process.exitCode ?? 0);
  } catch (e) {
    if (e instanceof CommanderError) code = e.code === 'commander.helpDisplayed' ? 0 : 2;
    else if (e instanceof InferplanError) {
      stderr += `configure: error: ${e.message}\n`;
      code = e.exitCode;
    } else throw e;
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    process.exitCode = saved;
  }
  return { code, stdout, stderr };
}
