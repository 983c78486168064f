import { mkdirSync, mkdtempSync, rmSync, writeFileSync, utimesSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findInHfCache, hfCacheDir, resolveModel } from '../../src/inputs/models.js';
import { renamedId } from '../../src/inputs/registry.js';
import { modelRefusal } from '../../src/engine/index.js';
import { InputError, UnsupportedError } from '../../src/util/errors.js';

const tiny = (layers = 4) => ({
  architectures: ['Qwen3ForCausalLM'],
  hidden_size: 256,
  intermediate_size: 512,
  num_hidden_layers: layers,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 64,
  vocab_size: 1000,
  max_position_embeddings: 4096,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
});

const GLM5 = {
  ...tiny(), architectures: ['GlmMoeDsaForCausalLM'], q_lora_rank: 128, kv_lora_rank: 64, qk_nope_head_dim: 48, qk_rope_head_dim: 16,
  v_head_dim: 64, n_routed_experts: 8, num_experts_per_tok: 2, moe_intermediate_size: 128, n_shared_experts: 1, first_k_dense_replace: 3,
  index_topk: 2048, index_n_heads: 4, index_head_dim: 32,
};

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'inferplan-resolve-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function writeModelDir(dir: string, config: unknown, quant?: unknown): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), typeof config === 'string' ? config : JSON.stringify(config));
  if (quant) writeFileSync(join(dir, 'hf_quant_config.json'), JSON.stringify(quant));
  return dir;
}

/** A fake HF cache: <cache>/models--ORG--NAME/snapshots/<rev>/config.json (+ refs/main). */
function writeCache(cache: string, id: string, rev: string, config: unknown, refMain = true): string {
  const repo = join(cache, `models--${id.replace('/', '--')}`);
  const snap = writeModelDir(join(repo, 'snapshots', rev), config);
  if (refMain) {
    mkdirSync(join(repo, 'refs'), { recursive: true });
    writeFileSync(join(repo, 'refs', 'main'), rev);
  }
  return snap;
}

const offline = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({ HF_HUB_OFFLINE: '1', HOME: root, ...extra });

