// Which Dynamo runtime image ships the engine version we predicted, and which flag profile to write.
import type { Backend } from '../inputs/types.js';
import { InputError } from '../util/errors.js';
import { DYNAMO_RUNTIME_TABLE } from '../inputs/dynamo-runtime.js';
import { compareVersions, versionKey } from '../util/versions.js';

const IMAGE_NAME: Record<Backend, string> = {
  vllm: 'vllm-runtime',
  sglang: 'sglang-runtime',
  trtllm: 'tensorrtllm-runtime',
};

/** exact: the image ships this engine version; same-release: same release line (e.g. 0.14.0 vs 0.14.1); nearest: closest release. */
export type ImageMatch = 'exact' | 'same-release' | 'nearest';

export interface ImageChoice {
  image: string;
  tag: string;
  /** Engine version inside the image. */
  shipsVersion: string;
  match: ImageMatch;
}

/** The release line that must match: vLLM major.minor, SGLang and TRT-LLM major.minor.patch. */
function releaseLine(backend: Backend, v: string): string {
  const k = versionKey(v) ?? [0, 0, 0];
  return backend === 'vllm' ? `${k[0]}.${k[1]}` : `${k[0]}.${k[1]}.${k[2]}`;
}

/**
 * The runtime image for an engine version. Measurements of TRT-LLM sometimes record the Dynamo image tag
 * itself as the version (0.x.y for TRT-LLM), which is then used as the tag directly.
 */
export function runtimeImage(backend: Backend, engineVersion: string): ImageChoice {
  const name = `nvcr.io/nvidia/ai-dynamo/${IMAGE_NAME[backend]}`;
  if (backend === 'trtllm' && (versionKey(engineVersion)?.[0] ?? 0) === 0) {
    return { image: `${name}:${engineVersion}`, tag: engineVersion, shipsVersion: engineVersion, match: 'exact' };
  }
  const rows = DYNAMO_RUNTIME_TABLE.map((r) => ({ tag: r.tag, v: r[backend] }));
  const pick = (tag: string, v: string, match: ImageMatch): ImageChoice => ({ image: `${name}:${tag}`, tag, shipsVersion: v, match });
  const exact = rows.find((r) => compareVersions(r.v, engineVersion) === 0);
  if (exact) return pick(exact.tag, exact.v, 'exact');
  const line = releaseLine(backend, engineVersion);
  const sameLine = rows.filter((r) => releaseLine(backend, r.v) === line);
  const pool = sameLine.length > 0 ? sameLine : rows;
  // The oldest image at or above the version, else the newest below it.
  const above = pool.filter((r) => compareVersions(r.v, engineVersion) > 0).sort((a, b) => compareVersions(a.v, b.v));
  const below = pool.filter((r) => compareVersions(r.v, engineVersion) < 0).sort((a, b) => compareVersions(b.v, a.v));
  const best = above[0] ?? below[0];
  return pick(best.tag, best.v, sameLine.length > 0 ? 'same-release' : 'nearest');
}

/** Flag profile of the generated worker arguments. */
export type DynamoProfile = '0.9' | '1.x';

export function parseDynamoVersion(v: string | undefined): DynamoProfile {
  if (v === undefined || v === '') return '0.9';
  const s = v.trim().replace(/^v/, '');
  if (/^0\.9(\.\d+)*$/.test(s)) return '0.9';
  if (/^1(\.(\d+|x))*$/.test(s)) return '1.x';
  throw new InputError(`--dynamo-version "${v}" is not supported; accepted: 0.9 (0.9.x) or 1.x (1.0 to 1.4)`);
}
