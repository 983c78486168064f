import { describe, expect, it } from 'vitest';
import { compareVersions, onLineAtLeast, onLineBefore, versionDistance, versionKey } from '../../src/util/versions.js';
import { engineRelease, trtllmReleaseOf } from '../../src/inputs/dynamo-runtime.js';
import { releaseOfBuild } from '../../src/engine/rows.js';
import { flagVars } from '../../src/output/engine-args.js';

describe('engine versions', () => {
  it('order candidates and dev builds before their release, post releases after it', () => {
    const sorted = ['1.2.0', '1.2.0rc6.post1', '1.2.0rc2', '1.10.0', '1.3.0rc1', '1.2.0.post1', '1.2.0.dev0'].sort(compareVersions);
    expect(sorted).toEqual(['1.2.0.dev0', '1.2.0rc2', '1.2.0rc6.post1', '1.2.0', '1.2.0.post1', '1.3.0rc1', '1.10.0']);
    expect(versionKey('0.5.1-rc0.pre3')).toEqual([0, 5, 1, -1, 0, 0]);
    expect(versionKey('0.22')).toEqual([0, 22, 0, 0, 0, 0]);
    // Image tags and nightlies have no key and sort before every release.
    expect(versionKey('gpt-oss-dev')).toBeUndefined();
    expect(['0.12.0', 'nightly-5'].sort(compareVersions)).toEqual(['nightly-5', '0.12.0']);
  });

  it("test release lines, a line's candidates counting as the line", () => {
    expect(onLineAtLeast('1.2.0rc5', '1.2')).toBe(true);
    expect(onLineAtLeast('1.1.0rc2.post2', '1.2')).toBe(false);
    expect(onLineAtLeast('1.10.0', '1.2')).toBe(true);
    expect(onLineAtLeast('0.5.6.post2', '0.5.6')).toBe(true);
    expect(onLineAtLeast('0.5.10.post1', '0.5.6')).toBe(true);
    expect(onLineAtLeast('0.5.4.post3', '0.5.6')).toBe(false);
    expect(onLineAtLeast('nightly-5', '0.5.6')).toBe(false);
    // A name without a version is on no earlier line either (SGLang nightlies are not lockstep releases).
    expect(onLineBefore('0.5.4.post3', '0.5.6')).toBe(true);
    expect(onLineBefore('0.5.6', '0.5.6')).toBe(false);
    expect(onLineBefore('nightly-5', '0.5.6')).toBe(false);
  });

  it('measure the distance to the nearest measured version: numbers first, then candidates', () => {
    const nearest = (want: string, have: string[]) => [...have].sort((a, b) => versionDistance(a, want) - versionDistance(b, want))[0];
    expect(nearest('0.12.0', ['0.14.0', '0.19.0'])).toBe('0.14.0');
    expect(nearest('1.2.0', ['1.2.0rc5', '1.2.0rc2', '1.3.0rc1'])).toBe('1.2.0rc5');
    expect(nearest('1.3.0rc1', ['1.2.0rc5', '1.0.0rc3'])).toBe('1.2.0rc5');
  });

  it('read a Dynamo image tag recorded as a TRT-LLM version as the release its image (or its line) ships', () => {
    expect(trtllmReleaseOf('0.8.1')).toBe('1.2.0rc6.post1');
    // TRT-LLM-only re-releases of Dynamo 0.8.1 carried the matching post release of 1.2.0rc6
    expect(trtllmReleaseOf('0.8.1.post2')).toBe('1.2.0rc6.post2');
    expect(trtllmReleaseOf('0.8.1.post3')).toBe('1.2.0rc6.post3');
    expect(trtllmReleaseOf('0.9.0')).toBe('1.3.0rc1');
    expect(trtllmReleaseOf('0.5.1-rc0.pre3')).toBe('0.5.1-rc0.pre3');
    expect(engineRelease('vllm', '0.8.1')).toBe('0.8.1');
    // The day-0 gpt-oss build runs as the newest supported release before 1.1; a tag of a 1.2 image is not one.
    expect(releaseOfBuild('trtllm', 'gpt-oss-dev', ['0.8.1.post1', '1.0.0rc3', '1.1.0rc2.post2', '1.2.0rc5'])).toBe('1.0.0rc3');
    expect(releaseOfBuild('trtllm', 'gpt-oss-dev', ['0.8.1.post1', '1.1.0rc2'])).toBeUndefined();
  });

  it('TRT-LLM engine YAML keeps cache_transceiver_config before 1.3, Dynamo 0.9 images included, and balances attention DP from 1.1', () => {
    const vars = (version: string) =>
      flagVars({ backend: 'trtllm', version } as never, { role: 'agg', layout: { tp: 1, pp: 1, dp: 8, moeTp: 1, moeEp: 8 } } as never);
    const transceiver = (version: string) => vars(version).cache_transceiver;
    expect(transceiver('1.2.0rc5')).toBe(true);
    expect(transceiver('0.8.1.post2')).toBe(true);
    expect(transceiver('1.3.0rc5.post1')).toBe(false);
    expect(transceiver('0.9.1')).toBe(false);
    expect(transceiver('0.9.0')).toBe(false);
    expect(vars('1.0.0rc3').adp_balance).toBe(false);
    expect(vars('1.1.0rc2.post2').adp_balance).toBe(true);
    expect(vars('0.8.1.post2').adp_balance).toBe(true);
    expect(vars('gpt-oss-dev').adp_balance).toBe(false);
  });
});
