// `configure default`: search every layout within the budget, keep what meets the SLA, rank and report.
import type { Command } from 'commander';
import { log, positiveInt, printJson, runAction, useColor } from '../common.js';
import {
  addGlobalOptions,
  addModelSystemOptions,
  addSaveOptions,
  addSlaOptions,
  addWorkloadOptions,
  imagesOf,
  DEFAULTS,
  readCommonInputs,
  slaOf,
  type CommonInputs,
} from '../options.js';
import { loadEngineContext } from '../context.js';
import { runSearch } from '../../search/index.js';
import { explain, hasFeasible, noFeasibleMessage } from '../../search/explain.js';
import { searchToJson } from '../../search/json.js';
import type { SearchResult } from '../../search/types.js';
import type { EngineContext } from '../../engine/types.js';
import { NoFeasibleError } from '../../util/errors.js';

/** The effective parameters, printed before the search (stderr in --json mode). */
export function effectiveLine(inputs: CommonInputs, ctx: EngineContext, totalGpus: number, topN: number): string {
  const rl = inputs.requestLatency !== undefined ? ` --request-latency ${inputs.requestLatency}` : '';
  return (
    `configure default --hf-id ${ctx.model.id} --system ${ctx.system.name} --backend ${ctx.backend} --backend-version ${ctx.version} ` +
    `--total-gpus ${totalGpus} --isl ${inputs.isl} --osl ${inputs.osl} --prefix ${inputs.prefix} ` +
    `--ttft ${inputs.ttft} --tpot ${inputs.tpot}${rl} --top-n ${topN} ` +
    `(weights ${ctx.gemmDtype}${ctx.model.moe ? `/${ctx.moeDtype}` : ''}, kv ${ctx.kvDtype})`
  );
}

/** Search both modes and label the result with its calibration source. */
export function searchDefault(ctx: EngineContext, inputs: CommonInputs, totalGpus: number, topN: number): SearchResult {
  const result = runSearch(ctx, {
    totalGpus,
    topN,
    modes: ['agg', 'disagg'],
    sla: slaOf(inputs),
  });
  return result;
}

export function registerDefault(program: Command): void {
  const cmd = program
    .command('default')
    .description('search every aggregated and disaggregated layout within a GPU budget, keep those meeting the SLA, rank by tokens/s/gpu');
  addModelSystemOptions(cmd);
  cmd.requiredOption('--total-gpus <n>', 'GPU budget', positiveInt('--total-gpus'));
  addWorkloadOptions(cmd);
  addSlaOptions(cmd);
  cmd.option('--top-n <n>', `configurations shown per mode (default ${DEFAULTS.topN})`, positiveInt('--top-n'));
  addSaveOptions(cmd);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
Defaults: --isl ${DEFAULTS.isl} --osl ${DEFAULTS.osl} --ttft ${DEFAULTS.ttft} --tpot ${DEFAULTS.tpot} --backend vllm (the system's default version).
Exit codes: 0 found configurations; 2 bad input; 3 nothing meets the SLA (with the reason); 4 unsupported.

Examples:
  configure default --hf-id Qwen/Qwen3-32B --system h200_sxm --total-gpus 8
  configure default --hf-id meta-llama/Llama-3.1-70B --system h100_sxm --total-gpus 16 --backend trtllm \\
      --isl 4000 --osl 500 --ttft 600 --tpot 16.67 --save-dir results
  configure default --hf-id openai/gpt-oss-120b --system b200_sxm --total-gpus 8 --backend sglang --json > plan.json`,
  );
  cmd.action(async (o: Record<string, unknown>) =>
    runAction(o, async () => {
      const inputs = readCommonInputs(o);
      const totalGpus = o.totalGpus as number;
      const topN = (o.topN as number | undefined) ?? DEFAULTS.topN;
      const json = Boolean(o.json);
      const ctx = await loadEngineContext(inputs);
      const line = effectiveLine(inputs, ctx, totalGpus, topN);
      if (json) log(line);
      else process.stdout.write(line + '\n\n');
      const result = searchDefault(ctx, inputs, totalGpus, topN);
      const color = !json && useColor();
      // The console renderer (tables, colours) loads only when text is printed or saved.
      const needText = !json || typeof o.saveDir === 'string';
      const con = needText ? await import('../../output/console.js') : undefined;
      if (!hasFeasible(result)) {
        const detail = explain(result);
        if (con && !json) process.stdout.write(con.renderNoFeasible(detail, { color }));
        throw new NoFeasibleError(noFeasibleMessage(detail), detail);
      }
      const doc = searchToJson(result);
      if (typeof o.saveDir === 'string') {
        const { writeResultsDir } = await import('../../output/results-dir.js');
        const dir = await writeResultsDir(o.saveDir, result, ctx, {
          force: Boolean(o.force),
          dynamoVersion: o.dynamoVersion as string | undefined,
          images: imagesOf(o),
          reportText: con!.renderReport(result, { color: false }),
          json: doc,
        });
        log(`results written to ${dir}`);
      }
      if (json) printJson(doc);
      else process.stdout.write(con!.renderReport(result, { color }));
    }),
  );
}
