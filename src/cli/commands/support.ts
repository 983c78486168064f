// `configure support`: can we model this model on this system, per backend and version; do the weights fit
// on one node; and, with --total-gpus, does any layout meet the SLA. Exit 0 when supported, 4 when not.
import { Option, type Command } from 'commander';
import { gpuCount, log, printJson, runAction } from '../common.js';
import { alignColumns } from '../../util/format.js';
import { addGlobalOptions, addSlaOptions, addSpeculationOptions, addWorkloadOptions, readCommonInputs, refuseAutoNextn, slaOf } from '../options.js';
import { listSystems, loadSystem } from '../../inputs/systems.js';
import { BACKENDS, type Backend } from '../../inputs/types.js';
import { checkSupport, MIN_SEQUENCES, type SupportReport, type SupportRow } from '../../search/support.js';
import { ExitCode, InputError } from '../../util/errors.js';
import { resolveSpeculation } from '../../engine/speculation.js';

function backendOrAll(v: string): Backend | 'all' {
  const b = v.toLowerCase();
  if (b === 'all') return 'all';
  if (!(BACKENDS as readonly string[]).includes(b)) throw new InputError(`--backend "${v}" is not supported; accepted: ${BACKENDS.join(', ')}, all`);
  return b as Backend;
}

function slaCell(r: SupportRow): string {
  if (!r.sla) return '';
  // The budget and SLA are printed once above the table; keep only what removed the candidates.
  if (!r.sla.met) return `no: ${(r.sla.reason ?? 'nothing meets it').replace(/^no configuration on .* meets .*? \((.*)\)$/, '$1')}`;
  return `yes: ${r.sla.mode} ${r.sla.parallel}, ${(r.sla.tokPerSPerGpu ?? 0).toFixed(0)} tok/s/gpu, ${(r.sla.tokPerSPerUser ?? 0).toFixed(1)} tok/s/user`;
}

function fitCell(r: SupportRow): [string, string] {
  if (!r.fit) return ['', ''];
  if (!r.fit.parallel) return [`none up to 64 GPUs`, 'no'];
  return [`${r.fit.parallel} (${r.fit.gpus} GPU${r.fit.gpus === 1 ? '' : 's'})`, r.fit.fitsOneNode ? 'yes' : 'no'];
}

/** Plain-text report: one row per backend and version. */
export function renderSupport(rep: SupportReport, workload: { isl: number; osl: number }): string {
  const lines: string[] = [];
  lines.push(`support: ${rep.model}${rep.architecture ? ` (${rep.architecture}, family ${rep.family})` : ''} on ${rep.system}`);
  lines.push(`fit rule: smallest layout whose KV cache holds ${MIN_SEQUENCES} sequences of ${workload.isl}+${workload.osl} tokens`);
  if (rep.budget) {
    const s = rep.budget.sla;
    lines.push(
      `budget: ${rep.budget.totalGpus} GPU${rep.budget.totalGpus === 1 ? '' : 's'}, SLA ttft ${s.ttftMs} ms, tpot ${s.tpotMs} ms` + (s.requestLatencyMs ? `, request latency ${s.requestLatencyMs} ms` : ''),
    );
  }
  const head = ['backend', 'version', 'modelled', 'smallest layout', 'one node', ...(rep.budget ? ['meets SLA'] : [])];
  const rows = rep.rows.map((r) => {
    const [layout, node] = fitCell(r);
    const cells = [r.backend, r.version + (r.isDefault ? '*' : ''), r.modelled ? 'yes' : `no: ${r.reason ?? ''}`, layout, node];
    if (rep.budget) cells.push(slaCell(r));
    return cells;
  });
  lines.push(...alignColumns([head, ...rows]));
  lines.push('(* = the default version for the system)');
  // Notes are usually the same for every version: print each distinct one once.
  const notes = [...new Set(rep.rows.flatMap((r) => r.notes ?? []))];
  for (const n of notes) lines.push(`note: ${n}`);
  lines.push(
    `supported: ${rep.supported ? 'yes' : 'no'}` +
      (rep.slaMet === undefined ? '' : `; a layout meets the SLA: ${rep.slaMet ? 'yes' : 'no'}`),
  );
  return lines.join('\n') + '\n';
}

