// A damaged HF cache or a dangling link given as --hf-id is the user's input: exit 2 with one line naming it.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../../src/inputs/models.js';
import { ExitCode, InputError } from '../../src/util/errors.js';

const root = mkdtempSync(join(tmpdir(), 'inferplan-hfcache-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const offline = (cache: string) => ({ HF_HUB_CACHE: cache, HF_HUB_OFFLINE: '1' });

async function failure(hfId: string, env: NodeJS.ProcessEnv = {}): Promise<InputError> {
  const err = await resolveModel(hfId, { env }).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(InputError);
  expect((err as InputError).exitCode).toBe(ExitCode.badInput);
  expect((err as Error).message).not.toContain('\n');
  return err as InputError;
}

describe('damaged model inputs', () => {
  it('an HF cache whose snapshots is a file', async () => {
    const cache = join(root, 'c1');
    mkdirSync(join(cache, 'models--acme--tiny'), { recursive: true });
    writeFileSync(join(cache, 'models--acme--tiny', 'snapshots'), 'not a directory');
    expect((await failure('acme/tiny', offline(cache))).message).toMatch(/HF cache entry for acme\/tiny is damaged: .*snapshots is not a directory/);
  });
  it('an HF cache whose refs/main is a directory falls back to the snapshots', async () => {
    const cache = join(root, 'c2');
    const repo = join(cache, 'models--acme--tiny');
    mkdirSync(join(repo, 'refs', 'main'), { recursive: true });
    mkdirSync(join(repo, 'snapshots', 'abc'), { recursive: true });
    writeFileSync(join(repo, 'snapshots', 'abc', 'config.json'), JSON.stringify({
      architectures: ['Qwen3ForCausalLM'], hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4,
      num_key_value_heads: 2, head_dim: 64, vocab_size: 1000, max_position_embeddings: 4096, torch_dtype: 'bfloat16',
    }));
    const m = await resolveModel('acme/tiny', { env: offline(cache) });
    expect(m.numLayers).toBe(2);
  });
  it('a snapshot whose config.json links to a deleted blob is skipped, then the offline miss is reported', async () => {
    const cache = join(root, 'c3');
    const snap = join(cache, 'models--acme--tiny', 'snapshots', 'abc');
    mkdirSync(snap, { recursive: true });
    symlinkSync(join(cache, 'blobs', 'gone'), join(snap, 'config.json'));
    expect((await failure('acme/tiny', offline(cache))).message).toMatch(/not in the HF cache .*HF_HUB_OFFLINE/);
  });
  it('--hf-id naming a dangling symbolic link', async () => {
    const link = join(root, 'model-link');
    symlinkSync(join(root, 'nowhere'), link);
    expect((await failure(link)).message).toMatch(/symbolic link to a path that does not exist/);
  });
});
