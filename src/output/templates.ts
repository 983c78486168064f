// The data half of artifact generation lives in templates/ (shipped with the package): the per-engine flag
// mapping (engine-flags.yaml) and the fixed skeletons of the shell scripts (*.sh.tmpl). This module loads
// them once, checks them, and fills them; the builders decide the values.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import type { Backend } from '../inputs/types.js';
import { DTYPE_BYTES } from '../inputs/types.js';
import { ExitCode, InferplanError } from '../util/errors.js';
import { projectRoot } from '../util/paths.js';

/** A path under the project's templates/ folder. */
export function templatePath(...parts: string[]): string {
  return join(projectRoot(), 'templates', ...parts);
}

/** A broken template is a broken installation, not bad user input. */
function templateError(file: string, message: string): InferplanError {
  return new InferplanError(`templates/${file}: ${message}`, ExitCode.internal);
}

/** Boolean facts about one worker that `when:` lists test. */
export const CONDITIONS = [
  'agg', 'prefill', 'decode', 'disagg', 'prefix_caching', 'expert_parallel', 'attention_dp', 'moe',
  'dynamo_0.9', 'dynamo_1.x', 'load_time_quantization', 'cache_transceiver', 'multinode_follower', 'adp_balance',
  'trtllm_gen_moe', 'flashinfer_trtllm_moe', 'speculative', 'mtp', 'eagle3',
] as const;
export type Condition = (typeof CONDITIONS)[number];

/** Values a flag or engine-config key can take. */
export const VALUE_KEYS = [
  'model', 'served_model_name', 'role', 'tp', 'pp', 'dp', 'moe_tp', 'moe_ep', 'tp_x_dp', 'batch_size', 'max_num_tokens', 'max_num_tokens_x_dp', 'token_budget',
  'max_model_len', 'kv_cache_dtype', 'quantization', 'engine_config_path', 'engine_port', 'bootstrap_port',
  'kv_event_port', 'nixl_side_channel_port', 'node_count', 'node_rank', 'adp_balance_timeout_iters',
  'nextn', 'nextn_plus_one', 'draft_model',
] as const;
export type ValueKey = (typeof VALUE_KEYS)[number];

export type Scalar = string | number | boolean;
/**
 * Values and conditions of one worker; a key a template names but the caller did not set is an error. A value
 * may be a function, computed only when a template names it (it may throw, e.g. an unsupported KV dtype).
 */
export type FlagVars = Partial<Record<ValueKey, string | number | (() => string | number)> & Record<Condition, boolean>>;

const isCondition = (s: string): boolean => (CONDITIONS as readonly string[]).includes(s.replace(/^!/, ''));
const isValueKey = (s: string): boolean => (VALUE_KEYS as readonly string[]).includes(s);
const PLACEHOLDER = /\{\{([a-z0-9_.]+)\}\}/g;
const DTYPES = Object.keys(DTYPE_BYTES);

const conditionRef = z.string().refine(isCondition, { message: `unknown condition; known: ${CONDITIONS.join(', ')}` });
const valueRef = z.string().refine((s) => isValueKey(s) || isCondition(s), { message: `unknown value key; known: ${VALUE_KEYS.join(', ')} or a condition` });
const textRef = z.string().refine((s) => [...s.matchAll(PLACEHOLDER)].every((m) => isValueKey(m[1])), { message: 'unknown {{key}} in text' });
const when = z.array(conditionRef).optional();
const dtypeKey = z.string().refine((s) => DTYPES.includes(s), { message: `unknown dtype; known: ${DTYPES.join(', ')}` });
// Keys checked by refine: zod's own record-key error does not say what is accepted.
const dtypeMap = z
  .record(z.string(), z.string())
  .refine((r) => Object.keys(r).every((k) => DTYPES.includes(k)), { message: `unknown dtype key; known: ${DTYPES.join(', ')}` });

const onlyOne = (n: number) => n <= 1;
const flagEntry = z
  .strictObject({ flag: z.string().regex(/^--[a-z0-9-]+$/), value: valueRef.optional(), text: textRef.optional(), shell: z.string().optional(), when })
  .refine((e) => onlyOne([e.value, e.text, e.shell].filter((x) => x !== undefined).length), { message: 'at most one of value, text, shell' });
