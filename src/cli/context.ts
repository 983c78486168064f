// Build the EngineContext of a run from the shared flags: model, system, engine version, perf source,
// effective dtypes and an optional correction profile; and the same inputs for a measured-run CSV row.
import { effectiveDtypes } from '../inputs/dtypes.js';
import { resolveModel } from '../inputs/models.js';
import { loadSystem, recordedEngine, resolveEngine } from '../inputs/systems.js';
import { loadPerfSource } from '../perf/index.js';
import { loadCorrectionProfile, profileMismatches } from '../validate/profile.js';
import type { CorrectionProfile, EngineContext } from '../engine/types.js';
import { InputError } from '../util/errors.js';
import { escapeControl } from '../util/text.js';
import type { Backend, ModelSpec } from '../inputs/types.js';
import { releaseOfBuild, type Row, type RowInputs } from '../engine/rows.js';
import { resolveSpeculation } from '../engine/speculation.js';
import type { CommonInputs } from './options.js';

/**
 * A request of isl + osl tokens must fit the model's context (max_position_embeddings): an engine started
 * with a longer --max-model-len refuses to start or fails every request, so such a plan is bad input.
 */
export function checkContextLength(model: ModelSpec, workload: { isl: number; osl: number }, name = model.id): void {
  const max = model.maxPositionEmbeddings;
  const total = workload.isl + workload.osl;
  if (max > 0 && total > max) {
    throw new InputError(
      `isl ${workload.isl} + osl ${workload.osl} = ${total} tokens exceeds the context length of ${escapeControl(name)} (${max} positions, max_position_embeddings); shorten --isl or --osl`,
    );
  }
}

/**
 * A profile fitted for another model, system or backend: a warning on stderr, or with `strict` an input
 * error (exit 2).
 */
export function checkCorrectionFits(
  profile: CorrectionProfile,
  target: { model: string[]; system: string[]; backend: string },
  strict = false,
): void {
  const mismatches = profileMismatches(profile, target);
  if (mismatches.length === 0) return;
  if (strict) throw new InputError(`${escapeControl(mismatches.join('; '))} (--strict refuses a profile fitted for another deployment)`);
  for (const m of mismatches) process.stderr.write(`configure: warning: ${escapeControl(m)}; its factors may not apply (--strict refuses it)\n`);
}

/**
 * `extra.model`: the already resolved model of `inputs.hfId` (callers that build many contexts resolve it once).
 * `extra.strictCalibration`: refuse a --calibration profile fitted for another model, system or backend.
 */
export async function loadEngineContext(
  inputs: CommonInputs,
  extra: { decodeSystem?: string; model?: ModelSpec; strictCalibration?: boolean } = {},
): Promise<EngineContext> {
  const model = extra.model ?? (await resolveModel(inputs.hfId));
  checkContextLength(model, inputs, inputs.hfId);
  const system = loadSystem(inputs.system);
  const { backend, version } = resolveEngine(system, inputs.backend, inputs.backendVersion);
  const perf = await loadPerfSource({ system, backend, version, perfData: inputs.perfData });
  const dt = effectiveDtypes(model, { weightDtype: inputs.weightDtype, kvDtype: inputs.kvDtype });
  const ctx: EngineContext = {
    model,
    system,
    backend,
    version,
    perf,
    gemmDtype: dt.gemmDtype,
    moeDtype: dt.moeDtype,
    kvDtype: dt.kvDtype,
    workload: { isl: inputs.isl, osl: inputs.osl, prefix: inputs.prefix },
  };
  // --nextn / --speculative: refused here (exit 2) for a model with no MTP layers and no known draft. `auto`
  // leaves the context plain; `default` searches the depths itself.
  if (inputs.speculation && inputs.speculation.nextn !== 'auto') {
    const spec = resolveSpeculation(model, inputs.speculation);
    if (spec) ctx.speculation = spec;
  }
  if (inputs.calibration) {
    ctx.correction = loadCorrectionProfile(inputs.calibration);
    checkCorrectionFits(ctx.correction, { model: [inputs.hfId, model.id], system: [system.name, inputs.system], backend }, extra.strictCalibration ?? inputs.strictCalibration);
  }
  if (extra.decodeSystem) {
    const ds = loadSystem(extra.decodeSystem);
    if (ds.name !== system.name) {
      const de = resolveEngine(ds, backend, inputs.backendVersion);
      ctx.decodeSystem = ds;
      ctx.decodePerf = await loadPerfSource({ system: ds, backend: de.backend, version: de.version, perfData: inputs.perfData });
    }
  }
  return ctx;
}

const inputsCache = new Map<string, Promise<RowInputs | { refused: true; reason: string; family?: string }>>();

/** Rows name their model; resolve it without the network (bundled, local cache) so a batch stays fast. */
async function modelOf(id: string): Promise<ModelSpec | undefined> {
  try {
    return await resolveModel(id, { env: { ...process.env, HF_HUB_OFFLINE: '1' } });
  } catch {
    return undefined;
  }
}

/** Model, system, engine version and perf source of a CSV row (cached), or why the row cannot be estimated. */
export function resolveRowInputs(row: Row, perfData?: string): Promise<RowInputs | { refused: true; reason: string; family?: string }> {
  const key = `${row.model_path}|${row.system}|${row.backend}|${row.backend_version}|${perfData ?? ''}`;
  let hit = inputsCache.get(key);
  if (!hit) {
    hit = (async () => {
      const model = await modelOf(row.model_path);
      if (!model) return { refused: true as const, reason: `unsupported model: ${row.model_path} is not a bundled or resolvable architecture` };
      let system;
      try {
        system = loadSystem(row.system);
      } catch {
        return { refused: true as const, reason: `unknown system: ${row.system}`, family: model.family };
      }
      let engine;
      try {
        // A named pre-release build runs as the release it was cut ahead of; any other recorded version as the
        // supported release nearest to what it names (see recordedEngine).
        const support = system.backends[row.backend as Backend];
        const build = support && row.backend_version ? releaseOfBuild(row.backend as Backend, row.backend_version, support.versions) : undefined;
        engine = build ? resolveEngine(system, row.backend as Backend, build) : recordedEngine(system, row.backend as Backend, row.backend_version);
      } catch (e) {
        return { refused: true as const, reason: (e as Error).message, family: model.family };
      }
      let perf;
      try {
        perf = await loadPerfSource({ system, backend: engine.backend, version: engine.version, perfData });
      } catch (e) {
        return { refused: true as const, reason: `no performance data: ${(e as Error).message.split('\n')[0]}`, family: model.family };
      }
      return { model, system, backend: engine.backend, version: engine.version, perf };
    })();
    inputsCache.set(key, hit);
  }
  return hit;
}
