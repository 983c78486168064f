// Reads the plan file (generator_config.yaml) that a results directory holds, so `validate` and `calibrate`
// can re-predict the very layout that was deployed and benchmarked.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { InputError } from '../util/errors.js';
import { BACKENDS, type Backend, type Dtype } from '../inputs/types.js';
import type { AggConfig, DisaggConfig, PoolConfig } from '../engine/types.js';
import { gpusOf } from '../search/port.js';

export const PLAN_FILE = 'generator_config.yaml';

const posInt = z.number().int().positive();
const layoutSchema = z.object({
  tp: posInt,
  pp: posInt.default(1),
  dp: posInt.default(1),
  moe_tp: posInt.default(1),
  moe_ep: posInt.default(1),
  batch_size: posInt,
  max_num_tokens: posInt,
});
const poolSchema = layoutSchema.extend({ workers: posInt });

const planSchema = z
  .object({
    kind: z.literal('inferplan-plan'),
    model: z.string().min(1),
    system: z.string().min(1),
    decode_system: z.string().min(1).optional(),
    backend: z.enum(BACKENDS as unknown as [Backend, ...Backend[]]),
    backend_version: z.union([z.string(), z.number()]).transform(String).optional(),
    mode: z.enum(['agg', 'disagg']),
    dtypes: z.object({ gemm: z.string(), moe: z.string().optional(), kv: z.string() }).partial().optional(),
    workload: z.object({ isl: posInt, osl: posInt, prefix: z.number().int().min(0).default(0) }),
    sla: z.object({ ttft_ms: z.number().positive(), tpot_ms: z.number().positive() }).partial().optional(),
    total_gpus: posInt.optional(),
    agg: layoutSchema.extend({ replicas: posInt.default(1) }).optional(),
    disagg: z.object({ prefill: poolSchema, decode: poolSchema }).optional(),
    predicted: z.object({ concurrency: z.number().positive().optional() }).passthrough().optional(),
    calibrated_on: z.string().optional(),
    bench: z.object({ concurrencies: z.array(posInt).optional() }).passthrough().optional(),
  })
  .passthrough();

export type PlanLayout =
  | { mode: 'agg'; config: AggConfig; replicas: number }
  | { mode: 'disagg'; config: DisaggConfig };

export interface Plan {
  /** The plan file and its folder (where bench.sh writes `bench/c<concurrency>/`). */
  path: string;
  dir: string;
  model: string;
  system: string;
  /** Disagg on two GPU types: the decode pool's system. */
  decodeSystem?: string;
  backend: Backend;
  backendVersion?: string;
  dtypes: { gemm?: Dtype; moe?: Dtype; kv?: Dtype };
  workload: { isl: number; osl: number; prefix: number };
  sla: { ttftMs?: number; tpotMs?: number };
  layout: PlanLayout;
  /** Concurrency the plan's prediction was made at, and the ones bench.sh sweeps. */
  predictedConcurrency?: number;
  benchConcurrencies: number[];
}

function toLayout(l: z.infer<typeof layoutSchema>): AggConfig {
  return { tp: l.tp, pp: l.pp, dp: l.dp, moeTp: l.moe_tp, moeEp: l.moe_ep, batchSize: l.batch_size, maxNumTokens: l.max_num_tokens };
}

function toPool(p: z.infer<typeof poolSchema>): PoolConfig {
  return { ...toLayout(p), workers: p.workers };
}

/** Load a plan from a generator_config.yaml, or from the results directory that holds one. */
export function loadPlan(path: string): Plan {
  let file = path;
  if (existsSync(path) && statSync(path).isDirectory()) file = join(path, PLAN_FILE);
  let raw: unknown;
  try {
    raw = YAML.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'no such file' : err.message.split('\n')[0];
    throw new InputError(`--plan ${file}: cannot read (${why}); expected a ${PLAN_FILE} from a results directory`);
  }
  const parsed = planSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError(`--plan ${file}: ${issue.path.join('.') || 'document'}: ${issue.message}; expected a ${PLAN_FILE} (kind: inferplan-plan)`);
  }
  const p = parsed.data;
  let layout: PlanLayout;
  if (p.mode === 'agg') {
    if (!p.agg) throw new InputError(`--plan ${file}: mode is agg but the "agg" section is missing`);
    layout = { mode: 'agg', config: toLayout(p.agg), replicas: p.agg.replicas };
  } else {
    if (!p.disagg) throw new InputError(`--plan ${file}: mode is disagg but the "disagg" section is missing`);
    layout = { mode: 'disagg', config: { prefill: toPool(p.disagg.prefill), decode: toPool(p.disagg.decode) } };
  }
  return {
    path: file,
    dir: dirname(file),
    model: p.model,
    system: p.system,
    decodeSystem: p.decode_system,
    backend: p.backend,
    backendVersion: p.backend_version,
    dtypes: { gemm: p.dtypes?.gemm as Dtype | undefined, moe: p.dtypes?.moe as Dtype | undefined, kv: p.dtypes?.kv as Dtype | undefined },
    workload: p.workload,
    sla: { ttftMs: p.sla?.ttft_ms, tpotMs: p.sla?.tpot_ms },
    layout,
    predictedConcurrency: p.predicted?.concurrency,
    benchConcurrencies: p.bench?.concurrencies ?? [],
  };
}

/** Where bench.sh leaves its AIPerf runs for a plan. */
export function planBenchDir(plan: Plan): string {
  return join(plan.dir, 'bench');
}

/** GPUs of the planned deployment. */
export function planGpus(layout: PlanLayout): number {
  if (layout.mode === 'agg') return gpusOf(layout.config) * layout.replicas;
  return gpusOf(layout.config.prefill) * layout.config.prefill.workers + gpusOf(layout.config.decode) * layout.config.decode.workers;
}
