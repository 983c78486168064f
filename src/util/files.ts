// Writing one output file a user named: refused with a one-line input error when it cannot be written, and
// never leaving a temporary file behind.
import { accessSync, constants, existsSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { InputError } from './errors.js';

/** The access error code of `dir` for creating entries in it (EACCES, EROFS, ...), or undefined when it may. */
function notWritable(dir: string): string | undefined {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'not writable';
  }
}

/** Why `path` cannot take a file, or undefined when it can (its folder exists and it is not a folder itself). */
export function outputPathProblem(path: string): string | undefined {
  if (path.trim().length === 0) return 'an empty path';
  const full = resolve(path);
  if (existsSync(full) && statSync(full).isDirectory()) return 'is a directory';
  const dir = dirname(full);
  if (!existsSync(dir)) return `its directory ${dir} does not exist`;
  if (!statSync(dir).isDirectory()) return `${dir} is not a directory`;
  return notWritable(dir);
}

/**
 * Fail with an InputError naming `flag` when `path` cannot take a file (see outputPathProblem), or when it is an
 * existing file and `force` is not set: a user's file is replaced only when asked to (--force).
 */
export function checkOutputPath(flag: string, path: string, opts: { force?: boolean } = {}): void {
  if (path.trim() === '') throw new InputError(`${flag} is empty; give the path of a file`);
  const problem = outputPathProblem(path);
  if (problem) throw new InputError(`${flag} ${path}: cannot write there (${problem})`);
  if (!opts.force && existsSync(path)) throw new InputError(`${flag} ${path} already exists; pass --force to replace it`);
}

/**
 * Why directory `path` cannot take new entries, or undefined when it can: it (or, when it does not exist yet, the
 * nearest folder above it, where it would be created) must be a directory this process may write into.
 */
export function outputDirProblem(path: string): string | undefined {
  if (path.trim().length === 0) return 'an empty path';
  const full = resolve(path);
  let dir = full;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  if (!statSync(dir).isDirectory()) return dir === full ? 'is a file, not a directory' : `${dir} is not a directory`;
  return notWritable(dir);
}

/** Fail with an InputError naming `flag` when directory `path` cannot be written (see outputDirProblem). */
export function checkOutputDir(flag: string, path: string): void {
  if (path.trim() === '') throw new InputError(`${flag} is empty; give the path of a directory`);
  const problem = outputDirProblem(path);
  if (problem) throw new InputError(`${flag} ${path}: cannot write there (${problem})`);
}

/**
 * Write `content` to `path` through a temporary file beside it and a rename; the temporary file never stays.
 * An existing file is replaced only with `opts.force` (see checkOutputPath).
 */
export function writeFileAtomic(flag: string, path: string, content: string | Uint8Array, opts: { force?: boolean } = {}): void {
  checkOutputPath(flag, path, opts);
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, content);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    rethrowWriteError(err, `${flag} ${path}: cannot write there`);
  }
}

/** Codes of a write that failed because of where it went (permissions, a full or read-only disk, a bad path). */
const PLACE_ERRORS = new Set(['EACCES', 'EPERM', 'EISDIR', 'ENOENT', 'ENOTDIR', 'EROFS', 'ENOSPC', 'ENAMETOOLONG', 'EEXIST']);

/** Rethrow a failed write: as an InputError `message (CODE)` when the place was at fault (bad input, exit 2), else as is. */
export function rethrowWriteError(err: unknown, message: string): never {
  const code = (err as NodeJS.ErrnoException).code;
  if (code && PLACE_ERRORS.has(code)) throw new InputError(`${message} (${code})`);
  throw err;
}
