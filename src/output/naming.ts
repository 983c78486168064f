// Names that end up on disk or in Kubernetes: the results slug and DNS-1035 resource names.
import { createHash } from 'node:crypto';
import { resolve, sep } from 'node:path';
import type { SearchInputs } from '../search/types.js';
import { InputError } from '../util/errors.js';
import { stripControl } from '../util/text.js';

/**
 * A path segment that can never climb out of its parent: control characters removed, '/' becomes '--',
 * anything else unusual is dropped.
 */
export function safeSegment(text: string): string {
  const s = stripControl(text)
    .replace(/[\\/]+/g, '--')
    .replace(/[^A-Za-z0-9._-]+/g, '')
    .replace(/^[.-]+/, '')
    .replace(/\.{2,}/g, '.');
  return s.length > 0 ? s.slice(0, 120) : 'model';
}

/** Shortest decimal form of a number for names (16.67 -> "16.67", 600 -> "600"). */
function num(n: number): string {
  return String(Number(n.toFixed(4)));
}

/**
 * Results folder name: model, system, backend, GPU budget, isl, osl, ttft, tpot; then prefix, request
 * latency and decode system only when set; then a 6-hex hash of every other input that changes the files
 * (engine version, top-n, calibration, `extra`: dtypes, serving modes, ...), so two runs share a folder only
 * when they plan the same thing. No random part.
 */
export function resultsSlug(inputs: SearchInputs, extra: Record<string, unknown> = {}): string {
  const parts = [
    safeSegment(inputs.model),
    safeSegment(inputs.system),
    safeSegment(inputs.backend),
    `gpus${inputs.totalGpus}`,
    `isl${inputs.workload.isl}`,
    `osl${inputs.workload.osl}`,
    `ttft${num(inputs.sla.ttftMs)}`,
    `tpot${num(inputs.sla.tpotMs)}`,
  ];
  if (inputs.workload.prefix > 0) parts.push(`prefix${inputs.workload.prefix}`);
  if (inputs.sla.requestLatencyMs !== undefined) parts.push(`lat${num(inputs.sla.requestLatencyMs)}`);
  if (inputs.decodeSystem && inputs.decodeSystem !== inputs.system) parts.push(`d-${safeSegment(inputs.decodeSystem)}`);
  // The speculative setting searched (absent without one, so plain runs keep their names).
  const rest = { model: inputs.model, version: inputs.version, topN: inputs.topN, calibratedOn: inputs.calibratedOn, speculation: inputs.speculation, ...extra };
  parts.push(shortHash(rest));
  return parts.join('_');
}

/** 6 hex digits of the SHA-256 of a value's canonical JSON (keys sorted, undefined dropped). */
export function shortHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 6);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * A folder name for a user-chosen name (an experiment): the safe segment, plus a 6-hex hash of the name
 * whenever making it safe changed it, so names that differ ("a.b", "a..b", "a/b", "a--b") never share a folder.
 */
export function uniqueSegment(name: string): string {
  const seg = safeSegment(name);
  return seg === name ? seg : `${seg.slice(0, 113)}-${shortHash(name)}`;
}

/** Join a child name under dir and refuse anything that would resolve outside it. */
export function insideDir(dir: string, child: string): string {
  const root = resolve(dir);
  const full = resolve(root, child);
  if (full === root || !full.startsWith(root + sep)) {
    throw new InputError(`refusing to write "${child}" outside ${root}`);
  }
  return full;
}

/**
 * A DNS-1035 name for the DynamoGraphDeployment: lower case, starts with a letter, at most 40 characters,
 * so "<name>-<service>" stays within the 63 characters Kubernetes allows.
 */
export function k8sName(modelId: string, mode: string): string {
  const base = modelId.split('/').pop() ?? modelId;
  let s = base
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (!/^[a-z]/.test(s)) s = `m-${s}`;
  const suffix = `-${mode}`;
  s = s.slice(0, 40 - suffix.length).replace(/-+$/, '');
  return `${s}${suffix}`;
}
