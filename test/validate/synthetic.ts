// Writes a synthetic benchmark beside a plan: AIPerf v0.4-style exports whose numbers are our own predictions
// under a known distortion, so calibration has a known answer.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import type { CorrectionProfile } from '../../src/engine/types.js';
import type { OperatingPoint, Predictor } from '../../src/validate/predict.js';

export const PLAN = {
  kind: 'inferplan-plan',
  inferplan_version: '0.1.0',
  model: 'Qwen/Qwen3-32B',
  system: 'h200_sxm',
  backend: 'vllm',
  backend_version: '0.12.0',
  mode: 'agg',
  dtypes: { gemm: 'bfloat16', moe: 'bfloat16', kv: 'bfloat16' },
  workload: { isl: 4000, osl: 500, prefix: 0 },
  sla: { ttft_ms: 600, tpot_ms: 30 },
  total_gpus: 8,
  agg: { tp: 2, pp: 1, dp: 1, moe_tp: 2, moe_ep: 1, batch_size: 64, max_num_tokens: 8192, replicas: 4 },
  predicted: { concurrency: 128 },
  bench: { concurrencies: [4, 16, 64, 128, 256] },
};

/** Plan file in `dir`, and bench/c<N>/profile_export_aiperf.json for each concurrency. */
export function writeSyntheticBench(
  dir: string,
  predictor: Predictor,
  truth: CorrectionProfile,
  plan: typeof PLAN = PLAN,
  concurrencies = PLAN.bench.concurrencies,
): string {
  mkdirSync(dir, { recursive: true });
  const planPath = join(dir, 'generator_config.yaml');
  writeFileSync(planPath, YAML.stringify(plan));
  for (const c of concurrencies) {
    const pt: OperatingPoint = { concurrency: c, isl: PLAN.workload.isl, osl: PLAN.workload.osl };
    const p = predictor(pt, truth);
    if ('refused' in p) throw new Error(p.reason);
    const v = p.values;
    const dist = (x: number, unit: string) => ({ unit, avg: x, p50: x * 0.99, p90: x * 1.1, p99: x * 1.3, min: x * 0.9, max: x * 1.4, std: x * 0.05 });
    const doc = {
      schema_version: '1.0',
      aiperf_version: '0.4.0',
      request_throughput: { unit: 'requests/sec', avg: v.requestsPerS },
      request_latency: dist(v.requestLatencyMs, 'ms'),
      request_count: { unit: 'requests', avg: 10 * c },
      time_to_first_token: dist(v.ttftMs, 'ms'),
      inter_token_latency: dist(v.tpotMs, 'ms'),
      output_token_throughput: { unit: 'tokens/sec', avg: v.outputTokPerS },
      output_token_throughput_per_user: dist(v.tokPerSPerUser, 'tokens/sec/user'),
      output_sequence_length: dist(pt.osl, 'tokens'),
      input_sequence_length: dist(pt.isl, 'tokens'),
      input_config: {
        endpoint: { model_names: [PLAN.model], type: 'chat', streaming: true },
        loadgen: { concurrency: c, request_count: 10 * c },
      },
    };
    const runDir = join(dir, 'bench', `c${c}`);
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(runDir, 'profile_export_aiperf.json'), JSON.stringify(doc, null, 2));
  }
  return planPath;
}
