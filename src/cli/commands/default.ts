// `configure default`: search every layout within the budget, keep what meets the SLA, rank and report.
import { Option, type Command } from 'commander';
import { gpuCount, log, positiveInt, printJson, runAction, useColor } from '../common.js';
import {
  addGlobalOptions,
  addModelSystemOptions,
  addSaveOptions,
  addSlaOptions,
  addSpeculationOptions,
  addWorkloadOptions,
  imagesOf,
  clusterOptionsOf,
  targetOf,
  DEFAULTS,
  readCommonInputs,
  slaOf,
  type CommonInputs,
} from '../options.js';
import { loadEngineContext } from '../context.js';
import { paretoFrontier, runSearch } from '../../search/index.js';
import { loadSystem } from '../../inputs/systems.js';
import { BACKENDS, type Backend } from '../../inputs/types.js';
import { explain, hasFeasible, noFeasibleMessage } from '../../search/explain.js';
import { searchToJson } from '../../search/json.js';
import { searchDepths } from '../../search/nextn.js';
import { autoDescription, depthContexts } from '../../engine/speculation.js';
import type { Mode, SearchResult } from '../../search/types.js';
import type { EngineContext } from '../../engine/types.js';
import { InputError, NoFeasibleError, UnsupportedError } from '../../util/errors.js';

/** --serving-mode: the modes searched (aiconfigurator's `auto` is both). */
export function servingModeParser(v: string): Mode[] {
  const m = v.toLowerCase();
  if (m === 'agg' || m === 'disagg') return [m];
  if (m === 'both' || m === 'auto') return ['agg', 'disagg'];
  if (m === 'afd' || m === 'all') {
    throw new UnsupportedError(`--serving-mode ${v}: attention-FFN disaggregation (AFD) is not modelled here; accepted: agg, disagg, both (auto)`);
  }
  throw new InputError(`--serving-mode "${v}" is not a serving mode; accepted: agg, disagg, both (auto)`);
}

/** --backend for `default`: an engine, or `auto` (every engine the system supports, ranked together). */
function backendOrAutoParser(v: string): Backend | 'auto' {
  const b = v.toLowerCase();
  if (b === 'auto') return 'auto';
  if (!(BACKENDS as readonly string[]).includes(b)) throw new InputError(`--backend "${v}" is not supported; accepted: ${BACKENDS.join(', ')}, auto`);
  return b as Backend;
}

/** What `default` adds to the shared inputs. */
export interface DefaultOptions {
  totalGpus: number;
  topN: number;
  modes: Mode[];
  decodeSystem?: string;
  /** --strict-sla: the Pareto frontier is computed over the candidates meeting the SLA only. */
  strictSla: boolean;
}

/** The effective parameters, printed before the search (stderr in --json mode). */
export function effectiveLine(inputs: CommonInputs, ctx: EngineContext, d: DefaultOptions): string {
  const rl =
    (inputs.requestLatency !== undefined ? ` --request-latency ${inputs.requestLatency}` : '') +
    (inputs.slaConfidence !== undefined ? ` --sla-confidence ${inputs.slaConfidence}` : '');
  const ds = ctx.decodeSystem ? ` --decode-system ${ctx.decodeSystem.name}` : '';
  const sm = d.modes.length === 1 ? ` --serving-mode ${d.modes[0]}` : '';
  const strict = d.strictSla ? ' --strict-sla' : '';
  const s = inputs.speculation;
  const spec = s ? `${s.nextn !== undefined ? ` --nextn ${s.nextn}` : ''}${s.acceptRates ? ` --nextn-accept-rates ${s.acceptRates.join(',')}` : ''}${s.method ? ` --speculative ${s.method}` : ''}` : '';
  return (
    `configure default --hf-id ${ctx.model.id} --system ${ctx.system.name}${ds} --backend ${ctx.backend} --backend-version ${ctx.version} ` +
    `--total-gpus ${d.totalGpus} --isl ${inputs.isl} --osl ${inputs.osl} --prefix ${inputs.prefix} ` +
    `--ttft ${inputs.ttft} --tpot ${inputs.tpot}${rl} --top-n ${d.topN}${sm}${strict}${spec} ` +
    `(weights ${ctx.gemmDtype}${ctx.model.moe ? `/${ctx.moeDtype}` : ''}, kv ${ctx.kvDtype})`
  );
}

