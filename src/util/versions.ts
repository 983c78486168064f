// Engine version strings, one parser for all of them: releases (0.12.0, 1.2), candidates and builds
// (1.2.0rc6.post1, 0.5.1-rc0.pre3, 0.11.0.dev0) and post releases (0.5.6.post2).

/** [major, minor, patch, stage, stage number, post]; stage -2 for a dev build, -1 for a/b/rc/pre, 0 for a release. */
export type VersionKey = [number, number, number, number, number, number];

/** The sortable key of a version, or undefined when it does not start with major.minor (an image tag, `nightly-5`). */
export function versionKey(v: string): VersionKey | undefined {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?(?:[.-]?(rc|dev|pre|a|b)[.-]?(\d+)?)?(?:[.-]?post(\d+))?/.exec(v.trim());
  if (!m) return undefined;
  const stage = m[4] === undefined ? 0 : m[4] === 'dev' ? -2 : -1;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0), stage, Number(m[5] ?? 0), Number(m[6] ?? 0)];
}

/** Order of two versions (a candidate before its release, a post release after it); unparsable ones first, as text. */
export function compareVersions(a: string, b: string): number {
  const x = versionKey(a);
  const y = versionKey(b);
  if (!x || !y) return x ? 1 : y ? -1 : a < b ? -1 : a > b ? 1 : 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
}

/**
 * Whether `v` belongs to release line `line` (major.minor or major.minor.patch) or a later one. A line's
 * candidates count as the line: engines change behaviour in the candidates that lead to a release.
 */
export function onLineAtLeast(v: string, line: string): boolean {
  const x = versionKey(v);
  const y = versionKey(line);
  if (!x || !y) return false;
  const parts = line.split('.').length;
  for (let i = 0; i < parts; i++) if (x[i] !== y[i]) return x[i]! > y[i]!;
  return true;
}

/** Whether `v` is a known release of a line before `line`; names without a version (nightlies, image tags) are not. */
export function onLineBefore(v: string, line: string): boolean {
  return versionKey(v) !== undefined && !onLineAtLeast(v, line);
}

/** Distance between versions for picking the nearest measured one: numeric parts first, then stage and post. */
export function versionDistance(a: string, b: string): number {
  const x = versionKey(a) ?? [0, 0, 0, 0, 0, 0];
  const y = versionKey(b) ?? [0, 0, 0, 0, 0, 0];
  const tail = (k: VersionKey) => k[3] * 100 + k[4] + k[5] / 100;
  return Math.abs(x[0] - y[0]) * 1e6 + Math.abs(x[1] - y[1]) * 1e3 + Math.abs(x[2] - y[2]) + Math.abs(tail(x) - tail(y)) * 1e-3;
}
