// Build the EngineContext of a run from the shared flags: model, system, engine version, perf source,
// effective dtypes and an optional correction profile.
import { effectiveDtypes } from '../inputs/dtypes.js';
import { resolveModel } from '../inputs/models.js';
import { loadSystem, resolveEngine } from '../inputs/systems.js';
import { loadPerfSource } from '../perf/index.js';
import { loadCorrectionProfile } from '../validate/profile.js';
import type { EngineContext } from '../engine/types.js';
import type { ModelSpec } from '../inputs/types.js';
import type { CommonInputs } from './options.js';

/** `extra.model`: the already resolved model of `inputs.hfId` (callers that build many contexts resolve it once). */
export async function loadEngineContext(inputs: CommonInputs, extra: { decodeSystem?: string; model?: ModelSpec } = {}): Promise<EngineContext> {
  const model = extra.model ?? (await resolveModel(inputs.hfId));
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
  if (inputs.calibration) ctx.correction = loadCorrectionProfile(inputs.calibration);
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