/**
 * Search the requested modes; with strictSla the frontier holds only candidates meeting the SLA. With
 * --nextn auto every draft depth the checkpoint can run (0-3) is searched and ranked together.
 */
export function searchDefault(ctx: EngineContext, inputs: CommonInputs, d: DefaultOptions): SearchResult {
  const req = inputs.speculation;
  if (req?.nextn !== 'auto') return searchOneDepth(ctx, inputs, d);
  const contexts = depthContexts(ctx, req);
  const result = searchDepths(contexts, (c) => searchOneDepth(c, inputs, d), d.topN);
  result.inputs = { ...result.inputs, speculation: autoDescription(contexts) };
  return result;
}

function searchOneDepth(ctx: EngineContext, inputs: CommonInputs, d: DefaultOptions): SearchResult {
  const result = runSearch(ctx, { totalGpus: d.totalGpus, topN: d.topN, modes: d.modes, sla: slaOf(inputs), keepFeasible: d.strictSla });
  if (d.strictSla) {
    for (const r of [result.agg, result.disagg]) {
      if (!r) continue;
      r.frontier = paretoFrontier(r.feasibleAll ?? []);
      delete r.feasibleAll;
    }
  }
  return result;
}

/** Best tokens/s/gpu over the whole budget among the candidates meeting the SLA (undefined: none). */
function bestOf(result: SearchResult): number | undefined {
  const tops = [result.agg?.top[0], result.disagg?.top[0]].filter((c) => c !== undefined);
  return tops.length ? Math.max(...tops.map((c) => c.clusterTokPerSPerGpu)) : undefined;
}

export interface BackendRun {
  backend: Backend;
  version?: string;
  best?: number;
  /** Why the backend was not searched (no tables for this model or system, ...). */
  skipped?: string;
}

/**
 * --backend auto: search with every engine the system supports and keep the one whose best configuration
 * delivers the most tokens/s/gpu (ties: the order vllm, sglang, trtllm). Each engine is searched on its
 * own and the rankings are compared by their winners; the report and files are those of that engine.
 */
export async function searchEveryBackend(
  inputs: CommonInputs,
  d: DefaultOptions,
): Promise<{ ctx: EngineContext; result: SearchResult; runs: BackendRun[] }> {
  if (inputs.backendVersion !== undefined) {
    throw new InputError('--backend-version names a release of one engine; drop it with --backend auto, or name the --backend');
  }
  const system = loadSystem(inputs.system);
  const runs: BackendRun[] = [];
  let chosen: { ctx: EngineContext; result: SearchResult; best?: number } | undefined;
  let firstError: unknown;
  for (const backend of BACKENDS.filter((b) => system.backends[b])) {
    let ctx: EngineContext;
    try {
      ctx = await loadEngineContext({ ...inputs, backend }, { decodeSystem: d.decodeSystem });
    } catch (err) {
      if (!(err instanceof UnsupportedError)) throw err;
      firstError ??= err;
      runs.push({ backend, skipped: err.message.split('\n')[0] });
      continue;
    }
    const result = searchDefault(ctx, { ...inputs, backend }, d);
    const best = bestOf(result);
    runs.push({ backend, version: ctx.version, best });
    if (!chosen || (best !== undefined && (chosen.best === undefined || best > chosen.best))) chosen = { ctx, result, best };
  }
  if (!chosen) throw firstError;
  return { ctx: chosen.ctx, result: chosen.result, runs };
}