export function registerSupport(program: Command): void {
  const cmd = program
    .command('support')
    .description('whether a model can be planned on a system, per backend and version; with --total-gpus, whether any layout meets the SLA')
    .requiredOption('--hf-id <id>', 'model: bundled id, local directory or config.json, HF cache, or Hub id')
    .requiredOption('--system <name>', 'GPU system: h100_sxm, h200_sxm, b200_sxm, b300_sxm, gb200_sxm, gb300, a100_sxm, l40s, or all')
    .addOption(new Option('--backend <name>', 'vllm, sglang, trtllm or all (default all)').argParser(backendOrAll))
    .option('--backend-version <v>', 'only this engine version (default every version the system lists)')
    .option('--perf-data <dir>', 'performance tables: a directory in our format or an aiconfigurator systems data directory')
    .option('--total-gpus <n>', 'GPU budget: also run the search and say whether any layout meets the SLA', gpuCount('--total-gpus'));
  addWorkloadOptions(cmd);
  addSpeculationOptions(cmd);
  addSlaOptions(cmd);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
Exit status: 0 when at least one backend/version (of at least one system, with --system all) can model
the model, 4 when none can (an unknown architecture also exits 4 and lists the supported ones).

Examples:
  configure support --hf-id Qwen/Qwen3-32B --system h200_sxm
  configure support --hf-id deepseek-ai/DeepSeek-V3 --system all --backend sglang
  configure support --hf-id meta-llama/Llama-3.1-70B --system h100_sxm --backend vllm --total-gpus 8 --isl 4000 --osl 500 --ttft 1000 --tpot 30`,
  );
  cmd.action(async (opts: Record<string, unknown>) =>
    runAction(opts, async () => {
      const [{ loadEngineContext }, { resolveModel }, { realEngine }, { runSearch }] = await Promise.all([
        import('../context.js'),
        import('../../inputs/models.js'),
        import('../../search/engine-port.js'),
        import('../../search/index.js'),
      ]);
      const chosen = opts.backend as Backend | 'all' | undefined;
      const inputs = readCommonInputs({ ...opts, backend: chosen === 'all' ? undefined : chosen });
      refuseAutoNextn(inputs.speculation, 'support');
      const all = inputs.system.toLowerCase() === 'all';
      const systems = all ? listSystems() : [loadSystem(inputs.system)];
      // Resolve the model once: an unknown architecture exits 4 here with the supported list.
      const model = await resolveModel(inputs.hfId);
      // Speculation flags that contradict each other or the checkpoint are bad input (exit 2), as for the
      // planning commands, whatever the system or engine.
      if (inputs.speculation) resolveSpeculation(model, inputs.speculation);
      const sla = slaOf(inputs);
      const totalGpus = opts.totalGpus as number | undefined;
      const reports: SupportReport[] = [];
      for (const system of systems) {
        reports.push(
          await checkSupport(
            {
              engine: realEngine,
              loadContext: (backend, version) => loadEngineContext({ ...inputs, system: system.name, backend, backendVersion: version }, { model }),
              search: (ctx, spec) => runSearch(ctx, spec),
            },
            {
              modelId: inputs.hfId,
              system,
              backend: chosen === 'all' || chosen === undefined ? undefined : chosen,
              version: inputs.backendVersion,
              budget: totalGpus ? { totalGpus, sla } : undefined,
            },
          ),
        );
      }
      const workload = { isl: inputs.isl, osl: inputs.osl, prefix: inputs.prefix };
      if (opts.json) {
        if (all) printJson({ command: 'support', workload, supported: reports.some((r) => r.supported), systems: reports });
        else printJson({ command: 'support', workload, ...reports[0]! });
      } else {
        process.stdout.write(reports.map((r) => renderSupport(r, inputs)).join('\n'));
      }
      if (!reports.some((r) => r.supported)) {
        const why = reports.flatMap((r) => r.rows).find((r) => r.reason)?.reason ?? 'no backend lists a version';
        log(`configure: error: ${inputs.hfId} cannot be planned on ${all ? 'any system' : systems[0]!.name}: ${why}`);
        return ExitCode.unsupported;
      }
      return ExitCode.ok;
    }),
  );
}
