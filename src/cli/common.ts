// Shared CLI plumbing: output helpers, error-to-exit-code mapping, option parsers.
import type { Command } from 'commander';
import { InferplanError, InputError, ExitCode } from '../util/errors.js';
import { escapeControl, quote } from '../util/text.js';
import { MAX_DEPLOYMENT_GPUS } from '../search/limits.js';
import { eraseProgressLine } from '../util/progress.js';

export interface GlobalOptions {
  json?: boolean;
  verbose?: boolean;
}

export function addGlobalOptions(cmd: Command): Command {
  cmd.hook('preAction', (c) => refuseEmptyValues(c));
  return cmd
    .option('--json', 'print one JSON document on stdout (logs go to stderr)')
    .option('--verbose', 'show stack traces on internal errors');
}

/**
 * An empty value (`--save-dir ''`, `--perf-data ""`) names nothing: refused before the command runs, instead of
 * being read as "not given" or as the current directory.
 */
function refuseEmptyValues(cmd: Command): void {
  for (const o of cmd.options) {
    const v: unknown = cmd.getOptionValue(o.attributeName());
    if (!(Array.isArray(v) ? v : [v]).some((x) => typeof x === 'string' && x.trim() === '')) continue;
    const arg = o.flags.slice(o.flags.indexOf(o.long ?? '') + (o.long ?? '').length).trim();
    throw new InputError(`${o.long} is empty; it takes ${arg} (${o.description})`);
  }
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

/** Decimal notation, as a CSV cell's numbers are read ("8", "+8", "4000.0", "1e3"); not hex, not blank. */
const DECIMAL = /^\s*[+]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i;

/** A flag value as a number: NaN unless it is written in decimal notation. */
const decimal = (value: string): number => (DECIMAL.test(value) ? Number(value) : NaN);

/** Above this a count or a token length is a typo, not a deployment (as the cells of a measured-run CSV row). */
export const MAX_COUNT = 10_000_000;

/** Parse a positive integer flag value up to `max`, or fail with a one-line usage error. */
export function positiveInt(flag: string, max = MAX_COUNT) {
  return (value: string): number => {
    const n = decimal(value);
    if (!Number.isInteger(n) || n <= 0) throw new InputError(`${flag} must be a positive integer, got ${quote(value)}`);
    if (n > max) throw new InputError(`${flag} ${value.trim()} is too large; accepted: a positive integer up to ${max}`);
    return n;
  };
}

/**
 * Parse a GPU count (--total-gpus, --max-gpus) or a count of GPUs' worth (a parallel size, workers, replicas): a
 * positive integer up to the largest deployment planned.
 */
export function gpuCount(flag: string) {
  const parse = positiveInt(flag, Infinity);
  return (value: string): number => {
    const n = parse(value);
    if (n > MAX_DEPLOYMENT_GPUS) throw new InputError(`${flag} ${value} is more than the ${MAX_DEPLOYMENT_GPUS} GPUs inferplan plans one deployment for`);
    return n;
  };
}

/** Parse a non-negative integer flag value up to `max`. */
export function nonNegativeInt(flag: string, max = MAX_COUNT) {
  return (value: string): number => {
    const n = decimal(value);
    if (!Number.isInteger(n) || n < 0) throw new InputError(`${flag} must be a non-negative integer, got ${quote(value)}`);
    if (n > max) throw new InputError(`${flag} ${value.trim()} is too large; accepted: a non-negative integer up to ${max}`);
    return n;
  };
}

/** Parse a positive number flag value (milliseconds, rates). */
export function positiveNumber(flag: string) {
  return (value: string): number => {
    const n = decimal(value);
    if (!Number.isFinite(n) || n <= 0) throw new InputError(`${flag} must be a positive number, got ${quote(value)}`);
    return n;
  };
}

/** Colour only on a terminal and never with NO_COLOR. */
export function useColor(stream: NodeJS.WriteStream = process.stdout): boolean {
  return Boolean(stream.isTTY) && !process.env.NO_COLOR;
}