function autoLine(runs: BackendRun[], chosen: Backend): string {
  const parts = runs.map((r) =>
    r.skipped ? `${r.backend} skipped (${r.skipped})` : `${r.backend} ${r.version}: ${r.best === undefined ? 'nothing meets the SLA' : `${r.best.toFixed(1)} tokens/s/gpu`}`,
  );
  return `--backend auto: ${parts.join('; ')}; reporting ${chosen}`;
}

export function registerDefault(program: Command): void {
  const cmd = program
    .command('default')
    .description('search every aggregated and disaggregated layout within a GPU budget, keep those meeting the SLA, rank by tokens/s/gpu');
  addModelSystemOptions(cmd);
  cmd.options.find((opt) => opt.long === '--backend')!.argParser(backendOrAutoParser).description =
    'engine: vllm, sglang or trtllm; auto searches every engine the system supports and reports the best';
  cmd.requiredOption('--total-gpus <n>', 'GPU budget', gpuCount('--total-gpus'));
  cmd.option('--decode-system <name>', 'disagg: system of the decode pool when it differs (heterogeneous disagg)');
  cmd.addOption(new Option('--serving-mode <mode>', 'modes searched: agg, disagg or both (auto: both; default both)').argParser(servingModeParser));
  cmd.option('--strict-sla', 'compute the Pareto frontier (chart, pareto.csv) over the configurations meeting the SLA only');
  addWorkloadOptions(cmd);
  addSpeculationOptions(cmd);
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
  configure default --hf-id openai/gpt-oss-120b --system b200_sxm --total-gpus 8 --backend sglang --json > plan.json
  configure default --model-path Qwen/Qwen3-32B --system h200_sxm --total-gpus 8 --backend auto --serving-mode agg
      (aiconfigurator's spellings are accepted: docs/default.md lists what maps to what)`,
  );
  cmd.action(async (o: Record<string, unknown>) =>
    runAction(o, async () => {
      const auto = o.backend === 'auto';
      const inputs = readCommonInputs(auto ? { ...o, backend: undefined } : o);
      const d: DefaultOptions = {
        totalGpus: o.totalGpus as number,
        topN: (o.topN as number | undefined) ?? DEFAULTS.topN,
        modes: (o.servingMode as Mode[] | undefined) ?? ['agg', 'disagg'],
        decodeSystem: o.decodeSystem as string | undefined,
        strictSla: o.strictSla === true,
      };
      const json = Boolean(o.json);
      let ctx: EngineContext;
      let result: SearchResult | undefined;
      let runs: BackendRun[] | undefined;
      if (auto) {
        ({ ctx, result, runs } = await searchEveryBackend(inputs, d));
        log(autoLine(runs, ctx.backend));
      } else {
        ctx = await loadEngineContext(inputs, { decodeSystem: d.decodeSystem });
      }
      const line = effectiveLine({ ...inputs, backend: ctx.backend }, ctx, d);
      if (json) log(line);
      else process.stdout.write(line + '\n\n');
      if (!result) result = searchDefault(ctx, inputs, d);
      const color = !json && useColor();
      // The console renderer (tables, colours) loads only when text is printed or saved.
      const needText = !json || typeof o.saveDir === 'string';
      const con = needText ? await import('../../output/console.js') : undefined;
      if (!hasFeasible(result)) {
        const detail = explain(result);
        if (con && !json) process.stdout.write(con.renderNoFeasible(detail, { color }));
        throw new NoFeasibleError(noFeasibleMessage(detail), detail);
      }
      const doc = runs ? { ...searchToJson(result), backendAuto: runs } : searchToJson(result);
      if (typeof o.saveDir === 'string') {
        const { writeResultsDir } = await import('../../output/results-dir.js');
        const dir = await writeResultsDir(o.saveDir, result, ctx, {
          variant: { strictSla: d.strictSla || undefined, backendAuto: auto || undefined },
          force: Boolean(o.force),
          dynamoVersion: o.dynamoVersion as string | undefined,
          images: imagesOf(o),
          cluster: clusterOptionsOf(o),
          target: targetOf(o),
          planner: o.planner === true,
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
