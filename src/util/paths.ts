// Locate the project's own files (data/, templates/) from the module file, so the same code works
// from src/ (tsx, vitest) and from dist/ (the built package, installed anywhere).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

function isProjectRoot(dir: string): boolean {
  const pkg = join(dir, 'package.json');
  if (!existsSync(pkg)) return false;
  try {
    return (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'inferplan';
  } catch {
    return false;
  }
}

/** The folder that holds inferplan's package.json (walks up from this module). */
export function projectRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (isProjectRoot(dir)) return (cachedRoot = dir);
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the inferplan package root above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** A path under the project's data/ folder, e.g. dataPath('systems', 'h200_sxm.yaml'). */
export function dataPath(...parts: string[]): string {
  return join(projectRoot(), 'data', ...parts);
}

/**
 * A path under the third-party reference data beside the checkout (../shared/reference), read only by
 * calibration, benchmarks and tests; it may be absent.
 */
export function referencePath(...parts: string[]): string {
  return join(projectRoot(), '..', 'shared', 'reference', ...parts);
}
