// Engine contexts for tests: bundled models and systems with the plain roofline perf source, so the tests
// exercise the engine's arithmetic independently of the calibrated tables.
import { findBundled } from '../../src/inputs/registry.js';
import { loadSystem } from '../../src/inputs/systems.js';
import { RooflinePerfSource } from '../../src/perf/roofline.js';
import type { Backend, Dtype, Workload } from '../../src/inputs/types.js';
import type { AggConfig, EngineContext, PoolConfig } from '../../src/engine/types.js';

export function testCtx(
  modelId: string,
  opts: { system?: string; backend?: Backend; version?: string; gemm?: Dtype; moe?: Dtype; kv?: Dtype; workload?: Partial<Workload> } = {},
): EngineContext {
  const model = findBundled(modelId);
  if (!model) throw new Error(`test model ${modelId} is not bundled`);
  const system = loadSystem(opts.system ?? 'h200_sxm');
  const backend = opts.backend ?? 'vllm';
  const version = opts.version ?? '0.12.0';
  const perf = new RooflinePerfSource(system, { system: system.name, backend, version, kind: 'synthesized', calibratedOn: 'roofline (tests)' });
  return {
    model, system, backend, version, perf,
    gemmDtype: opts.gemm ?? model.quant.gemmDtype,
    moeDtype: opts.moe ?? model.quant.moeDtype,
    kvDtype: opts.kv ?? model.kvDtype,
    workload: { isl: 2000, osl: 500, prefix: 0, ...opts.workload },
  };
}

export function agg(tp: number, batchSize: number, extra: Partial<AggConfig> = {}): AggConfig {
  return { tp, pp: 1, dp: 1, moeTp: tp, moeEp: 1, batchSize, maxNumTokens: 8192, ...extra };
}

export function pool(tp: number, batchSize: number, workers: number, extra: Partial<PoolConfig> = {}): PoolConfig {
  return { tp, pp: 1, dp: 1, moeTp: tp, moeEp: 1, batchSize, maxNumTokens: 8192, workers, ...extra };
}