const envEntry = z.strictObject({ name: z.string().regex(/^[A-Z_][A-Z0-9_]*$/), value: valueRef, when });
const scalar = z.union([z.string(), z.number(), z.boolean()]);
const leafConfig = z
  .strictObject({ key: z.string().min(1), value: valueRef.optional(), literal: scalar.optional(), when })
  .refine((e) => (e.value === undefined) !== (e.literal === undefined), { message: 'exactly one of value, literal' });
const configEntry = z
  .strictObject({ key: z.string().min(1), value: valueRef.optional(), literal: scalar.optional(), fields: z.array(leafConfig).optional(), when })
  .refine((e) => [e.value, e.literal, e.fields].filter((x) => x !== undefined).length === 1, { message: 'exactly one of value, literal, fields' });

const backendFlags = z.strictObject({
  module: z.string().min(1),
  kv_cache_dtype: dtypeMap,
  kv_cache_dtype_aliases: dtypeMap.default({}),
  load_time_quantization: z.strictObject({ from: z.array(dtypeKey), to: dtypeMap }),
  engine_config_file: textRef.optional(),
  args: z.array(flagEntry),
  multinode_args: z.array(flagEntry).default([]),
  worker_env: z.array(envEntry).default([]),
  engine_config: z.array(configEntry).optional(),
});
const engineFlagsSchema = z.strictObject({ vllm: backendFlags, sglang: backendFlags, trtllm: backendFlags });

export type FlagEntry = z.infer<typeof flagEntry>;
export type EnvEntry = z.infer<typeof envEntry>;
export type ConfigEntry = z.infer<typeof configEntry>;
export type BackendFlags = z.infer<typeof backendFlags>;
export type EngineFlags = z.infer<typeof engineFlagsSchema>;

let engineFlagsCache: EngineFlags | undefined;

/** Parse and check an engine-flags document; errors name the file and the key path. */
export function parseEngineFlags(text: string, file = 'engine-flags.yaml'): EngineFlags {
  let raw: unknown;
  try {
    raw = YAML.parse(text);
  } catch (e) {
    throw templateError(file, (e as Error).message.split('\n')[0]);
  }
  const r = engineFlagsSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw templateError(file, `${issue.path.join('.') || 'document'}: ${issue.message}`);
  }
  return r.data;
}

/** templates/engine-flags.yaml, read and checked on first use. */
export function engineFlags(): EngineFlags {
  if (engineFlagsCache) return engineFlagsCache;
  const file = 'engine-flags.yaml';
  let text: string;
  try {
    text = readFileSync(templatePath(file), 'utf8');
  } catch (e) {
    throw templateError(file, (e as Error).message.split('\n')[0]);
  }
  return (engineFlagsCache = parseEngineFlags(text, file));
}

export function backendFlagsOf(backend: Backend): BackendFlags {
  return engineFlags()[backend];
}

function lookup(vars: FlagVars, ref: string): Scalar {
  const neg = ref.startsWith('!');
  const raw = vars[(neg ? ref.slice(1) : ref) as keyof FlagVars];
  const v = typeof raw === 'function' ? raw() : raw;
  if (v === undefined) throw templateError('engine-flags.yaml', `"${ref}" has no value for this worker`);
  if (!neg) return v;
  if (typeof v !== 'boolean') throw templateError('engine-flags.yaml', `"${ref}" negates a non-boolean`);
  return !v;
}

/** True when every condition of `when` holds ("!x": x does not). */
export function holds(w: readonly string[] | undefined, vars: FlagVars): boolean {
  return (w ?? []).every((c) => lookup(vars, c) === true);
}

/** Text with each {{key}} replaced by its value. */
export function fillText(text: string, vars: FlagVars): string {
  return text.replace(PLACEHOLDER, (_, k: string) => String(lookup(vars, k)));
}

