// Which engine release each Dynamo runtime image ships. Measurements of TRT-LLM sometimes record the image tag
// (0.x.y) as the engine version; the release inside is what sets the engine's behaviour.
import type { Backend } from './types.js';

/** Dynamo release -> engine versions in its runtime images (newest first). */
export const DYNAMO_RUNTIME_TABLE: ReadonlyArray<{ tag: string; vllm: string; sglang: string; trtllm: string }> = [
  { tag: '1.3.0', vllm: '0.24.0', sglang: '0.5.16', trtllm: '1.3.0rc23' },
  { tag: '1.2.0', vllm: '0.20.1', sglang: '0.5.11', trtllm: '1.3.0rc14' },
  { tag: '1.1.0', vllm: '0.19.0', sglang: '0.5.10.post1', trtllm: '1.3.0rc11' },
  { tag: '1.0.0', vllm: '0.16.0', sglang: '0.5.9', trtllm: '1.3.0rc5.post1' },
  { tag: '0.9.1', vllm: '0.14.1', sglang: '0.5.8', trtllm: '1.3.0rc1' },
  { tag: '0.8.1', vllm: '0.12.0', sglang: '0.5.6.post2', trtllm: '1.2.0rc6.post1' },
  { tag: '0.7.1', vllm: '0.11.0', sglang: '0.5.4.post3', trtllm: '1.2.0rc3' },
  { tag: '0.7.0', vllm: '0.11.0', sglang: '0.5.4.post3', trtllm: '1.2.0rc2' },
  { tag: '0.6.1', vllm: '0.11.0', sglang: '0.5.3.post2', trtllm: '1.1.0rc5' },
];

/**
 * The TRT-LLM release a recorded version runs: a 0.x.y version is a Dynamo runtime image tag (TRT-LLM's own
 * releases are 1.x), and the image of that Dynamo release (else the newest of its 0.x line) ships the release
 * returned; other versions, and tags of lines we have no record of, run as named.
 */
export function trtllmReleaseOf(version: string): string {
  const m = /^0\.(\d+)\.(\d+)/.exec(version);
  if (!m) return version;
  const row = DYNAMO_RUNTIME_TABLE.find((r) => r.tag === `0.${m[1]}.${m[2]}`) ?? DYNAMO_RUNTIME_TABLE.find((r) => r.tag.startsWith(`0.${m[1]}.`));
  return row?.trtllm ?? version;
}

/** The engine release a recorded version runs (TRT-LLM versions may name a Dynamo image). */
export function engineRelease(backend: Backend, version: string): string {
  return backend === 'trtllm' ? trtllmReleaseOf(version) : version;
}
