// GPU systems: data/systems/<name>.yaml, validated at load, looked up by name or alias.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { readCompiled, writeCompiled } from '../util/compiled-data.js';
import { dataPath } from '../util/paths.js';
import { InputError, UnsupportedError } from '../util/errors.js';
import { compareVersions, versionDistance, versionKey } from '../util/versions.js';
import { engineRelease } from './dynamo-runtime.js';
import { BACKENDS, type Backend, type SystemSpec } from './types.js';

let cache: SystemSpec[] | undefined;

/**
 * One data/systems file. The bundled files are validated against `systemSchema` by the tests, not at each start
 * (the schema library would be most of `configure systems`' start-up time); a file that lost its name is still caught.
 * The YAML parser is loaded only here: with the build's compiled copy current, no run needs it for systems.
 */
function loadFile(f: string): SystemSpec {
  const { parse } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  const spec = parse(readFileSync(dataPath('systems', f), 'utf8')) as SystemSpec;
  if (`${spec?.name}.yaml` !== f) throw new Error(`data/systems/${f}: name "${spec?.name}" does not match the file name`);
  return { ...spec, aliases: spec.aliases ?? [] };
}

/** Systems read one by one before anything needed them all. */
const single = new Map<string, SystemSpec>();

function sourceFiles(): string[] {
  return readdirSync(dataPath('systems')).filter((f) => f.endsWith('.yaml')).sort();
}

/** Compile data/systems into the build's copy (or `file`); returns what it wrote. */
export function writeCompiledSystems(file?: string): SystemSpec[] {
  return writeCompiled('systems', sourceFiles().map(loadFile), file);
}

function loadAll(): SystemSpec[] {
  cache ??= readCompiled<SystemSpec[]>('systems') ?? sourceFiles().map(loadFile);
  return cache;
}

/** Every bundled system, sorted by name (copies: callers may change them freely). */
export function listSystems(): SystemSpec[] {
  return loadAll().map((s) => structuredClone(s));
}

/** Canonical names of the bundled systems. */
export function systemNames(): string[] {
  return loadAll().map((s) => s.name);
}

/** Look a system up by name or alias (case-insensitive; dashes and underscores are equivalent). */
export function loadSystem(name: string): SystemSpec {
  const key = normalizeName(name);
  // A canonical name reads its own file only (start-up time); aliases and unknown names look at them all.
  cache ??= readCompiled<SystemSpec[]>('systems');
  if (!cache && /^[a-z0-9_]+$/.test(key) && existsSync(dataPath('systems', `${key}.yaml`))) {
    let one = single.get(key);
    if (!one) single.set(key, (one = loadFile(`${key}.yaml`)));
    return structuredClone(one);
  }
  const found = loadAll().find((s) => normalizeName(s.name) === key || s.aliases.some((a) => normalizeName(a) === key));
  if (!found) {
    throw new InputError(`unknown system "${name}"; accepted: ${systemNames().join(', ')} (alias: gb200)`, {
      accepted: systemNames(),
    });
  }
  return structuredClone(found);
}

function normalizeName(s: string): string {
  return s.trim().toLowerCase().replace(/-/g, '_');
}

/**
 * Pick the engine version: the requested one if the system supports it, else the system's default for the backend.
 * Accepts a leading "v" (v0.12.0). Unsupported backend or version: UnsupportedError listing what is supported.
 */
export function resolveEngine(system: SystemSpec, backend: Backend, version?: string): { backend: Backend; version: string } {
  const b = backend.toLowerCase() as Backend;
  const support = BACKENDS.includes(b) ? system.backends[b] : undefined;
  if (!support) {
    const available = BACKENDS.filter((x) => system.backends[x]);
    throw new UnsupportedError(`backend "${backend}" is not supported on ${system.name}; supported: ${available.join(', ')}`, {
      system: system.name,
      supported: available,
    });
  }
  if (version === undefined || version === '') return { backend: b, version: support.default };
  const v = version.trim().replace(/^v(?=\d)/, '');
  if (!support.versions.includes(v)) {
    const ships = engineRelease(b, v);
    const hint = ships !== v ? `; "${v}" is a Dynamo runtime image tag, whose image ships ${b} ${ships}` : '';
    throw new UnsupportedError(
      `${b} version "${version}" is not supported on ${system.name}${hint}; supported: ${support.versions.join(', ')} (default ${support.default})`,
      { system: system.name, backend: b, supported: support.versions, default: support.default },
    );
  }
  return { backend: b, version: v };
}

/**
 * The supported engine version a measured run ran, from the version it recorded: a Dynamo runtime image tag
 * becomes the engine release its image ships; a release the system does not list becomes the nearest listed
 * one (the newest before it, else the oldest after it); a blank, nightly or custom build tag, the default.
 * `as` says which of these applied.
 */
export function recordedEngine(
  system: SystemSpec,
  backend: Backend,
  recorded: string | undefined,
): { backend: Backend; version: string; as: 'listed' | 'nearest' | 'default' } {
  const { version: fallback } = resolveEngine(system, backend);
  const versions = system.backends[backend]!.versions;
  const v = engineRelease(backend, (recorded ?? '').trim().replace(/^v(?=\d)/, ''));
  if (versions.includes(v)) return { backend, version: v, as: 'listed' };
  if (!versionKey(v)) return { backend, version: fallback, as: 'default' };
  const before = versions.filter((x) => compareVersions(x, v) < 0);
  const pool = before.length > 0 ? before : versions;
  const nearest = pool.reduce((a, x) => (versionDistance(x, v) < versionDistance(a, v) ? x : a));
  return { backend, version: nearest, as: 'nearest' };
}
