// Regenerate the example outputs in README.md (npm run docs:examples); test/readme.test.ts checks they are current.
//
// README.md holds each example between markers:
//
//   <!-- example: NAME -->
//   (input files, if any, as fenced blocks)
//   ```
//   $ configure ARGS
//   output
//   ```
//   <!-- /example -->
//
// Everything between the markers is written here, from EXAMPLES below: the commands run in this process (a fresh
// commander program per command, as src/cli/main.ts builds it), so the tables load once for all of them. What varies
// between runs (search timings, dates, absolute paths) becomes a fixed placeholder, and long outputs are trimmed at
// named lines with a note saying what was left out. A command that exits with another code than expected stops the
// script before README.md is touched.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const README = join(ROOT, 'README.md');

export interface Example {
  /** Marker name: `<!-- example: NAME -->`. */
  name: string;
  /** Arguments after `configure`; `FILE:x` names an input file of `files`, passed as its path. */
  args: string[];
  /** Input files written to a temporary folder and shown above the command (unless `hideFiles`); `stdin` names one
   * fed on stdin. */
  files?: Record<string, string>;
  hideFiles?: boolean;
  stdin?: string;
  /** Expected exit code (0 unless said). */
  code?: number;
  /** Long outputs: what to keep, and a line saying what was left out where it was. */
  trim?: Trim;
}

export interface Trim {
  /** Start at the first line matching `from`; `fromNote` says what came before. */
  from?: RegExp;
  fromNote?: string;
  /** Stop before the first line matching `to` (after `from`), or after `head` lines; `note` says what followed. */
  to?: RegExp;
  head?: number;
  note?: string;
}

const EXPERIMENTS = `experiments:
  - {name: qwen-h200-vllm, mode: both, model: Qwen/Qwen3-32B, system: h200_sxm, backend: vllm, total_gpus: 8, isl: 4000, osl: 500, ttft: 600, tpot: 16.67}
  - {name: qwen-h100-trtllm, mode: both, model: Qwen/Qwen3-32B, system: h100_sxm, backend: trtllm, total_gpus: 8, isl: 4000, osl: 500, ttft: 600, tpot: 16.67}
`;

const QUERIES = `{"system":"h200_sxm","backend":"vllm","op":"gemm","dtype":"bfloat16","m":4096,"n":8192,"k":8192}
{"system":"h200_sxm","backend":"vllm","op":"generation_attention","batch":64,"kv_len":4096,"heads":32,"kv_heads":4,"head_dim":128,"kv_dtype":"bfloat16"}
`;