/** One flag as it comes out: its value (already a string), a raw shell word, or nothing (a switch). */
export interface FlagOut {
  flag: string;
  value?: string;
  shell?: string;
}

/** The entries whose conditions hold, in file order, with their values filled in. */
export function evalFlags(entries: readonly FlagEntry[], vars: FlagVars): FlagOut[] {
  const out: FlagOut[] = [];
  for (const e of entries) {
    if (!holds(e.when, vars)) continue;
    if (e.value !== undefined) out.push({ flag: e.flag, value: String(lookup(vars, e.value)) });
    else if (e.text !== undefined) out.push({ flag: e.flag, value: fillText(e.text, vars) });
    else if (e.shell !== undefined) out.push({ flag: e.flag, shell: e.shell });
    else out.push({ flag: e.flag });
  }
  return out;
}

/** name=value pairs of the env entries whose conditions hold. */
export function evalEnv(entries: readonly EnvEntry[], vars: FlagVars): Array<{ name: string; value: string }> {
  return entries.filter((e) => holds(e.when, vars)).map((e) => ({ name: e.name, value: String(lookup(vars, e.value)) }));
}

/** An engine-config object (keys in file order; values keep their type). */
export function evalConfig(entries: readonly ConfigEntry[], vars: FlagVars): Record<string, unknown> {
  const cfg: Record<string, unknown> = {};
  for (const e of entries) {
    if (!holds(e.when, vars)) continue;
    if (e.fields) cfg[e.key] = evalConfig(e.fields, vars);
    else cfg[e.key] = e.value !== undefined ? lookup(vars, e.value) : e.literal;
  }
  return cfg;
}

// ---------- text templates (script skeletons) ----------

const textCache = new Map<string, string>();

/** A text template from templates/, read on first use. */
export function textTemplate(name: string): string {
  let t = textCache.get(name);
  if (t === undefined) {
    try {
      t = readFileSync(templatePath(name), 'utf8');
    } catch (e) {
      throw templateError(name, (e as Error).message.split('\n')[0]);
    }
    textCache.set(name, t);
  }
  return t;
}

const SECTION = /^\{\{([#^/])([a-z0-9_]+)\}\}$/;

/**
 * Fill a text template. `{{name}}` takes a string value (inserted as is: callers quote for the shell);
 * whole lines `{{#name}}` ... `{{/name}}` keep their lines when the boolean `name` is true, `{{^name}}` when false.
 * An unknown name, or a value of the wrong kind, is an error.
 */
export function renderTemplate(name: string, vars: Record<string, string | boolean>): string {
  return fillTemplate(textTemplate(name), vars, name);
}

/** renderTemplate on a given text; `name` only labels errors. */
export function fillTemplate(text: string, vars: Record<string, string | boolean>, name: string): string {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const out: string[] = [];
  // Open sections: name and whether their lines are kept.
  const open: Array<{ name: string; keep: boolean }> = [];
  lines.forEach((line, i) => {
    const where = `${name}:${i + 1}`;
    const s = SECTION.exec(line);
    if (!s && /^\{\{[#^/]/.test(line)) throw templateError(where, `a section marker must be a whole line like {{#name}}`);
    if (s) {
      const [, kind, key] = s;
      if (kind === '/') {
        if (open.pop()?.name !== key) throw templateError(where, `{{/${key}}} closes no open section`);
        return;
      }
      const v = Object.hasOwn(vars, key) ? vars[key] : undefined;
      if (typeof v !== 'boolean') throw templateError(where, `section ${key} needs a boolean`);
      open.push({ name: key, keep: kind === '#' ? v : !v });
      return;
    }
    if (!open.every((o) => o.keep)) return;
    out.push(
      line.replace(PLACEHOLDER, (_, k: string) => {
        const v = Object.hasOwn(vars, k) ? vars[k] : undefined;
        if (typeof v !== 'string') throw templateError(where, `{{${k}}} needs a string value`);
        return v;
      }),
    );
  });
  if (open.length > 0) throw templateError(name, `section ${open[open.length - 1].name} is never closed`);
  return out.join('\n') + '\n';
}
