// `configure generate`: no sweep. The smallest layout that fits the model with headroom for the workload,
// its predicted metrics, and (with --save-dir) the full artifact bundle of that one configuration.
import type { Command } from 'commander';
import { gpuCount, log, printJson, runAction } from '../common.js';
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
  readCommonInputs,
  slaOf,
} from '../options.js';
import type { EngineContext } from '../../engine/types.js';
import { generate, MAX_GENERATE_BATCH, MIN_SEQUENCES, type GenerateResult } from '../../search/generate.js';

const f0 = (x: number) => x.toFixed(0);
const f1 = (x: number) => x.toFixed(1);

/** The console report of a generate run (plain text; the same text goes into the results directory). */
export function renderGenerate(g: GenerateResult, ctx: EngineContext): string {
  const c = g.candidate;
  const est = c.estimate;
  if (est.mode !== 'agg') throw new Error('generate produces an aggregated candidate');
  const m = est.metrics;
  const b = est.bands;
  const mem = g.chosen.memory;
  const sla = g.result.inputs.sla;
  const lines: string[] = [];
  lines.push(
    `generate: ${ctx.model.id} on ${ctx.system.name}, ${ctx.backend} ${ctx.version}, isl ${ctx.workload.isl} osl ${ctx.workload.osl}` +
      (ctx.workload.prefix ? ` prefix ${ctx.workload.prefix}` : '') +
      ' (no sweep)',
  );
  lines.push(`rule: fewest GPUs whose KV cache holds at least ${MIN_SEQUENCES} sequences of ${ctx.workload.isl + ctx.workload.osl} tokens`);
  const width = Math.max(...g.chosen.trials.map((t) => t.parallel.length));
  for (const t of g.chosen.trials) {
    const tag = t.rejected ? 'tried ' : 'chosen';
    const gp = `${t.gpus} GPU${t.gpus === 1 ? '' : 's'}`;
    lines.push(
      `  ${tag} ${t.parallel.padEnd(width)}  ${gp.padEnd(7)} ` +
        (t.rejected ?? `weights ${f1(mem.weightsGiB)} GiB/GPU, KV cache ${f1(mem.kvCacheGiB)} GiB/GPU, ${f0(mem.maxSequences)} sequences`),
    );
  }
  lines.push(
    `deploy: ${c.parallel} x ${g.replicas} replica${g.replicas === 1 ? '' : 's'} on ${g.result.inputs.totalGpus} GPUs ` +
      `(${c.gpusUsed} used), batch size ${g.batch}, max-num-tokens ${est.config.maxNumTokens}`,
  );
  lines.push(`predicted at concurrency ${m.concurrency} (=${g.batch}x${g.replicas}):`);
  lines.push(`  TTFT            ${f0(m.ttftMs)} ms  [${f0(b.ttftMs.low)}-${f0(b.ttftMs.high)}]`);
  lines.push(`  TPOT            ${f1(m.tpotMs)} ms  [${f1(b.tpotMs.low)}-${f1(b.tpotMs.high)}]`);
  lines.push(`  request latency ${f0(m.requestLatencyMs)} ms`);
  // Over the whole budget: GPUs left idle by the replica shape count against throughput per GPU.
  const share = c.gpusUsed / g.result.inputs.totalGpus;
  lines.push(`  tokens/s/gpu    ${f0(c.clusterTokPerSPerGpu)}  [${f0(b.tokPerSPerGpu.low * share)}-${f0(b.tokPerSPerGpu.high * share)}]`);
  lines.push(`  tokens/s/user   ${f1(m.tokPerSPerUser)}`);
  lines.push(`  requests/s      ${m.requestsPerS.toFixed(2)} (all replicas)`);
  const slaText = `ttft ${sla.ttftMs} ms, tpot ${sla.tpotMs} ms` + (sla.requestLatencyMs ? `, request latency ${sla.requestLatencyMs} ms` : '');
  lines.push(c.meetsSla ? `SLA (${slaText}): met` : `SLA (${slaText}): breaks ${(c.broke ?? []).join(', ')}; run \`configure default\` to search for one that meets it`);
  return lines.join('\n') + '\n';
}

