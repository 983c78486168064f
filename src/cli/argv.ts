// aiconfigurator spellings accepted on the command line, mapped to ours before commander parses them.
// v0.4-v0.6 used underscores (`--hf_id`, `--total_gpus`: common.ts `normalizeArgv`); v0.7+ renamed the model
// flag and v0.10 the engine-version flag. docs/default.md lists every mapping and what is refused instead.
import { normalizeArgv as normalizeUnderscores } from './common.js';

/** aiconfigurator flag (after underscores become dashes) -> ours. */
export const FLAG_ALIASES: Readonly<Record<string, string>> = {
  '--model-path': '--hf-id', // v0.7+: local dir, config.json or HF id, as our --hf-id
  '--model': '--hf-id', // v0.7+ alias of --model-path; a v0.4-v0.6 enum name (QWEN3_32B) is not an id: exit 2
  '--perf-db-version': '--backend-version', // v0.10+: the perf-database (engine) version
};

/** Accept aiconfigurator v0.4-v0.11 spellings: an optional leading `cli` word, underscores, renamed flags. */
export function normalizeArgv(args: string[]): string[] {
  return normalizeUnderscores(args).map((a) => {
    if (!a.startsWith('--')) return a;
    const eq = a.indexOf('=');
    const name = eq < 0 ? a : a.slice(0, eq);
    const ours = FLAG_ALIASES[name];
    return ours === undefined ? a : ours + (eq < 0 ? '' : a.slice(eq));
  });
}
