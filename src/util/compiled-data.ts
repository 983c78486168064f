// The build's JSON copies of the data/ folders kept as YAML (dist/<folder>.json): a short command spent a fifth
// of its run time parsing YAML. A copy is used only while every file of its folder is as it was when compiled
// (size and modification time); after any edit the YAML is read as before. Code run from the sources (tests,
// scripts) reads the YAML: the copy also depends on the code that parsed it, which may have changed since.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dataPath, projectRoot } from './paths.js';

interface Compiled<T> {
  sources: Record<string, string>;
  value: T;
}

/** Where the build writes the copy of data/<folder>. */
function compiledPath(folder: string): string {
  return join(projectRoot(), 'dist', `${folder}.json`);
}

function stamps(folder: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of readdirSync(dataPath(folder)).sort()) {
    const st = statSync(dataPath(folder, f));
    out[f] = `${st.size}:${Math.round(st.mtimeMs)}`;
  }
  return out;
}

const BUILT = fileURLToPath(import.meta.url).includes(`${sep}dist${sep}`);

/**
 * The compiled copy of data/<folder> (the build's, or `file`), or undefined when it is missing, unreadable or out
 * of date, or when no file is named and this code runs from the sources.
 */
export function readCompiled<T>(folder: string, file = BUILT ? compiledPath(folder) : undefined): T | undefined {
  if (!file) return undefined;
  let compiled: Compiled<T>;
  try {
    compiled = JSON.parse(readFileSync(file, 'utf8')) as Compiled<T>;
  } catch {
    return undefined;
  }
  return JSON.stringify(compiled.sources) === JSON.stringify(stamps(folder)) ? compiled.value : undefined;
}

/** Write the copy of data/<folder> holding `value` (what parsing its YAML gives); returns `value`. */
export function writeCompiled<T>(folder: string, value: T, file = compiledPath(folder)): T {
  const compiled: Compiled<T> = { sources: stamps(folder), value };
  writeFileSync(file, JSON.stringify(compiled));
  return value;
}