/** The --json document of a generate run. */
export function generateToJson(g: GenerateResult, ctx: EngineContext, savedTo?: string): Record<string, unknown> {
  const est = g.candidate.estimate;
  return {
    command: 'generate',
    rule: { minSequences: MIN_SEQUENCES, maxBatch: MAX_GENERATE_BATCH },
    model: ctx.model.id,
    system: ctx.system.name,
    backend: ctx.backend,
    version: ctx.version,
    workload: ctx.workload,
    sla: g.result.inputs.sla,
    totalGpus: g.result.inputs.totalGpus,
    parallel: g.candidate.parallel,
    layout: g.chosen.layout,
    replicas: g.replicas,
    gpusUsed: g.candidate.gpusUsed,
    batchSize: g.batch,
    maxNumTokens: g.chosen.maxNumTokens,
    trials: g.chosen.trials,
    memory: g.chosen.memory,
    metrics: est.metrics,
    bands: est.bands,
    clusterTokPerSPerGpu: g.candidate.clusterTokPerSPerGpu,
    meetsSla: g.candidate.meetsSla,
    broke: g.candidate.broke,
    savedTo: savedTo ?? null,
  };
}

export function registerGenerate(program: Command): void {
  const cmd = program
    .command('generate')
    .description('the smallest layout that fits the model with room for the workload, its predicted metrics and artifacts (no sweep)');
  addModelSystemOptions(cmd);
  addWorkloadOptions(cmd);
  addSpeculationOptions(cmd);
  addSlaOptions(cmd);
  cmd.option('--total-gpus <n>', 'GPU budget: replicas of the chosen layout fill it (default: one replica)', gpuCount('--total-gpus'));
  addSaveOptions(cmd);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
Rule: tp grows 1, 2, 4, 8 (one node; 16 on NVL racks), then pipeline stages, until the KV cache holds at least
${MIN_SEQUENCES} sequences of isl+osl tokens after weights, activations and the engine's reserve. Metrics are
predicted with every replica running the largest power-of-two batch its KV cache holds (at most ${MAX_GENERATE_BATCH}).
The SLA flags only mark whether this naive layout meets them; use \`configure default\` to search.

Examples:
  configure generate --hf-id Qwen/Qwen3-32B --system h100_sxm --backend vllm
  configure generate --hf-id meta-llama/Llama-3.1-70B --system h200_sxm --total-gpus 8 --isl 4000 --osl 500 --save-dir results`,
  );
  cmd.action(async (opts: Record<string, unknown>) =>
    runAction(opts, async () => {
      // Loaded on use: the CLI starts fast and commands do not load each other's stages.
      const [{ loadEngineContext }, { profileOf }, { realEngine }, { searchToJson }] = await Promise.all([
        import('../context.js'),
        import('../../engine/index.js'),
        import('../../search/engine-port.js'),
        import('../../search/json.js'),
      ]);
      const inputs = readCommonInputs(opts);
      refuseAutoNextn(inputs.speculation, 'generate');
      const ctx = await loadEngineContext(inputs);
      const g = generate(realEngine, ctx, {
        totalGpus: opts.totalGpus as number | undefined,
        sla: slaOf(inputs),
        engineMaxBatch: profileOf(ctx).maxBatchSize,
      });
      const text = renderGenerate(g, ctx);
      // The generate facts plus the one-candidate search document in the shape `default --json` prints.
      const doc = (savedTo?: string) => ({ ...generateToJson(g, ctx, savedTo), search: searchToJson(g.result) });
      let savedTo: string | undefined;
      if (opts.saveDir) {
        const { writeResultsDir } = await import('../../output/results-dir.js');
        savedTo = await writeResultsDir(opts.saveDir as string, g.result, ctx, {
          force: opts.force as boolean | undefined,
          dynamoVersion: opts.dynamoVersion as string | undefined,
          images: imagesOf(opts),
          cluster: clusterOptionsOf(opts),
          target: targetOf(opts),
          planner: opts.planner === true,
          reportText: text,
          json: doc(),
        });
      }
      if (opts.json) printJson(doc(savedTo));
      else {
        process.stdout.write(text);
        if (savedTo) log(`saved to ${savedTo}`);
      }
      return 0;
    }),
  );
}
