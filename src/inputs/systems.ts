// GPU systems: data/systems/<name>.yaml, validated at load, looked up by name or alias.
import { readdirSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { dataPath } from '../util/paths.js';
import { InputError, UnsupportedError } from '../util/errors.js';
import { BACKENDS, type Backend, type SystemSpec } from './types.js';

const positive = z.number().positive();

const backendSupportSchema = z
  .strictObject({
    versions: z.array(z.string().min(1)).min(1),
    default: z.string().min(1),
  })
  .refine((b) => b.versions.includes(b.default), { message: 'default must be one of versions' })
  .refine((b) => new Set(b.versions).size === b.versions.length, { message: 'versions must be unique' });

export const systemSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9_]+$/),
  aliases: z.array(z.string().min(1)).default([]),
  gpu: z.strictObject({
    name: z.string().min(1),
    memGiB: positive,
    memBwGBs: positive,
    tflops: z.strictObject({
      bfloat16: positive,
      fp8: positive.optional(),
      nvfp4: positive.optional(),
      int8: positive.optional(),
      int4: positive.optional(),
    }),
    numSms: z.number().int().positive(),
    l2MiB: positive,
  }),
  gpusPerNode: z.number().int().positive(),
  intraNodeLink: z.enum(['nvlink', 'pcie']),
  intraNodeBwGBs: positive,
  interNodeBwGBs: positive,
  backends: z.strictObject({
    vllm: backendSupportSchema.optional(),
    sglang: backendSupportSchema.optional(),
    trtllm: backendSupportSchema.optional(),
  }),
});

let cache: SystemSpec[] | undefined;

function loadAll(): SystemSpec[] {
  if (cache) return cache;
  const dir = dataPath('systems');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();
  const systems = files.map((f) => {
    const parsed = systemSchema.safeParse(parseYaml(readFileSync(`${dir}/${f}`, 'utf8')));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(`data/systems/${f}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
    }
    if (`${parsed.data.name}.yaml` !== f) throw new Error(`data/systems/${f}: name "${parsed.data.name}" does not match the file name`);
    return parsed.data as SystemSpec;
  });
  cache = systems;
  return systems;
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
    throw new UnsupportedError(
      `${b} version "${version}" is not supported on ${system.name}; supported: ${support.versions.join(', ')} (default ${support.default})`,
      { system: system.name, backend: b, supported: support.versions, default: support.default },
    );
  }
  return { backend: b, version: v };
}