/** The README examples, in README order. Keep them few and small: test/readme.test.ts runs them all. */
export const EXAMPLES: Example[] = [
  {
    name: 'default',
    args: ['default', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--total-gpus', '8', '--isl', '4000', '--osl', '500', '--ttft', '600', '--tpot', '16.67'],
    trim: { to: /^│ request latency/, note: 'request latency, where the bands come from, the calibration, an ASCII Pareto frontier and the top-5 aggregated and disaggregated tables follow' },
  },
  {
    name: 'estimate',
    args: ['estimate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--backend', 'vllm', '--tp', '2', '--batch-size', '32', '--isl', '4000', '--osl', '500'],
  },
  {
    name: 'recommend',
    args: ['recommend', '--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h200_sxm', '--target-request-rate', '20', '--isl', '4000', '--osl', '500', '--ttft', '1000', '--tpot', '30'],
    trim: {
      from: /^┌/,
      fromNote: 'the command line with its defaults and the search parameters',
      to: /^│ per GPU/,
      note: 'per-GPU and per-user rates, TTFT, TPOT, and tables of the five fewest-GPU aggregated and disaggregated layouts follow',
    },
  },
  {
    name: 'exp',
    args: ['exp', '--yaml', 'FILE:experiments.yaml'],
    files: { 'experiments.yaml': EXPERIMENTS },
  },
  {
    name: 'generate',
    args: ['generate', '--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h200_sxm', '--isl', '4000', '--osl', '500'],
  },
  {
    name: 'support',
    args: ['support', '--hf-id', 'zai-org/GLM-5', '--system', 'b200_sxm', '--backend', 'sglang'],
    trim: { from: /^sglang +0\.5\.14/, fromNote: 'the fit rule, the table header and the older SGLang releases (the same answer)' },
  },
  {
    name: 'perf-query',
    args: ['perf', 'query'],
    files: { 'queries.jsonl': QUERIES },
    stdin: 'queries.jsonl',
    hideFiles: true, // each output line repeats its query
  },
  {
    name: 'systems',
    args: ['systems'],
    trim: { head: 7, note: 'a row per system follows' },
  },
  {
    name: 'models',
    args: ['models', '--hf-id', 'Qwen/Qwen3.5-397B-A17B'],
  },
];

/** What varies between runs of the same command becomes a fixed placeholder. */
export function normalize(text: string, paths: string[] = []): string {
  let out = text;
  for (const p of paths) out = out.split(p).join('.');
  return out
    .replace(/\x1b\[[0-9;]*m/g, '') // colour, should any slip through
    .replace(/search took \d+(\.\d+)? ms/g, 'search took <ms> ms')
    .replace(/\(\d+(\.\d+)? candidates\/s\)/g, '(<rate> candidates/s)')
    .replace(/\b\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?\b/g, '<date>')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

function trimOutput(ex: Example, text: string): string {
  let lines = text.replace(/\n+$/, '').split('\n');
  const t = ex.trim;
  if (t === undefined) return lines.join('\n');
  const find = (re: RegExp): number => {
    const i = lines.findIndex((l) => re.test(l));
    if (i < 0) throw new Error(`example ${ex.name}: no line matches ${re}; update EXAMPLES in scripts/readme-examples.ts`);
    return i;
  };
  const head: string[] = [];
  if (t.from) {
    lines = lines.slice(find(t.from));
    head.push(`[... trimmed: ${t.fromNote ?? 'the lines above'}]`);
  }
  let cut = false;
  if (t.to) {
    lines = lines.slice(0, find(t.to));
    cut = true;
  } else if (t.head !== undefined && lines.length > t.head) {
    lines = lines.slice(0, t.head);
    cut = true;
  }
  // A cut inside a table ends on its last row, not on a border line.
  while (lines.length > 0 && (lines[lines.length - 1] === '' || (cut && /^[├┌]─/.test(lines[lines.length - 1]!)))) lines.pop();
  if (cut) lines.push(`[... trimmed: ${t.note ?? 'more lines follow'}]`);
  return [...head, ...lines].join('\n');
}

const quote = (a: string): string => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);

/** The command line as the README shows it. */
export function commandLine(ex: Example): string {
  const shown = ex.args.map((a) => quote(a.startsWith('FILE:') ? a.slice(5) : a));
  if (ex.stdin !== undefined) shown.push('<', ex.stdin);
  return `$ configure ${shown.join(' ')}`;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

type Register = (program: Command) => void;

/** Command name -> loader of its register function (static imports, as in src/cli/main.ts). */
const COMMANDS: Record<string, () => Promise<Register>> = {
  default: async () => (await import('../src/cli/commands/default.js')).registerDefault,
  estimate: async () => (await import('../src/cli/commands/estimate.js')).registerEstimate,
  recommend: async () => (await import('../src/cli/commands/recommend.js')).registerRecommend,
  exp: async () => (await import('../src/cli/commands/exp.js')).registerExp,
  generate: async () => (await import('../src/cli/commands/generate.js')).registerGenerate,
  support: async () => (await import('../src/cli/commands/support.js')).registerSupport,
  validate: async () => (await import('../src/cli/commands/validate.js')).registerValidate,
  calibrate: async () => (await import('../src/cli/commands/calibrate.js')).registerCalibrate,
  perf: async () => (await import('../src/cli/commands/perf.js')).registerPerf,
  models: async () => (await import('../src/cli/commands/models.js')).registerModels,
  systems: async () => (await import('../src/cli/commands/systems.js')).registerSystems,
};

/** Run one command in this process, as src/cli/main.ts would: stdout, stderr and exit code captured. */
async function runInProcess(args: string[], stdin: string | undefined): Promise<Run> {
  const { Command, CommanderError } = await import('commander');
  const { normalizeArgv } = await import('../src/cli/common.js');
  const { InferplanError } = await import('../src/util/errors.js');
  const load = COMMANDS[args[0]];
  if (load === undefined) throw new Error(`scripts/readme-examples.ts: no loader for command "${args[0]}"`);
  const register = await load();
  const program = new Command('configure').exitOverride();
  let stdout = '';
  let stderr = '';
  program.configureOutput({ writeOut: (s) => void (stdout += s), writeErr: (s) => void (stderr += s) });
  register(program);
  for (const c of program.commands) c.exitOverride();
  const out = process.stdout.write.bind(process.stdout);
  const err = process.stderr.write.bind(process.stderr);
  const stdinDesc = Object.getOwnPropertyDescriptor(process, 'stdin');
  const savedCode = process.exitCode;
  process.exitCode = undefined;
  process.stdout.write = ((s: string | Uint8Array) => ((stdout += String(s)), true)) as typeof process.stdout.write;
  process.stderr.write = ((s: string | Uint8Array) => ((stderr += String(s)), true)) as typeof process.stderr.write;
  if (stdin !== undefined) Object.defineProperty(process, 'stdin', { value: Readable.from([Buffer.from(stdin)]), configurable: true });
  let code: number;
  try {
    await program.parseAsync(normalizeArgv(args), { from: 'user' });
    code = Number(process.exitCode ?? 0);
  } catch (e) {
    if (e instanceof CommanderError) code = e.code === 'commander.helpDisplayed' ? 0 : 2;
    else if (e instanceof InferplanError) {
      stderr += `configure: error: ${e.message}\n`;
      code = e.exitCode;
    } else throw e;
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    if (stdinDesc) Object.defineProperty(process, 'stdin', stdinDesc);
    process.exitCode = savedCode;
  }
  return { code, stdout, stderr };
}

let envSet = false;
/** Plain, offline, reproducible output: no colour, no Hub look-ups. */
function setEnv(): void {
  if (envSet) return;
  process.env.NO_COLOR = '1';
  process.env.FORCE_COLOR = '0';
  process.env.HF_HUB_OFFLINE = '1';
  envSet = true;
}

/** The text between the markers of one example (without the markers). */
export async function renderExample(ex: Example): Promise<string> {
  setEnv();
  const dir = mkdtempSync(join(tmpdir(), 'inferplan-readme-'));
  try {
    for (const [f, text] of Object.entries(ex.files ?? {})) writeFileSync(join(dir, f), text);
    const args = ex.args.map((a) => (a.startsWith('FILE:') ? join(dir, a.slice(5)) : a));
    const r = await runInProcess(args, ex.stdin !== undefined ? ex.files?.[ex.stdin] : undefined);
    const want = ex.code ?? 0;
    if (r.code !== want) {
      throw new Error(`example ${ex.name}: \`${commandLine(ex).slice(2)}\` exited ${r.code}, expected ${want}\n${r.stderr}`);
    }
    // The console output is stdout; on an expected failure the error line is part of what users see.
    const output = normalize(r.code === 0 ? r.stdout : r.stdout + r.stderr, [dir, ROOT.replace(/\/$/, '')]);
    const parts: string[] = [];
    for (const [f, text] of Object.entries(ex.hideFiles === true ? {} : (ex.files ?? {}))) {
      const lang = f.endsWith('.yaml') ? 'yaml' : f.endsWith('.jsonl') ? 'json' : '';
      parts.push(`\`${f}\`:`, '```' + lang, text.replace(/\n+$/, ''), '```');
    }
    parts.push('```', commandLine(ex), trimOutput(ex, output), '```');
    return parts.join('\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const MARKER = /<!-- example: ([\w-]+) -->\n([\s\S]*?)<!-- \/example -->/g;

/** The example regions of a README text: name -> content between the markers. */
export function regions(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of text.matchAll(MARKER)) {
    if (found.has(m[1])) throw new Error(`README.md: example "${m[1]}" appears twice`);
    found.set(m[1], m[2]);
  }
  return found;
}

/** Every example rendered, by name. Fails on markers without an example and examples without markers. */
export async function renderAll(text: string): Promise<Map<string, string>> {
  const found = regions(text);
  const names = new Set(EXAMPLES.map((e) => e.name));
  for (const n of found.keys()) if (!names.has(n)) throw new Error(`README.md: marker "example: ${n}" has no entry in EXAMPLES (scripts/readme-examples.ts)`);
  for (const n of names) if (!found.has(n)) throw new Error(`README.md: no "<!-- example: ${n} -->" ... "<!-- /example -->" markers`);
  const out = new Map<string, string>();
  for (const ex of EXAMPLES) out.set(ex.name, `${await renderExample(ex)}\n`);
  return out;
}

/** The README text with every example region replaced by its rendering. */
export function applyRegions(text: string, rendered: Map<string, string>): string {
  return text.replace(MARKER, (whole, name: string) => `<!-- example: ${name} -->\n${rendered.get(name) ?? ''}<!-- /example -->`);
}

async function main(): Promise<void> {
  const before = readFileSync(README, 'utf8');
  const after = applyRegions(before, await renderAll(before));
  if (after === before) {
    process.stdout.write(`README.md: ${EXAMPLES.length} examples already current\n`);
    return;
  }
  writeFileSync(README, after);
  const changed = [...regions(after)].filter(([n, t]) => regions(before).get(n) !== t).map(([n]) => n);
  process.stdout.write(`README.md: rewrote ${changed.join(', ')}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await main();
