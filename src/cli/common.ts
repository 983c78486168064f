// Shared CLI plumbing: output helpers, error-to-exit-code mapping, option parsers.
import type { Command } from 'commander';
import { InferplanError, InputError, ExitCode } from '../util/errors.js';
import { escapeControl } from '../util/text.js';
import { MAX_DEPLOYMENT_GPUS } from '../search/limits.js';
import { eraseProgressLine } from '../util/progress.js';

export interface GlobalOptions {
  json?: boolean;
  verbose?: boolean;
}

export function addGlobalOptions(cmd: Command): Command {
  return cmd
    .option('--json', 'print one JSON document on stdout (logs go to stderr)')
    .option('--verbose', 'show stack traces on internal errors');
}

/** Accept aiconfigurator v0.6 spellings: `--hf_id` -> `--hf-id`, and an optional leading `cli` word. */
export function normalizeArgv(args: string[]): string[] {
  const out = args[0] === 'cli' ? args.slice(1) : [...args];
  return out.map((a) => {
    if (!a.startsWith('--')) return a;
    const eq = a.indexOf('=');
    const name = eq < 0 ? a : a.slice(0, eq);
    const rest = eq < 0 ? '' : a.slice(eq);
    return name.replace(/_/g, '-') + rest;
  });
}

/** Print a JSON document on stdout (the only thing on stdout in --json mode). */
export function printJson(doc: unknown): void {
  process.stdout.write(JSON.stringify(doc, null, 2) + '\n');
}

/** Logs go to stderr so stdout stays machine-readable. */
export function log(message: string): void {
  eraseProgressLine();
  process.stderr.write(message + '\n');
}

/**
 * Run a command action and map failures to the documented exit codes:
 * a one-line message on stderr, a JSON error document on stdout with --json, a stack only with --verbose.
 */
export async function runAction(opts: GlobalOptions, action: () => Promise<number | void> | number | void): Promise<void> {
  try {
    const code = await action();
    process.exitCode = typeof code === 'number' ? code : ExitCode.ok;
  } catch (err) {
    const known = err instanceof InferplanError;
    const code = known ? err.exitCode : ExitCode.internal;
    const message = err instanceof Error ? err.message : String(err);
    // One line, with control characters a user put in a name or path shown escaped.
    const oneLine = escapeControl(message.split('\n')[0] ?? '');
    eraseProgressLine();
    process.stderr.write(`configure: error: ${known ? oneLine : `internal error: ${oneLine}`}\n`);
    if (opts.verbose && err instanceof Error && err.stack) process.stderr.write(err.stack + '\n');
    if (opts.json) printJson({ error: { message: oneLine, exitCode: code, detail: known ? (err.detail ?? null) : null } });
    process.exitCode = code;
  }
}

/** Parse a positive integer flag value, or fail with a one-line usage error. */
export function positiveInt(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new InputError(`${flag} must be a positive integer, got "${value}"`);
    return n;
  };
}

/** Parse a GPU count (--total-gpus, --max-gpus): a positive integer up to the largest deployment planned. */
export function gpuCount(flag: string) {
  const parse = positiveInt(flag);
  return (value: string): number => {
    const n = parse(value);
    if (n > MAX_DEPLOYMENT_GPUS) throw new InputError(`${flag} ${value} is more than the ${MAX_DEPLOYMENT_GPUS} GPUs inferplan plans one deployment for`);
    return n;
  };
}

/** Parse a non-negative integer flag value. */
export function nonNegativeInt(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new InputError(`${flag} must be a non-negative integer, got "${value}"`);
    return n;
  };
}

/** Parse a positive number flag value (milliseconds, rates). */
export function positiveNumber(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0) throw new InputError(`${flag} must be a positive number, got "${value}"`);
    return n;
  };
}

/** Colour only on a terminal and never with NO_COLOR. */
export function useColor(stream: NodeJS.WriteStream = process.stdout): boolean {
  return Boolean(stream.isTTY) && !process.env.NO_COLOR;
}
