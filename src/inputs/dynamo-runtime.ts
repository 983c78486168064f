// Which engine release each Dynamo runtime image ships. Measurements of TRT-LLM sometimes record the image tag
// (0.x.y) as the engine version; the release inside is what sets the engine's behaviour.
import type { Backend } from './types.js';
import { compareVersions } from '../util/versions.js';

export interface DynamoRuntimeRow {
  /** The Dynamo release; its runtime images are tagged with it (`vllm-runtime:1.4.0`). */
  tag: string;
  /** Release date (YYYY-MM-DD), where Dynamo's release table gives one (0.8.0 on). */
  date?: string;
  vllm: string;
  sglang: string;
  trtllm: string;
}

/**
 * Dynamo release -> engine versions in its runtime images, newest first. 0.8.0 to 1.4.0: Dynamo's release table
 * (docs/fern/components/releases.data.ts, "single source of truth for releases"; tags up to 1.2.1 also in
 * docs/reference/release-artifacts.md). Patch releases that kept their engines have rows of their own, so a
 * default picks the newest image. TRT-LLM-only re-releases (0.8.1.postN) are image tags, not rows.
 */
export const DYNAMO_RUNTIME_TABLE: ReadonlyArray<DynamoRuntimeRow> = [
  { tag: '1.4.0', date: '2026-08-14', vllm: '0.26.0', sglang: '0.5.16', trtllm: '1.3.0rc22' },
  { tag: '1.3.1', date: '2026-08-05', vllm: '0.23.0', sglang: '0.5.14', trtllm: '1.3.0rc19' },
  { tag: '1.3.0', date: '2026-07-20', vllm: '0.23.0', sglang: '0.5.14', trtllm: '1.3.0rc19' },
  { tag: '1.2.1', date: '2026-06-13', vllm: '0.20.1', sglang: '0.5.11', trtllm: '1.3.0rc14' },
  { tag: '1.2.0', date: '2026-06-02', vllm: '0.20.1', sglang: '0.5.11', trtllm: '1.3.0rc14' },
  { tag: '1.1.1', date: '2026-05-05', vllm: '0.19.0', sglang: '0.5.10.post1', trtllm: '1.3.0rc11' },
  { tag: '1.1.0', date: '2026-05-01', vllm: '0.19.0', sglang: '0.5.10.post1', trtllm: '1.3.0rc11' },
  { tag: '1.0.2', date: '2026-04-22', vllm: '0.16.0', sglang: '0.5.9', trtllm: '1.3.0rc5.post1' },
  { tag: '1.0.1', date: '2026-03-16', vllm: '0.16.0', sglang: '0.5.9', trtllm: '1.3.0rc5.post1' },
  { tag: '1.0.0', date: '2026-03-12', vllm: '0.16.0', sglang: '0.5.9', trtllm: '1.3.0rc5.post1' },
  { tag: '0.9.1', date: '2026-03-04', vllm: '0.14.1', sglang: '0.5.8', trtllm: '1.3.0rc3' },
  { tag: '0.9.0', date: '2026-02-11', vllm: '0.14.1', sglang: '0.5.8', trtllm: '1.3.0rc1' },
  { tag: '0.8.1', date: '2026-01-23', vllm: '0.12.0', sglang: '0.5.6.post2', trtllm: '1.2.0rc6.post1' },
  { tag: '0.8.0', date: '2026-01-15', vllm: '0.12.0', sglang: '0.5.6.post2', trtllm: '1.2.0rc6.post1' },
  { tag: '0.7.1', vllm: '0.11.0', sglang: '0.5.4.post3', trtllm: '1.2.0rc3' },
  { tag: '0.7.0', vllm: '0.11.0', sglang: '0.5.4.post3', trtllm: '1.2.0rc2' },
  { tag: '0.6.1', vllm: '0.11.0', sglang: '0.5.3.post2', trtllm: '1.1.0rc5' },
];

/**
 * The engine release the newest dated Dynamo release on or before `isoDate` ships (the oldest dated one for an
 * earlier date): what a measurement that records its date but not its release most likely ran.
 */
export function engineShippedBy(backend: Backend, isoDate: string): string {
  const dated = DYNAMO_RUNTIME_TABLE.filter((r) => r.date);
  const row = dated.find((r) => r.date! <= isoDate) ?? dated.at(-1)!;
  return row[backend];
}

/** The newest Dynamo release in the table. */
export const NEWEST_DYNAMO_RELEASE = DYNAMO_RUNTIME_TABLE[0]!.tag;

/**
 * The first release that serves DynamoGraphDeployment `nvidia.com/v1beta1` (#8414 added it, #8647 served it,
 * both in the 1.2.0 release notes); v1alpha1 stays served, deprecated, through 1.4.
 */
export const DGD_V1BETA1_FROM = '1.2.0';

/** The first release whose DGD admission takes (and, for images without a version tag, requires) `runtimeVersionOverride` (#10494, backported to 1.4.0 as #12427). */
export const RUNTIME_VERSION_OVERRIDE_FROM = '1.4.0';

/** The DynamoGraphDeployment API version to write for a Dynamo release. */
export function dgdApiVersion(release: string): 'nvidia.com/v1alpha1' | 'nvidia.com/v1beta1' {
  return compareVersions(release, DGD_V1BETA1_FROM) >= 0 ? 'nvidia.com/v1beta1' : 'nvidia.com/v1alpha1';
}

/**
 * TensorRT-LLM-only re-releases of a Dynamo release: its image tag `<tag>.postN` carried the N-th post release of
 * the TRT-LLM candidate the release shipped (0.8.1.post1-post3 carried 1.2.0rc6.post1-post3, per Dynamo's
 * release notes).
 */
const TRTLLM_POST_RERELEASES = new Set(['0.8.1']);

/**
 * The TRT-LLM release a recorded version runs: a 0.x.y version is a Dynamo runtime image tag (TRT-LLM's own
 * releases are 1.x), and the image of that Dynamo release (else the newest of its 0.x line) ships the release
 * returned; other versions, and tags of lines we have no record of, run as named.
 */
export function trtllmReleaseOf(version: string): string {
  const m = /^0\.(\d+)\.(\d+)(?:\.post(\d+))?/.exec(version);
  if (!m) return version;
  const tag = `0.${m[1]}.${m[2]}`;
  const row = DYNAMO_RUNTIME_TABLE.find((r) => r.tag === tag) ?? DYNAMO_RUNTIME_TABLE.find((r) => r.tag.startsWith(`0.${m[1]}.`));
  if (!row) return version;
  if (m[3] && TRTLLM_POST_RERELEASES.has(tag)) return row.trtllm.replace(/\.post\d+$/, '') + `.post${m[3]}`;
  return row.trtllm;
}

/** The engine release a recorded version runs (TRT-LLM versions may name a Dynamo image). */
export function engineRelease(backend: Backend, version: string): string {
  return backend === 'trtllm' ? trtllmReleaseOf(version) : version;
}
