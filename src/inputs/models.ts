// Resolve what the user named with --hf-id into a ModelSpec, in a fixed order:
// bundled registry -> local directory -> path to a config.json -> local HF cache -> the Hub over HTTPS.
// An id whose organisation moved on the Hub (zhipuai/GLM-5 -> zai-org/GLM-5) resolves as its current id.
import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve as resolvePath } from 'node:path';
import JSON5 from 'json5';
import { InputError } from '../util/errors.js';
import { parseHfConfig } from './hf-config.js';
import { findBundled, loadRegistry, renamedId } from './registry.js';
import type { ModelSpec } from './types.js';

export { parseHfConfig, SUPPORTED_ARCHITECTURES } from './hf-config.js';
export { countParams, activeParams } from './params.js';

export interface ResolveOptions {
  /** Environment to read HF_HUB_CACHE, HF_HOME, HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Hub request timeout in ms (default 10 000). */
  timeoutMs?: number;
  /** fetch implementation (tests). */
  fetchImpl?: typeof fetch;
}

export const DEFAULT_HUB_TIMEOUT_MS = 10_000;

/** Every bundled model, in registry order. */
export function listBundledModels(): ModelSpec[] {
  return loadRegistry().map((m) => structuredClone(m));
}

/** Resolve a model id, directory or config.json path (see the order above). */
export async function resolveModel(hfId: string, opts: ResolveOptions = {}): Promise<ModelSpec> {
  const name = hfId.trim();
  if (name === '') throw new InputError('--hf-id is empty; give a bundled id (see `configure models`), a directory with config.json, or ORG/NAME');
  const env = opts.env ?? process.env;

  const current = renamedId(name);
  const bundled = findBundled(name) ?? (current !== name ? findBundled(current) : undefined);
  if (bundled) return structuredClone(bundled);

  if (existsSync(name)) {
    const st = statSync(name);
    if (st.isDirectory()) return fromDirectory(name, displayIdForDir(name));
    if (st.isFile()) return fromConfigFile(name, displayIdForFile(name));
  }
  if (isDanglingLink(name)) {
    throw new InputError(`model "${hfId}" is a symbolic link to a path that does not exist; give the directory or config.json it should point to`);
  }
  // A path that does not exist is a typo, not a Hub id: say so instead of asking the network.
  if (/^(\.{1,2}|~)?\//.test(name)) {
    throw new InputError(`model "${hfId}": no such directory or config.json; give an existing path, a bundled id (configure models) or ORG/NAME`);
  }
  if (!/^[\w.-]+\/[\w.-]+$/.test(name)) {
    throw new InputError(`model "${hfId}" is not bundled, not a local directory or config.json, and not an ORG/NAME Hub id; bundled models: configure models`);
  }

  const cachedOld = current !== name ? findInHfCache(name, env) : undefined;
  if (cachedOld) return fromDirectory(cachedOld, current, 'hf-cache');
  const cached = findInHfCache(current, env);
  if (cached) return fromDirectory(cached, current, 'hf-cache');

  return fromHub(current, env, opts);
}

function isDanglingLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink() && !existsSync(path);
  } catch {
    return false;
  }
}

function displayIdForDir(dir: string): string {
  const abs = resolvePath(dir);
  // .../models--ORG--NAME/snapshots/<rev> -> ORG/NAME
  const m = /models--([^/]+?)--([^/]+)\/snapshots\/[^/]+\/?$/.exec(abs);
  if (m) return `${m[1]}/${m[2]}`;
  return basename(abs);
}

function displayIdForFile(path: string): string {
  const file = basename(path);
  if (file === 'config.json') return displayIdForDir(dirname(path));
  // "ORG--NAME_config.json" (how configs are often saved side by side) -> ORG/NAME
  const stem = file.replace(/_?config\.json$/, '').replace(/\.json$/, '');
  return /^[\w.-]+--[\w.-]+$/.test(stem) ? stem.replace('--', '/') : stem || file;
}

function readJson(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  return parseJsonText(text, path);
}

/**
 * Parse a config file. Checkpoints written by Python's json module may hold NaN / Infinity (Nemotron-H's
 * `time_step_limit`), which JSON.parse rejects; JSON5 reads them, so it is the fallback.
 */
export function parseJsonText(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // fall through to the lenient parser
  }
  try {
    return JSON5.parse(text);
  } catch (err) {
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new InputError(`${where} is not valid JSON: ${msg}`);
  }
}

function fromDirectory(dir: string, id: string, source = resolvePath(dir)): ModelSpec {
  const cfg = join(dir, 'config.json');
  if (!existsSync(cfg)) throw new InputError(`directory ${dir} has no config.json`);
  return fromConfigFile(cfg, id, source);
}

