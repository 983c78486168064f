// `configure models`: the bundled model registry with the shapes and formats the planner uses.
import type { Command } from 'commander';
import Table from 'cli-table3';
import { NO_ROW_RULES, PLAIN_STYLE } from '../../output/table.js';
import { addGlobalOptions, type GlobalOptions, printJson, runAction } from '../common.js';
import { modelsMarkdown } from '../../inputs/markdown.js';
import { activeParams, countParams, listBundledModels, resolveModel } from '../../inputs/models.js';
import { layerMixSummary } from '../../inputs/layers.js';
import type { ModelSpec } from '../../inputs/types.js';

const EXAMPLES = `
Examples:
  $ configure models                  # table of the bundled models
  $ configure models --json           # full ModelSpec of every bundled model, with parameter counts
  $ configure models --markdown       # the same table in Markdown
  $ configure models --hf-id ./my-model            # how a local checkpoint (config.json) resolves
  $ configure models --hf-id Qwen/Qwen3-4B --json  # one model, resolved as --hf-id resolves it

Any other model resolves by --hf-id from a local directory with config.json, the Hugging Face cache
or the Hub (HF_ENDPOINT, HF_TOKEN).
`;

const billions = (n: number): number => Math.round(n / 1e7) / 100;

function experts(m: ModelSpec): string {
  if (!m.moe) return '-';
  const shared = m.moe.sharedExperts > 0 ? `+${m.moe.sharedExperts}` : '';
  return `${m.moe.numExperts}${shared} top${m.moe.topK}`;
}

function weightFormat(m: ModelSpec): string {
  return m.quant.moeDtype !== m.quant.gemmDtype ? `${m.quant.gemmDtype}/${m.quant.moeDtype} (moe)` : m.quant.gemmDtype;
}

export function modelsTable(models: ModelSpec[]): string {
  const table = new Table({
    head: ['id', 'family', 'params B', 'layers', 'layer mix', 'hidden', 'heads/kv', 'experts', 'weights', 'kv cache'],
    ...PLAIN_STYLE,
    chars: NO_ROW_RULES,
  });
  for (const m of models) {
    const heads = m.mla ? `${m.numHeads} MLA` : `${m.numHeads}/${m.numKvHeads}`;
    table.push([m.id, m.family, billions(countParams(m)), m.numLayers, layerMixSummary(m), m.hiddenSize, heads, experts(m), weightFormat(m), m.kvDtype]);
  }
  return table.toString();
}

export function registerModels(program: Command): void {
  const cmd = program
    .command('models')
    .description('list the bundled models (id, family, size, shape, weight and KV-cache formats)')
    .addHelpText('after', EXAMPLES);
  cmd.option('--markdown', 'print a Markdown table (as in the README)');
  cmd.option('--hf-id <id>', 'resolve one model (bundled id, local directory or config.json, HF cache, Hub) and show it');
  addGlobalOptions(cmd).action(async (opts: GlobalOptions & { hfId?: string; markdown?: boolean }) =>
    runAction(opts, async () => {
      const models = opts.hfId ? [await resolveModel(opts.hfId)] : listBundledModels();
      if (opts.json) {
        printJson({
          models: models.map((m) => ({ ...m, layerMixSummary: layerMixSummary(m), paramsB: billions(countParams(m)), activeParamsB: billions(activeParams(m)) })),
        });
      } else if (opts.markdown) {
        process.stdout.write(modelsMarkdown(models) + '\n');
      } else {
        process.stdout.write(modelsTable(models) + '\n');
      }
    }),
  );
}
