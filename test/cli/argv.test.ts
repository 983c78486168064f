import { describe, expect, it } from 'vitest';
import { normalizeArgv } from '../../src/cli/common.js';

describe('normalizeArgv', () => {
  it('maps aiconfigurator v0.6 underscore flags to dashes and drops the leading cli word', () => {
    expect(normalizeArgv(['cli', 'default', '--hf_id', 'Qwen/Qwen3_32B', '--total_gpus=8'])).toEqual([
      'default',
      '--hf-id',
      'Qwen/Qwen3_32B',
      '--total-gpus=8',
    ]);
  });
  it('leaves values and dash flags alone', () => {
    expect(normalizeArgv(['default', '--save-dir', 'a_b'])).toEqual(['default', '--save-dir', 'a_b']);
  });
});
