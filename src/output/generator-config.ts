// generator_config.yaml: the plan as simulated, read back by `configure validate --plan`.
import YAML from 'yaml';
import { z } from 'zod';
import type { Band } from '../engine/types.js';
import { InputError } from '../util/errors.js';
import { derivePlan, type PlanInput, type WorkerGroup } from './plan.js';
import { benchConcurrencies } from './scripts.js';
import { budgetScale } from '../search/json.js';
import { round } from '../util/format.js';

export const PLAN_KIND = 'inferplan-plan';
export const INFERPLAN_VERSION = '0.1.0';

function band(b: Band): [number, number] {
  return [round(b.low), round(b.high)];
}

function worker(g: WorkerGroup, withWorkers: boolean): Record<string, number> {
  const w: Record<string, number> = {
    tp: g.layout.tp,
    pp: g.layout.pp,
    dp: g.layout.dp,
    moe_tp: g.layout.moeTp,
    moe_ep: g.layout.moeEp,
    batch_size: g.batchSize,
    max_num_tokens: g.maxNumTokens,
  };
  if (withWorkers) w.workers = g.workers;
  return w;
}

/** The document as a plain object (keys in a fixed order). */
export function generatorConfigObject(p: PlanInput): Record<string, unknown> {
  const plan = derivePlan(p);
  const { inputs, ctx, candidate } = p;
  const m = candidate.estimate.metrics;
  const b = candidate.estimate.bands;
  const doc: Record<string, unknown> = {
    kind: PLAN_KIND,
    inferplan_version: INFERPLAN_VERSION,
    model: inputs.model,
    system: inputs.system,
  };
  if (plan.mode === 'disagg' && inputs.decodeSystem && inputs.decodeSystem !== inputs.system) doc.decode_system = inputs.decodeSystem;
  doc.backend = inputs.backend;
  doc.backend_version = inputs.version;
  doc.mode = plan.mode;
  doc.dtypes = { gemm: ctx.gemmDtype, moe: ctx.moeDtype, kv: ctx.kvDtype };
  doc.workload = { isl: inputs.workload.isl, osl: inputs.workload.osl, prefix: inputs.workload.prefix };
  const sla: Record<string, number> = { ttft_ms: inputs.sla.ttftMs, tpot_ms: inputs.sla.tpotMs };
  if (inputs.sla.requestLatencyMs !== undefined) sla.request_latency_ms = inputs.sla.requestLatencyMs;
  doc.sla = sla;
  doc.total_gpus = inputs.totalGpus;
  if (plan.mode === 'agg') {
    doc.agg = { ...worker(plan.groups[0], false), replicas: plan.replicas };
  } else {
    doc.disagg = { prefill: worker(plan.groups[0], true), decode: worker(plan.groups[1], true) };
  }
  doc.predicted = {
    concurrency: plan.concurrency,
    ttft_ms: round(m.ttftMs),
    tpot_ms: round(m.tpotMs),
    request_latency_ms: round(m.requestLatencyMs),
    tokens_per_s_per_gpu: round(m.tokPerSPerGpu),
    tokens_per_s_per_user: round(m.tokPerSPerUser),
    requests_per_s: round(m.requestsPerS * budgetScale(candidate)),
    bands: {
      ttft_ms: band(b.ttftMs),
      tpot_ms: band(b.tpotMs),
      request_latency_ms: band(b.requestLatencyMs),
      tokens_per_s_per_gpu: band(b.tokPerSPerGpu),
      tokens_per_s_per_user: band(b.tokPerSPerUser),
    },
  };
  doc.calibrated_on = inputs.calibratedOn;
  doc.bench = { concurrencies: benchConcurrencies(plan.concurrency) };
  return doc;
}

export function buildGeneratorConfig(p: PlanInput): string {
  return YAML.stringify(generatorConfigObject(p), { lineWidth: 0 });
}

// Schema of the file, for readers (validate --plan).
const posInt = z.number().int().positive();
const workerSchema = z.strictObject({
  tp: posInt,
  pp: posInt,
  dp: posInt,
  moe_tp: posInt,
  moe_ep: posInt,
  batch_size: posInt,
  max_num_tokens: posInt,
});
const pair = z.tuple([z.number(), z.number()]);

export const generatorConfigSchema = z.strictObject({
  kind: z.literal(PLAN_KIND),
  inferplan_version: z.string(),
  model: z.string().min(1),
  system: z.string().min(1),
  decode_system: z.string().min(1).optional(),
  backend: z.enum(['vllm', 'sglang', 'trtllm']),
  backend_version: z.string().min(1),
  mode: z.enum(['agg', 'disagg']),
  dtypes: z.strictObject({ gemm: z.string(), moe: z.string(), kv: z.string() }),
  workload: z.strictObject({ isl: posInt, osl: posInt, prefix: z.number().int().min(0) }),
  sla: z.strictObject({ ttft_ms: z.number().positive(), tpot_ms: z.number().positive(), request_latency_ms: z.number().positive().optional() }),
  total_gpus: posInt,
  agg: workerSchema.extend({ replicas: posInt }).optional(),
  disagg: z.strictObject({ prefill: workerSchema.extend({ workers: posInt }), decode: workerSchema.extend({ workers: posInt }) }).optional(),
  predicted: z.strictObject({
    concurrency: z.number(),
    ttft_ms: z.number(),
    tpot_ms: z.number(),
    request_latency_ms: z.number(),
    tokens_per_s_per_gpu: z.number(),
    tokens_per_s_per_user: z.number(),
    requests_per_s: z.number(),
    bands: z.strictObject({
      ttft_ms: pair,
      tpot_ms: pair,
      request_latency_ms: pair,
      tokens_per_s_per_gpu: pair,
      tokens_per_s_per_user: pair,
    }),
  }),
  calibrated_on: z.string(),
  bench: z.strictObject({ concurrencies: z.array(posInt) }),
});

export type GeneratorConfig = z.infer<typeof generatorConfigSchema>;

/** Parse a generator_config.yaml; errors name the file and the key. */
export function parseGeneratorConfig(text: string, path: string): GeneratorConfig {
  let raw: unknown;
  try {
    raw = YAML.parse(text);
  } catch (e) {
    throw new InputError(`${path}: not valid YAML (${(e as Error).message.split('\n')[0]})`);
  }
  const r = generatorConfigSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new InputError(`${path}: ${issue.path.join('.') || 'document'}: ${issue.message}`);
  }
  if ((r.data.mode === 'agg') !== (r.data.agg !== undefined) || (r.data.mode === 'disagg') !== (r.data.disagg !== undefined)) {
    throw new InputError(`${path}: mode ${r.data.mode} needs exactly the "${r.data.mode}" block`);
  }
  return r.data;
}
