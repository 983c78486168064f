// Fill <plan dir>/bench/c<N>/ with AIPerf exports made from our own predictions under a known distortion,
// to try `validate` and `calibrate` without a cluster (and to reproduce the README example).
// Run: npx tsx test/validate/make-synthetic-bench.ts PLAN [prefill_factor decode_factor step_overhead_ms noise]
// e.g. npx tsx test/validate/make-synthetic-bench.ts results/.../agg/top2/generator_config.yaml 0.9 1.2 0 0.03
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadEngineContext } from '../../src/cli/context.js';
import { readCommonInputs } from '../../src/cli/options.js';
import { estimateAgg, estimateDisagg } from '../../src/engine/index.js';
import { loadPlan } from '../../src/validate/plan.js';
import { enginePredictor } from '../../src/validate/predict.js';

const [planArg, p = '0.9', d = '1.2', s = '0', n = '0.03'] = process.argv.slice(2);
if (!planArg) {
  console.error('usage: make-synthetic-bench.ts PLAN [prefill_factor decode_factor step_overhead_ms noise]');
  process.exit(2);
}
const plan = loadPlan(planArg);
const ctx = await loadEngineContext(
  readCommonInputs({ hfId: plan.model, system: plan.system, backend: plan.backend, backendVersion: plan.backendVersion, isl: plan.workload.isl, osl: plan.workload.osl, prefix: plan.workload.prefix }),
);
const predictor = enginePredictor(ctx, plan.layout, { estimateAgg, estimateDisagg });
const truth = { prefillFactor: Number(p), decodeFactor: Number(d), stepOverheadMs: Number(s), source: 'synthetic' };
const noise = Number(n);
let seed = 2026;
const jitter = () => 1 + noise * (2 * ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) - 1);
const concurrencies = plan.benchConcurrencies.length ? plan.benchConcurrencies : [plan.predictedConcurrency ?? 16];

for (const c of concurrencies) {
  const pred = predictor({ concurrency: c, isl: plan.workload.isl, osl: plan.workload.osl }, truth);
  if ('refused' in pred) {
    console.error(`c${c}: ${pred.reason}`);
    continue;
  }
  const v = pred.values;
  const ttft = v.ttftMs * jitter();
  const tpot = v.tpotMs * jitter();
  const lat = ttft + tpot * (plan.workload.osl - 1);
  const rps = (c / lat) * 1000;
  const dist = (x: number, unit: string) => ({ unit, avg: x, p50: x * 0.98, p90: x * 1.12, p99: x * 1.35, min: x * 0.8, max: x * 1.5, std: x * 0.06 });
  const doc = {
    schema_version: '1.0',
    aiperf_version: '0.4.0',
    request_throughput: { unit: 'requests/sec', avg: rps },
    request_latency: dist(lat, 'ms'),
    request_count: { unit: 'requests', avg: 10 * c },
    time_to_first_token: dist(ttft, 'ms'),
    inter_token_latency: dist(tpot, 'ms'),
    output_token_throughput: { unit: 'tokens/sec', avg: rps * plan.workload.osl },
    output_token_throughput_per_user: dist(1000 / tpot, 'tokens/sec/user'),
    input_sequence_length: dist(plan.workload.isl, 'tokens'),
    output_sequence_length: dist(plan.workload.osl, 'tokens'),
    input_config: { endpoint: { model_names: [plan.model], type: 'chat', streaming: true }, loadgen: { concurrency: c, request_count: 10 * c } },
  };
  const dir = join(plan.dir, 'bench', `c${c}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'profile_export_aiperf.json'), JSON.stringify(doc, null, 2) + '\n');
  console.log(`wrote ${join(dir, 'profile_export_aiperf.json')}`);
}
