// Which Dynamo release, and so which runtime image, ships the engine version we predicted, and which flag
// profile to write.
import type { Backend } from '../inputs/types.js';
import { InputError } from '../util/errors.js';
import { DYNAMO_RUNTIME_TABLE, trtllmReleaseOf } from '../inputs/dynamo-runtime.js';
import { compareVersions, versionKey } from '../util/versions.js';

const IMAGE_NAME: Record<Backend, string> = {
  vllm: 'vllm-runtime',
  sglang: 'sglang-runtime',
  trtllm: 'tensorrtllm-runtime',
};

export const IMAGE_REPOSITORY = 'nvcr.io/nvidia/ai-dynamo';

/**
 * exact: the image ships this engine version; same-release: the same release line (e.g. 0.14.0 vs 0.14.1);
 * nearest: no image ships the line, the closest release does; other-release: --dynamo-version named releases
 * none of whose images ships the line, and the closest of those was taken.
 */
export type ImageMatch = 'exact' | 'same-release' | 'nearest' | 'other-release';

export interface ImageChoice {
  image: string;
  tag: string;
  /** The Dynamo release of the image (x.y.z): it decides the flag profile and the manifest's API version. */
  release: string;
  /** Engine version inside the image. */
  shipsVersion: string;
  match: ImageMatch;
  /** --dynamo-version as given, when it chose among the releases. */
  requested?: string;
}

/** Releases that --dynamo-version selects: one release (1.2.0) or a line (0.9, 1.x). */
export interface DynamoSelector {
  text: string;
  releases: string[];
}

/** The release line that must match: vLLM major.minor, SGLang and TRT-LLM major.minor.patch. */
function releaseLine(backend: Backend, v: string): string {
  const k = versionKey(v) ?? [0, 0, 0];
  return backend === 'vllm' ? `${k[0]}.${k[1]}` : `${k[0]}.${k[1]}.${k[2]}`;
}

/**
 * --dynamo-version: a Dynamo release of the table (0.9.1, v1.2.0, 1.4.0) or a line of them (0.9, 0.9.x, 1, 1.x,
 * 1.2); undefined when not given. Anything else is InputError (exit 2) listing the releases.
 */
export function parseDynamoVersion(v: string | undefined): DynamoSelector | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  const s = v.trim().replace(/^v/i, '');
  const m = /^(\d+)(?:\.(\d+|x))?(?:\.(\d+|x))?$/i.exec(s);
  const releases = m
    ? DYNAMO_RUNTIME_TABLE.map((r) => r.tag).filter((tag) => {
        const parts = tag.split('.');
        return [m[1], m[2], m[3]].every((p, i) => p === undefined || /^x$/i.test(p) || Number(p) === Number(parts[i]));
      })
    : [];
  if (releases.length === 0) {
    const known = DYNAMO_RUNTIME_TABLE.map((r) => r.tag).reverse();
    throw new InputError(`--dynamo-version "${v}" is not a Dynamo release we know; accepted: ${known.join(', ')}, or a line such as 0.9 or 1.x`);
  }
  return { text: v.trim(), releases };
}

/**
 * The runtime image for an engine version: the newest release whose image ships it, else the closest release of
 * its line, else the closest release (among the releases --dynamo-version selects, when given). Measurements of
 * TRT-LLM sometimes record the Dynamo image tag itself as the version (0.x.y), which is then the tag.
 */
export function runtimeImage(backend: Backend, engineVersion: string, requested?: DynamoSelector): ImageChoice {
  const name = `${IMAGE_REPOSITORY}/${IMAGE_NAME[backend]}`;
  const isImageTag = backend === 'trtllm' && (versionKey(engineVersion)?.[0] ?? 0) === 0;
  if (isImageTag && !requested) {
    const k = versionKey(engineVersion);
    const release = k ? `${k[0]}.${k[1]}.${k[2]}` : engineVersion;
    return { image: `${name}:${engineVersion}`, tag: engineVersion, release, shipsVersion: engineVersion, match: 'exact' };
  }
  const version = isImageTag ? trtllmReleaseOf(engineVersion) : engineVersion;
  const allowed = requested ? new Set(requested.releases) : undefined;
  const rows = DYNAMO_RUNTIME_TABLE.filter((r) => !allowed || allowed.has(r.tag)).map((r) => ({ tag: r.tag, v: r[backend] }));
  const pick = (tag: string, v: string, match: ImageMatch): ImageChoice => ({
    image: `${name}:${tag}`,
    tag,
    release: tag,
    shipsVersion: v,
    match,
    ...(requested ? { requested: requested.text } : {}),
  });
  // The table is newest first, so find() and the stable sorts below prefer the newest release among equals.
  const exact = rows.find((r) => compareVersions(r.v, version) === 0);
  if (exact) return pick(exact.tag, exact.v, 'exact');
  const line = releaseLine(backend, version);
  const sameLine = rows.filter((r) => releaseLine(backend, r.v) === line);
  const pool = sameLine.length > 0 ? sameLine : rows;
  // The oldest engine at or above the version, else the newest below it.
  const above = pool.filter((r) => compareVersions(r.v, version) > 0).sort((a, b) => compareVersions(a.v, b.v));
  const below = pool.filter((r) => compareVersions(r.v, version) < 0).sort((a, b) => compareVersions(b.v, a.v));
  const best = above[0] ?? below[0]!;
  return pick(best.tag, best.v, sameLine.length > 0 ? 'same-release' : requested ? 'other-release' : 'nearest');
}

/** Flag profile of the generated worker arguments. */
export type DynamoProfile = '0.9' | '1.x';

/** The flag profile of a Dynamo release: 0.x releases take the 0.9 flags, 1.x releases the 1.x flags. */
export function releaseProfile(release: string): DynamoProfile {
  return /^0\./.test(release) ? '0.9' : '1.x';
}

/** The annotation text saying how well the image matches the engine version. */
export function describeMatch(backend: Backend, image: ImageChoice): string {
  const ships = `image ships ${backend} ${image.shipsVersion}`;
  return image.requested ? `${image.match} (Dynamo ${image.release} from --dynamo-version ${image.requested}; ${ships})` : `${image.match} (${ships})`;
}
