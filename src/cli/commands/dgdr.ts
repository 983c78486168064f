// `configure dgdr FILE`: answer a DynamoGraphDeploymentRequest offline. Run the search its spec asks for
// (model, backend, GPUs, workload, SLA) over disaggregated layouts, and write the DGD the operator would deploy,
// with the SLA planner and its profile ConfigMap; exit 3 with the reason when no layout meets the SLA.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import YAML from 'yaml';
import { gpuCount, log, printJson, runAction } from '../common.js';
import { addGlobalOptions, DEFAULTS, dynamoVersionParser, DYNAMO_VERSION_HELP } from '../options.js';
import { loadEngineContext } from '../context.js';
import { addGridOptions, gridOf, MAX_GRID_POINTS } from './planner-profile.js';
import { searchRequest, systemOfRequest } from '../../search/dgdr.js';
import { InputError, UnsupportedError } from '../../util/errors.js';
import { namedDgd, parseDgdr, patchedDgd } from '../../output/planner-dgdr.js';
import { parseDynamoVersion } from '../../output/images.js';
import type { PlanInput } from '../../output/plan.js';

export function registerDgdr(program: Command): void {
  const cmd = program
    .command('dgdr')
    .description('answer a DynamoGraphDeploymentRequest offline: search its model, backend, GPUs and SLA, write the DGD with the SLA planner')
    .argument('<file>', 'the DynamoGraphDeploymentRequest (nvidia.com/v1alpha1 or v1beta1) as YAML');
  cmd
    .option('--out <dir>', 'write k8s_deploy.yaml, planner_profile_configmap.yaml and planner/ here (default: print the manifest on stdout)')
    .option('--force', 'write into a directory that already holds files')
    .option('--plots', "with --out: also draw the profiles (planner/*.png; about a second more)")
    .option('--system <name>', 'GPU system, when the request names none or one we name differently')
    .option('--total-gpus <n>', 'GPU budget, when the request gives none (default: one node)', gpuCount('--total-gpus'))
    .option('--dynamo-version <v>', `${DYNAMO_VERSION_HELP}; default: the request's runtimeVersionOverride, else 0.9 for v1alpha1 and 1.x for v1beta1`, dynamoVersionParser);
  addGridOptions(cmd);
  addGlobalOptions(cmd);
  cmd.addHelpText(
    'after',
    `
Exit codes: 0 answered; 2 bad input (an unknown field is named); 3 no layout meets the SLA (with the reason); 4 no data for the GPU or engine.

Examples:
  configure dgdr dgdr.yaml > dgd.yaml && kubectl apply -f dgd.yaml
  configure dgdr dgdr.yaml --out answer/ && kubectl apply -f answer/k8s_deploy.yaml`,
  );
  cmd.action(async (file: string, o: Record<string, unknown>) =>
    runAction(o, async () => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (e) {
        throw new InputError(`${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      }
      const req = parseDgdr(text, file);
      // The request's sweep granularities are bounded as --prefill-points / --decode-points (which replace them) are.
      for (const [key, field] of [['prefillPoints', 'prefillInterpolationGranularity'], ['decodePoints', 'decodeInterpolationGranularity']] as const) {
        const n = req.grid[key];
        if (n !== undefined && n > MAX_GRID_POINTS && gridOf(o)[key] === undefined) throw new InputError(`${file}: sweep.${field} ${n} is too large; accepted: 1 to ${MAX_GRID_POINTS}`);
      }
      for (const n of req.notes) log(`note: ${n}`);
      const system = systemOfRequest(req.system, o.system as string | undefined);
      const totalGpus = (o.totalGpus as number | undefined) ?? req.totalGpus ?? req.gpusPerNode ?? system.gpusPerNode;
      const sla = { ttftMs: req.ttftMs ?? DEFAULTS.ttft, tpotMs: req.itlMs ?? DEFAULTS.tpot, requestLatencyMs: req.requestLatencyMs };
      if (req.ttftMs === undefined || req.itlMs === undefined) log(`note: the request sets no ${req.ttftMs === undefined ? 'ttft' : 'itl'} target; using ttft ${sla.ttftMs} ms, itl ${sla.tpotMs} ms`);
      const dynamoVersion = (o.dynamoVersion as string | undefined) ?? req.dynamoVersion ?? (req.version === 'v1alpha1' ? '0.9' : '1.x');
      parseDynamoVersion(dynamoVersion);
      const { answer, chosen } = await searchRequest(req, system, totalGpus, sla, DEFAULTS, dynamoVersion, loadEngineContext, (n) => log(`note: ${n}`));
      const { plannerSettingsFor, writeHandoff } = await import('../../output/planner-bundle.js');
      const { clusterOf, deployDocuments } = await import('../../output/k8s.js');
      const { withPlanner } = await import('../../output/planner.js');
      const { derivePlan } = await import('../../output/plan.js');
      const ctx = answer.ctx;
      const inputs = { ...answer.result.inputs, totalGpus };
      const grid = { ...Object.fromEntries(Object.entries(req.grid).filter(([, v]) => v !== undefined)), ...gridOf(o) };
      const settings = plannerSettingsFor(inputs, ctx, chosen, { grid, maxGpuBudget: totalGpus, overrides: req.plannerOverrides });
      if (typeof settings === 'string') throw new UnsupportedError(settings);
      const images = req.image !== undefined
        ? { frontend: req.image, prefill: req.image, decode: req.image }
        : req.workersImage !== undefined ? { prefill: req.workersImage, decode: req.workersImage } : undefined;
      const p: PlanInput & { planner: typeof settings } = {
        inputs,
        ctx,
        candidate: chosen,
        dynamoVersion,
        images,
        cluster: req.cluster,
        planner: settings,
      };
      const plan = derivePlan(p);
      const docs = patchedDgd(withPlanner(namedDgd(deployDocuments(plan, clusterOf(p)), req), plan, settings), req);
      const e = chosen.estimate;
      const summary = `${req.name}: ${ctx.backend} ${ctx.version} ${chosen.parallel} on ${chosen.gpusUsed} GPUs, TTFT ${e.metrics.ttftMs.toFixed(0)} ms, ITL ${e.metrics.tpotMs.toFixed(2)} ms, ${chosen.clusterTokPerSPerGpu.toFixed(1)} tokens/s/GPU`;
      let written: { dir: string; files: string[] } | undefined;
      if (typeof o.out === 'string') {
        written = await writeHandoff('--out', o.out, p, Boolean(o.force), docs, o.plots === true);
        log(`${summary}; written to ${written.dir}`);
      } else log(summary);
      if (o.json) {
        printJson({ request: { name: req.name, apiVersion: `nvidia.com/${req.version}` }, backend: ctx.backend, version: ctx.version, parallel: chosen.parallel, gpus: chosen.gpusUsed, metrics: e.metrics, notes: req.notes, ...(written ? { out: written.dir, files: written.files } : { documents: docs }) });
      } else if (!written) {
        process.stdout.write(docs.map((d) => YAML.stringify(d, { version: '1.1', lineWidth: 0 })).join('---\n'));
      }
    }),
  );
}
