// `configure recommend`: the fewest GPUs (and the layout) that serve a target request rate or concurrency
// under the SLA.
import type { Command } from 'commander';
import { gpuCount, log, positiveInt, positiveNumber, printJson, runAction, useColor } from '../common.js';
import {
  addGlobalOptions,
  addModelSystemOptions,
  addSaveOptions,
  addSlaOptions,
  addWorkloadOptions,
  addSpeculationOptions,
  refuseAutoNextn,
  imagesOf,
  clusterOptionsOf,
  targetOf,
  DEFAULTS,
  readCommonInputs,
  slaOf,
} from '../options.js';
import { loadEngineContext } from '../context.js';
import { recommend, type LoadTarget, type RecommendResult } from '../../search/index.js';
import { explain, hasFeasible, noFeasibleMessage } from '../../search/explain.js';
import { recommendToJson } from '../../search/json.js';
import type { ModeResult, SearchResult } from '../../search/types.js';
import type { EngineContext } from '../../engine/types.js';
import { InputError, NoFeasibleError } from '../../util/errors.js';

function readTarget(o: Record<string, unknown>): LoadTarget {
  const rate = o.targetRequestRate as number | undefined;
  const conc = o.targetConcurrency as number | undefined;
  if ((rate === undefined) === (conc === undefined)) {
    throw new InputError('give exactly one of --target-request-rate R (req/s) or --target-concurrency C (clients)');
  }
  return rate !== undefined ? { kind: 'rate', requestsPerS: rate } : { kind: 'concurrency', clients: conc as number };
}

/** The recommended deployments as a SearchResult over the recommended GPU count (for the results directory). */
export function recommendationAsSearch(result: RecommendResult): SearchResult {
  const s = result.search;
  const mode = (m: 'agg' | 'disagg'): ModeResult | undefined => {
    const base = s[m];
    if (!base) return undefined;
    const rows = m === 'agg' ? result.agg : result.disagg;
    return { ...base, top: rows.map((r) => r.candidate) };
  };
  return {
    ...s,
    inputs: { ...s.inputs, totalGpus: result.best?.gpus ?? s.inputs.totalGpus },
    agg: mode('agg'),
    disagg: mode('disagg'),
    verdict: result.best
      ? { winner: result.best.mode, text: `${result.best.mode} needs the fewest GPUs: ${result.best.gpus} (${result.best.parallel} x ${result.best.replicas})` }
      : s.verdict,
  };
}

export function registerRecommend(program: Command): void {
  const cmd = program
    .command('recommend')
    .description('the fewest GPUs (and the layout) that serve a target request rate or concurrency under the SLA');
  addModelSystemOptions(cmd);
  cmd
    .option('--target-request-rate <r>', 'requests per second to serve', positiveNumber('--target-request-rate'))
    // Not capped here: a target beyond the largest deployment is refused with the GPUs it would need.
    .option('--target-concurrency <c>', 'concurrent clients to serve', positiveInt('--target-concurrency', Infinity))
    .option('--max-gpus <n>', 'largest deployment allowed', gpuCount('--max-gpus'));
  addWorkloadOptions(cmd);
  addSpeculationOptions(cmd);
  addSlaOptions(cmd);
  cmd.option('--top-n <n>', `options shown per mode (default ${DEFAULTS.topN})`, positiveInt('--top-n'));
  addSaveOptions(cmd);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
Exactly one of --target-request-rate or --target-concurrency. Each replica unit (an aggregated instance or a
disaggregated xPyD unit) that meets the SLA is replicated until it carries the target; the answer is the
option with the fewest GPUs (ties: more tokens/s/gpu). Exit 3 when no unit meets the SLA or --max-gpus is
too small for the target (the best partial option is reported).

Examples:
  configure recommend --hf-id meta-llama/Llama-3.1-70B --system h200_sxm --target-request-rate 20 \\
      --isl 4000 --osl 500 --ttft 1000 --tpot 30
  configure recommend --hf-id Qwen/Qwen3-32B --system h100_sxm --target-concurrency 256 --max-gpus 32 --json`,
  );
  cmd.action(async (o: Record<string, unknown>) =>
    runAction(o, async () => {
      const target = readTarget(o);
      const inputs = readCommonInputs(o);
      refuseAutoNextn(inputs.speculation, 'recommend');
      const topN = (o.topN as number | undefined) ?? DEFAULTS.topN;
      const maxGpus = o.maxGpus as number | undefined;
      const json = Boolean(o.json);
      const ctx: EngineContext = await loadEngineContext(inputs);
      const tgt = target.kind === 'rate' ? `--target-request-rate ${target.requestsPerS}` : `--target-concurrency ${target.clients}`;
      const line =
        `configure recommend --hf-id ${ctx.model.id} --system ${ctx.system.name} --backend ${ctx.backend} --backend-version ${ctx.version} ` +
        `${tgt}${maxGpus ? ` --max-gpus ${maxGpus}` : ''} --isl ${inputs.isl} --osl ${inputs.osl} --prefix ${inputs.prefix} ` +
        `--ttft ${inputs.ttft} --tpot ${inputs.tpot}${inputs.requestLatency !== undefined ? ` --request-latency ${inputs.requestLatency}` : ''} --top-n ${topN}`;
      if (json) log(line);
      else process.stdout.write(line + '\n\n');
      const result = recommend(ctx, {
        target,
        maxGpus,
        topN,
        modes: ['agg', 'disagg'],
        sla: slaOf(inputs),
      });
      const color = !json && useColor();
      // The console renderer (tables, colours) loads only when text is printed or saved.
      const { renderNoFeasible, renderRecommend } = !json || typeof o.saveDir === 'string'
        ? await import('../../output/console.js')
        : { renderNoFeasible: () => '', renderRecommend: () => '' };
      if (!hasFeasible(result.search)) {
        const detail = explain(result.search);
        if (!json) process.stdout.write(renderNoFeasible(detail, { color }));
        throw new NoFeasibleError(noFeasibleMessage(detail), detail);
      }
      const doc = recommendToJson(result);
      const best = result.best;
      if (!best || best.share < 1 - 1e-9) {
        if (!json) process.stdout.write(renderRecommend(result, { color }));
        const share = best ? `${Math.round(best.share * 100)}%` : '0%';
        throw new NoFeasibleError(
          `no deployment within --max-gpus ${maxGpus} serves the target; the best (${best?.mode ?? '-'} ${best?.parallel ?? '-'}, ${best?.gpus ?? 0} GPUs) serves ${share} of it`,
          doc,
        );
      }
      if (typeof o.saveDir === 'string') {
        const { writeResultsDir } = await import('../../output/results-dir.js');
        const dir = await writeResultsDir(o.saveDir, recommendationAsSearch(result), ctx, {
          force: Boolean(o.force),
          dynamoVersion: o.dynamoVersion as string | undefined,
          images: imagesOf(o),
          cluster: clusterOptionsOf(o),
          target: targetOf(o),
          planner: o.planner === true,
          reportText: renderRecommend(result, { color: false }),
          json: doc,
        });
        log(`results written to ${dir}`);
      }
      if (json) printJson(doc);
      else process.stdout.write(renderRecommend(result, { color }));
    }),
  );
}