describe('local checkpoints', () => {
  it('a directory with config.json and hf_quant_config.json', async () => {
    const dir = writeModelDir(join(root, 'my-model'), tiny(), { quantization: { quant_algo: 'FP8', kv_cache_quant_algo: 'FP8' } });
    const m = await resolveModel(dir, { env: offline() });
    expect(m).toMatchObject({ id: 'my-model', family: 'qwen3', numLayers: 4, source: dir, kvDtype: 'fp8' });
    expect(m.quant.gemmDtype).toBe('fp8');
  });
  it('a path to a config.json', async () => {
    const dir = writeModelDir(join(root, 'by-file'), tiny(6));
    const m = await resolveModel(join(dir, 'config.json'), { env: offline() });
    expect(m.numLayers).toBe(6);
    expect(m.id).toBe('by-file');
  });
  it('a directory without config.json is bad input', async () => {
    mkdirSync(join(root, 'empty'), { recursive: true });
    await expect(resolveModel(join(root, 'empty'), { env: offline() })).rejects.toThrow(/has no config\.json/);
  });
  it('malformed config.json: one-line InputError (exit 2)', async () => {
    const dir = writeModelDir(join(root, 'malformed'), '{ "architectures": [ "LlamaForCausalLM", ');
    const err = await resolveModel(dir, { env: offline() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/malformed\/config\.json is not valid JSON: /);
    expect((err as Error).message).not.toContain('\n');
  });
  it('unknown architecture: UnsupportedError (exit 4)', async () => {
    const dir = writeModelDir(join(root, 'mamba'), { ...tiny(), architectures: ['MambaForCausalLM'] });
    const err = await resolveModel(dir, { env: offline() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedError);
    expect((err as UnsupportedError).exitCode).toBe(4);
  });
});

describe('Hugging Face cache', () => {
  it('HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub', () => {
    expect(hfCacheDir({ HF_HUB_CACHE: '/a', HF_HOME: '/b' })).toBe('/a');
    expect(hfCacheDir({ HF_HOME: '/b' })).toBe(join('/b', 'hub'));
    expect(hfCacheDir({ HOME: '/home/u' })).toBe(join('/home/u', '.cache', 'huggingface', 'hub'));
  });
  it('finds the snapshot that refs/main names', async () => {
    const cache = join(root, 'cache1');
    writeCache(cache, 'acme/tiny', 'aaa', tiny(2), false);
    writeCache(cache, 'acme/tiny', 'bbb', tiny(3), true);
    const m = await resolveModel('acme/tiny', { env: offline({ HF_HUB_CACHE: cache }) });
    expect(m).toMatchObject({ id: 'acme/tiny', numLayers: 3, source: 'hf-cache' });
  });
  it('without refs/main, takes the newest snapshot; HF_HOME works too', async () => {
    const home = join(root, 'hfhome');
    const old = writeCache(join(home, 'hub'), 'acme/two', 'old', tiny(2), false);
    writeCache(join(home, 'hub'), 'acme/two', 'new', tiny(5), false);
    utimesSync(join(old, 'config.json'), new Date(2000, 1, 1), new Date(2000, 1, 1));
    expect(findInHfCache('acme/two', { HF_HOME: home })).toBe(join(home, 'hub', 'models--acme--two', 'snapshots', 'new'));
    expect((await resolveModel('acme/two', { env: offline({ HF_HOME: home }) })).numLayers).toBe(5);
  });
  it('the bundled registry comes first, even when the cache holds the id', async () => {
    const cache = join(root, 'cache2');
    writeCache(cache, 'Qwen/Qwen3-8B', 'r', tiny(2));
    const m = await resolveModel('Qwen/Qwen3-8B', { env: offline({ HF_HUB_CACHE: cache }) });
    expect(m.source).toBe('bundled');
    expect(m.numLayers).toBe(36);
  });
  it('HF_HUB_OFFLINE with nothing local: a one-line error naming the cache', async () => {
    await expect(resolveModel('acme/absent', { env: offline({ HF_HUB_CACHE: join(root, 'none') }) })).rejects.toThrow(/HF_HUB_OFFLINE is set/);
  });
  it('an id that is neither bundled, local nor ORG/NAME is bad input', async () => {
    await expect(resolveModel('not a model', { env: offline() })).rejects.toThrow(InputError);
  });
  it('a path that does not exist is bad input without asking the Hub', async () => {
    const neverCalled = (() => {
      throw new Error('the Hub must not be asked for a local path');
    }) as unknown as typeof fetch;
    for (const id of ['./absent-dir', '../absent/x', '/absent/dir']) {
      await expect(resolveModel(id, { env: {}, fetchImpl: neverCalled })).rejects.toThrow(/no such directory/);
    }
  });
});

describe('organisations that moved on the Hub', () => {
  /** GLM-5's config.json, shrunk: MLA with a DSA indexer on every layer, experts after three dense layers. */
  const glm5 = GLM5;
  it('renamedId maps the old organisation (any case) and leaves every other id alone', () => {
    expect(renamedId('zhipuai/GLM-5')).toBe('zai-org/GLM-5');
    expect(renamedId('THUDM/GLM-4-9B-0414')).toBe('zai-org/GLM-4-9B-0414');
    expect(renamedId('thudm/glm-4-9b')).toBe('zai-org/glm-4-9b');
    for (const id of ['zai-org/GLM-5', 'Qwen/Qwen3-8B', 'zhipuai', './zhipuai/GLM-5', 'a/b/c']) expect(renamedId(id)).toBe(id);
  });
  it('the old id resolves to the current one in the cache, and is planned under the current id', async () => {
    const cache = join(root, 'cache-moved');
    writeCache(cache, 'zai-org/GLM-5-Mini', 'r', glm5);
    const m = await resolveModel('zhipuai/GLM-5-Mini', { env: offline({ HF_HUB_CACHE: cache }) });
    expect(m).toMatchObject({ id: 'zai-org/GLM-5-Mini', family: 'glm_moe_dsa', layerMix: [{ kind: 'dsa', count: 4 }] });
    expect(modelRefusal(m)).toBeUndefined();
    const direct = await resolveModel('zai-org/GLM-5-Mini', { env: offline({ HF_HUB_CACHE: cache }) });
    expect(direct).toEqual(m);
  });
  it('the spelling of the measurements resolves to the bundled entry', async () => {
    const m = await resolveModel('zhipuai/GLM-5', { env: offline({ HF_HUB_CACHE: join(root, 'none') }) });
    expect(m).toMatchObject({ id: 'zai-org/GLM-5', source: 'bundled' });
  });
  it('a checkpoint cached under the old name is found and reported under the new one', async () => {
    const cache = join(root, 'cache-old-name');
    writeCache(cache, 'THUDM/tiny-glm', 'r', tiny(3));
    const m = await resolveModel('THUDM/tiny-glm', { env: offline({ HF_HUB_CACHE: cache }) });
    expect(m).toMatchObject({ id: 'zai-org/tiny-glm', numLayers: 3, source: 'hf-cache' });
  });
  it('offline and not cached: the error names the id asked for', async () => {
    await expect(resolveModel('zhipuai/GLM-5-Mini', { env: offline({ HF_HUB_CACHE: join(root, 'none') }) })).rejects.toThrow(/"zai-org\/GLM-5-Mini" is not bundled/);
  });
});

describe('the Hub over HTTP (local server)', () => {
  let server: Server;
  let endpoint: string;
  const seen: { url: string; auth?: string }[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    seen.push({ url: req.url ?? '', auth: req.headers.authorization });
    const url = req.url ?? '';
    if (url.startsWith('/slow/')) return; // never answers: the client must time out
    if (url === '/acme/open/resolve/main/config.json') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(tiny(7)));
    if (url === '/acme/modelopt/resolve/main/config.json') return void res.writeHead(200).end(JSON.stringify(tiny(8)));
    if (url === '/acme/modelopt/resolve/main/hf_quant_config.json') return void res.writeHead(200).end(JSON.stringify({ quantization: { quant_algo: 'NVFP4', kv_cache_quant_algo: 'FP8' } }));
    if (url.startsWith('/acme/gated/')) {
      if (req.headers.authorization === 'Bearer good') return void res.writeHead(200).end(JSON.stringify(tiny(9)));
      return void res.writeHead(401).end('gated');
    }
    if (url === '/acme/broken/resolve/main/config.json') return void res.writeHead(200).end('not json');
    if (url === '/zai-org/GLM-5-Mini/resolve/main/config.json') return void res.writeHead(200).end(JSON.stringify(GLM5));
    res.writeHead(404).end('not found');
  };
  beforeAll(async () => {
    server = createServer(handler);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({ HF_ENDPOINT: endpoint, HF_HUB_CACHE: join(root, 'no-cache'), ...extra });

  it('fetches config.json from HF_ENDPOINT/ORG/NAME/resolve/main', async () => {
    const m = await resolveModel('acme/open', { env: env() });
    expect(m).toMatchObject({ id: 'acme/open', numLayers: 7, source: 'hub', kvDtype: 'bfloat16' });
    expect(seen.some((s) => s.url === '/acme/open/resolve/main/config.json')).toBe(true);
  });
  it('also reads hf_quant_config.json when the checkpoint has one', async () => {
    const m = await resolveModel('acme/modelopt', { env: env() });
    expect(m.quant.gemmDtype).toBe('nvfp4');
    expect(m.kvDtype).toBe('fp8');
  });
  it('gated without a token: 401 -> one-line error that mentions HF_TOKEN', async () => {
    const err = await resolveModel('acme/gated', { env: env() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/"acme\/gated" is gated or private on the Hub \(HTTP 401\); set HF_TOKEN/);
  });
  it('sends HF_TOKEN as a bearer token', async () => {
    const m = await resolveModel('acme/gated', { env: env({ HF_TOKEN: 'good' }) });
    expect(m.numLayers).toBe(9);
    expect(seen.filter((s) => s.url.startsWith('/acme/gated/')).at(-1)?.auth).toBe('Bearer good');
  });
  it('404: not found anywhere', async () => {
    await expect(resolveModel('acme/missing', { env: env() })).rejects.toThrow(/not found: .*the Hub answered 404/);
  });
  it('asks the Hub for the current id of a moved organisation', async () => {
    const m = await resolveModel('zhipuai/GLM-5-Mini', { env: env() });
    expect(m).toMatchObject({ id: 'zai-org/GLM-5-Mini', family: 'glm_moe_dsa', source: 'hub' });
    expect(seen.some((s) => s.url === '/zai-org/GLM-5-Mini/resolve/main/config.json')).toBe(true);
    expect(seen.some((s) => s.url.startsWith('/zhipuai/'))).toBe(false);
  });
  it('a Hub answer that is not JSON is bad input', async () => {
    await expect(resolveModel('acme/broken', { env: env() })).rejects.toThrow(/config\.json of acme\/broken from the Hub is not valid JSON/);
  });
  it('times out with a clear message', async () => {
    const err = await resolveModel('slow/model', { env: env(), timeoutMs: 150 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/did not answer within 0\.15 s \(offline\?\)/);
  });
  it('offline (connection refused) gives a clear message', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await resolveModel('acme/open', { env: env({ HF_ENDPOINT: `http://127.0.0.1:${port}` }) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/cannot reach the Hub at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\) \(offline\?\)/);
  });
});
