// Writing one output file a user named: refused with a one-line input error when it cannot be written, and
// never leaving a temporary file behind.
import { existsSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { InputError } from './errors.js';

/** Why `path` cannot take a file, or undefined when it can (its folder exists and it is not a folder itself). */
export function outputPathProblem(path: string): string | undefined {
  if (path.length === 0) return 'an empty path';
  const full = resolve(path);
  if (existsSync(full) && statSync(full).isDirectory()) return 'is a directory';
  const dir = dirname(full);
  if (!existsSync(dir)) return `its directory ${dir} does not exist`;
  if (!statSync(dir).isDirectory()) return `${dir} is not a directory`;
  return undefined;
}

/** Fail with an InputError naming `flag` when `path` cannot take a file (see outputPathProblem). */
export function checkOutputPath(flag: string, path: string): void {
  const problem = outputPathProblem(path);
  if (problem) throw new InputError(`${flag} ${path}: cannot write there (${problem})`);
}

/** Write `content` to `path` through a temporary file beside it and a rename; the temporary file never stays. */
export function writeFileAtomic(flag: string, path: string, content: string | Uint8Array): void {
  checkOutputPath(flag, path);
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, content);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code && ['EACCES', 'EPERM', 'EISDIR', 'ENOENT', 'ENOTDIR', 'EROFS', 'ENOSPC', 'ENAMETOOLONG', 'EEXIST'].includes(code)) {
      throw new InputError(`${flag} ${path}: cannot write there (${code})`);
    }
    throw err;
  }
}