function fromConfigFile(path: string, id: string, source = resolvePath(path)): ModelSpec {
  const config = readJson(path, 'config');
  // config.json -> hf_quant_config.json; X_config.json -> X_hf_quant_config.json
  const quantPath = join(dirname(path), basename(path).replace(/config\.json$/, 'hf_quant_config.json'));
  const quant = existsSync(quantPath) ? readJson(quantPath, 'quantization config') : undefined;
  return parseHfConfig(config, quant, id, source);
}

/** The HF hub cache directory: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub. */
export function hfCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return join(env.HF_HOME, 'hub');
  const xdg = env.XDG_CACHE_HOME;
  return join(xdg ? xdg : join(env.HOME ?? homedir(), '.cache'), 'huggingface', 'hub');
}

/** The snapshot directory holding config.json for ORG/NAME in the HF cache (the `main` ref first), or undefined. */
export function findInHfCache(hfId: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const repo = join(hfCacheDir(env), `models--${hfId.replace('/', '--')}`);
  const snapshots = join(repo, 'snapshots');
  if (!existsSync(snapshots)) return undefined;
  // A cache damaged by hand or by an interrupted download is the user's to repair: say where, do not crash.
  const damaged = (what: string) =>
    new InputError(`HF cache entry for ${hfId} is damaged: ${what}; repair or delete ${repo}, or give the model as a directory`);
  try {
    if (!statSync(snapshots).isDirectory()) throw damaged(`${snapshots} is not a directory`);
    const refMain = join(repo, 'refs', 'main');
    if (existsSync(refMain) && statSync(refMain).isFile()) {
      const rev = readFileSync(refMain, 'utf8').trim();
      if (rev && existsSync(join(snapshots, rev, 'config.json'))) return join(snapshots, rev);
    }
    // existsSync follows links, so a config.json whose blob is gone (a dangling link) is skipped.
    const withConfig = readdirSync(snapshots)
      .map((rev) => join(snapshots, rev))
      .filter((d) => existsSync(join(d, 'config.json')))
      .sort((a, b) => statSync(join(b, 'config.json')).mtimeMs - statSync(join(a, 'config.json')).mtimeMs);
    return withConfig[0];
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw damaged(`${(err as NodeJS.ErrnoException).code ?? String(err)} reading ${snapshots}`);
  }
}

async function fromHub(hfId: string, env: NodeJS.ProcessEnv, opts: ResolveOptions): Promise<ModelSpec> {
  const endpoint = (env.HF_ENDPOINT || 'https://huggingface.co').replace(/\/+$/, '');
  const offline = ['1', 'true', 'yes', 'on'].includes(String(env.HF_HUB_OFFLINE ?? '').toLowerCase());
  if (offline) {
    throw new InputError(`model "${hfId}" is not bundled, not a local path and not in the HF cache (${hfCacheDir(env)}), and HF_HUB_OFFLINE is set; bundled models: configure models`);
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_HUB_TIMEOUT_MS;
  const doFetch = opts.fetchImpl ?? fetch;
  const headers: Record<string, string> = { 'user-agent': 'inferplan' };
  if (env.HF_TOKEN) headers.authorization = `Bearer ${env.HF_TOKEN}`;

  const get = async (file: string): Promise<{ status: number; text: string }> => {
    const url = `${endpoint}/${hfId}/resolve/main/${file}`;
    try {
      const res = await doFetch(url, { headers, signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
      return { status: res.status, text: res.ok ? await res.text() : '' };
    } catch (err) {
      const e = err as { name?: string; cause?: { code?: string } };
      if (e.name === 'TimeoutError' || e.name === 'AbortError') {
        throw new InputError(`model "${hfId}": the Hub at ${endpoint} did not answer within ${timeoutMs / 1000} s (offline?); use a bundled model (configure models) or a local directory with config.json`);
      }
      const code = e.cause?.code ? ` (${e.cause.code})` : '';
      throw new InputError(`model "${hfId}": cannot reach the Hub at ${endpoint}${code} (offline?); use a bundled model (configure models) or a local directory with config.json`);
    }
  };

  const cfg = await get('config.json');
  if (cfg.status === 401 || cfg.status === 403) {
    throw new InputError(`model "${hfId}" is gated or private on the Hub (HTTP ${cfg.status}); set HF_TOKEN to a token with access, or pass a local directory with config.json`);
  }
  if (cfg.status === 404) {
    throw new InputError(`model "${hfId}" not found: not bundled, not a local path, not in the HF cache, and the Hub answered 404; bundled models: configure models`);
  }
  if (cfg.status < 200 || cfg.status >= 300) {
    throw new InputError(`model "${hfId}": the Hub at ${endpoint} answered HTTP ${cfg.status} for config.json`);
  }
  const config = parseJsonText(cfg.text, `config.json of ${hfId} from the Hub`);
  // hf_quant_config.json is optional: only ModelOpt checkpoints have one.
  const q = await get('hf_quant_config.json');
  const quant = q.status >= 200 && q.status < 300 ? parseJsonText(q.text, `hf_quant_config.json of ${hfId} from the Hub`) : undefined;
  return parseHfConfig(config, quant, hfId, 'hub');
}
