// Calibration files (data/calibration/<system>.json): fitted op-model coefficients per reference source.
import { existsSync, readFileSync } from 'node:fs';
import { dataPath } from '../util/paths.js';
import { FEATURES, evalCorrection, type GroupModel, type ModelOp, type OpModel } from './model.js';
import type { Row } from './tables.js';

export interface SystemCalibration {
  system: string;
  generator: string;
  /** Fitted sources: "<backend>/<version>" -> op -> model. */
  sources: Record<string, Partial<Record<ModelOp, OpModel>>>;
  /** System-wide NCCL fit (reference NCCL version). */
  nccl?: { version: string; model: OpModel };
}

const cache = new Map<string, SystemCalibration | null>();

/** Surfaces are stored as base64 of little-endian int16 values (units of the model's `scale`). */
export function encodeSurface(v: number[]): string {
  const buf = Buffer.alloc(v.length * 2);
  v.forEach((x, i) => buf.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(x))), i * 2));
  return buf.toString('base64');
}

export function decodeSurface(s: string): number[] {
  const buf = Buffer.from(s, 'base64');
  const out: number[] = new Array(buf.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = buf.readInt16LE(i * 2);
  return out;
}

type Stored = Omit<SystemCalibration, 'sources'> & { sources: Record<string, Record<string, OpModel>> };

function mapModels(cal: Stored, f: (surface: unknown) => unknown): SystemCalibration {
  const conv = (m: OpModel): OpModel => ({
    ...m,
    groups: Object.fromEntries(Object.entries(m.groups).map(([g, gm]) => [g, { ...gm, surfaces: gm.surfaces.map(f) as number[][] }])),
  });
  return {
    ...cal,
    sources: Object.fromEntries(Object.entries(cal.sources).map(([k, ops]) => [k, Object.fromEntries(Object.entries(ops).map(([op, m]) => [op, conv(m)]))])),
    ...(cal.nccl ? { nccl: { version: cal.nccl.version, model: conv(cal.nccl.model) } } : {}),
  };
}

/** The file form of a calibration (surfaces base64-encoded). */
export function serializeCalibration(cal: SystemCalibration): string {
  return JSON.stringify(mapModels(cal as Stored, (s) => encodeSurface(s as number[]))) + '\n';
}

export function parseCalibration(text: string): SystemCalibration {
  return mapModels(JSON.parse(text) as Stored, (s) => (typeof s === 'string' ? decodeSurface(s) : s));
}

export function loadCalibration(system: string): SystemCalibration | undefined {
  if (!cache.has(system)) {
    const p = dataPath('calibration', `${system}.json`);
    cache.set(system, existsSync(p) ? parseCalibration(readFileSync(p, 'utf8')) : null);
  }
  return cache.get(system) ?? undefined;
}

/** Parse "0.5.6.post2", "1.2.0rc5", "0.5.1-rc0.pre1" into comparable numbers. */
export function versionKey(v: string): number[] {
  const m = v.match(/^(\d+)\.(\d+)\.(\d+)(.*)$/);
  if (!m) return [0, 0, 0, 0];
  const rest = m[4] ?? '';
  const rc = rest.match(/rc(\d+)/);
  const post = rest.match(/post(\d+)/);
  // A release candidate sorts before the release; a post release after it.
  const tail = rc ? -100 + Number(rc[1]) : rest.includes('dev') ? -200 : 0;
  return [Number(m[1]), Number(m[2]), Number(m[3]), tail + (post ? Number(post[1]) / 100 : 0)];
}

function versionDistance(a: string, b: string): number {
  const x = versionKey(a), y = versionKey(b);
  return Math.abs(x[0]! - y[0]!) * 1e6 + Math.abs(x[1]! - y[1]!) * 1e3 + Math.abs(x[2]! - y[2]!) + Math.abs(x[3]! - y[3]!) * 1e-3;
}

/**
 * The calibrated source a (backend, version) uses: its own, else the nearest version of the same backend,
 * else the first other backend on the system (fixed order).
 */
export function pickSource(cal: SystemCalibration, backend: string, version: string, op?: ModelOp): string | undefined {
  const keys = Object.keys(cal.sources).filter((k) => !op || cal.sources[k]![op]);
  const own = `${backend}/${version}`;
  if (keys.includes(own)) return own;
  const same = keys.filter((k) => k.startsWith(`${backend}/`));
  const pool = same.length ? same : keys;
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of pool) {
    const v = k.slice(k.indexOf('/') + 1);
    const d = (same.length ? 0 : 1e12) + versionDistance(v, version);
    if (d < bestD) { bestD = d; best = k; }
  }
  return best;
}

/** Fallback order when a dtype (group) was not fitted: closest format first. */
const GROUP_FALLBACK: Record<string, string[]> = {
  nvfp4: ['fp8', 'fp8_block', 'bfloat16'],
  mxfp4: ['int4_wo', 'nvfp4', 'bfloat16'],
  fp8_block: ['fp8', 'bfloat16'],
  fp8: ['fp8_block', 'bfloat16'],
  int4_wo: ['int8_wo', 'bfloat16'],
  int8_wo: ['int4_wo', 'bfloat16'],
  float16: ['bfloat16'],
};

/** The group model for a row: exact group, else a fallback group with the first dtype field substituted. */
export function groupFor(op: ModelOp, m: OpModel, r: Row): GroupModel | undefined {
  const def = FEATURES[op];
  const g = def.group(r);
  if (m.groups[g]) return m.groups[g];
  const parts = g.split('|');
  // Try each dtype-like part against its fallbacks.
  for (let i = 0; i < parts.length; i++) {
    for (const alt of GROUP_FALLBACK[parts[i]!] ?? []) {
      const cand = [...parts];
      cand[i] = alt;
      const k = cand.join('|');
      if (m.groups[k]) return m.groups[k];
    }
  }
  // Last resort: the group with most rows sharing the first field, else the largest group.
  const names = Object.keys(m.groups).sort();
  const first = names.filter((k) => k.split('|')[0] === parts[0]);
  const pool = first.length ? first : names;
  let best: string | undefined;
  for (const k of pool) if (!best || m.groups[k]!.rows > m.groups[best]!.rows) best = k;
  return best ? m.groups[best] : undefined;
}

/** Model latency of a row: SOL x exp(correction); undefined when the op has no usable model. */
export function modelLatency(op: ModelOp, m: OpModel, r: Row, solMs: number): number | undefined {
  const g = groupFor(op, m, r);
  if (!g) return undefined;
  return solMs * Math.exp(evalCorrection(m, g, FEATURES[op].features(r)));
}
