// Round trip: search with the real inference model, write each candidate's Kubernetes manifest (and TRT-LLM
// engine YAML), read the engine flags back into a layout with a parser of its own (engine-rules.ts
// deployedWorkers, which follows each engine's documented semantics, not the generator's mapping), and compare
// with the prediction the manifest came from. Any difference means a cluster would run something other than
// what was priced.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadEngineContext } from '../../src/cli/context.js';
import type { AggEstimate, DisaggEstimate, EngineContext, PoolConfig, Speculation } from '../../src/engine/types.js';
import { estimateAgg, isRefusal } from '../../src/engine/index.js';
import type { Backend } from '../../src/inputs/types.js';
import { buildDeployManifest, buildEngineConfigs } from '../../src/output/k8s.js';
import { buildRunScripts } from '../../src/output/scripts.js';
import { realEngine } from '../../src/search/engine-port.js';
import { searchDepths } from '../../src/search/nextn.js';
import { depthContexts } from '../../src/engine/speculation.js';
import { runSearch } from '../../src/search/index.js';
import { checkSupport } from '../../src/search/support.js';
import type { Mode, RankedCandidate, SearchResult } from '../../src/search/types.js';
import { dataPath } from '../../src/util/paths.js';
import { deployedWorkers, scriptWorkers, type DeployedWorker } from './engine-rules.js';

const BACKENDS: Backend[] = ['vllm', 'sglang', 'trtllm'];

interface Scenario {
  model: string;
  system: string;
  gpus: number;
  isl?: number;
  osl?: number;
  /** Dynamo release or line of the manifests (default: the newest shipping the engine). */
  dynamo?: string;
}

// Dense GQA, MoE GQA, MLA (DeepSeek, bf16 and NVFP4 experts), gpt-oss (MXFP4, sliding windows), FP8 MoE, and
// layouts that span nodes (16 GPUs on 8-GPU boards, 8 on GB200 trays of 4).
const SCENARIOS: Scenario[] = [
  { model: 'Qwen/Qwen3-32B', system: 'h200_sxm', gpus: 4 },
  { model: 'meta-llama/Llama-3.1-8B', system: 'h100_sxm', gpus: 2, dynamo: '0.9' },
  { model: 'meta-llama/Llama-3.1-70B', system: 'a100_sxm', gpus: 8, isl: 1000 },
  { model: 'Qwen/Qwen3-30B-A3B', system: 'h200_sxm', gpus: 8 },
  { model: 'Qwen/Qwen3-30B-A3B', system: 'gb200_sxm', gpus: 8, dynamo: '1.4.0' },
  { model: 'mistralai/Mixtral-8x7B-v0.1', system: 'h100_sxm', gpus: 4, dynamo: '0.9' },
  { model: 'Qwen/Qwen3-235B-A22B-FP8', system: 'h200_sxm', gpus: 16 },
  { model: 'deepseek-ai/DeepSeek-R1', system: 'b200_sxm', gpus: 8 },
  { model: 'deepseek-ai/DeepSeek-R1', system: 'h100_sxm', gpus: 16, dynamo: '1.4.0' },
  { model: 'nvidia/DeepSeek-R1-NVFP4', system: 'b200_sxm', gpus: 8 },
  { model: 'openai/gpt-oss-120b', system: 'b200_sxm', gpus: 4 },
  { model: 'openai/gpt-oss-20b', system: 'h200_sxm', gpus: 2, isl: 8000, osl: 1000 },
  { model: 'meta-llama/Llama-3.1-405B', system: 'h100_sxm', gpus: 16, isl: 1000, osl: 200 },
  { model: 'Qwen/Qwen3-8B', system: 'l40s', gpus: 4, isl: 1000, osl: 200 },
];

const TABLES = SCENARIOS.every((s) => BACKENDS.every((b) => existsSync(dataPath('perf', s.system, b))));
if (!TABLES) console.log('roundtrip: some data/perf tables are absent; round trips skipped');

/** What the prediction says one worker of a role runs, in the terms the parser reads back. */
function predicted(backend: Backend, c: PoolConfig | (AggEstimate['config'] & { workers?: number }), spec?: Speculation): Omit<DeployedWorker, 'service' | 'role' | 'replicas'> {
  // vLLM and TRT-LLM admit sequences per attention-DP rank, SGLang per worker.
  const batch = backend === 'sglang' ? c.batchSize : Math.ceil(c.batchSize / c.dp);
  // vLLM and TRT-LLM refuse a step budget below the tokens a decode step of the sequences they admit verifies
  // (one each, 1 + draft with speculative decoding): it is raised to them, which a step never fills.
  const draft = spec?.draft ?? 0;
  const tokens = backend === 'sglang' ? c.maxNumTokens : Math.max(c.maxNumTokens, batch * (1 + draft));
  const speculative = draft > 0 ? (spec!.method === 'eagle3' ? `eagle3-${draft}` : `mtp${draft}`) : 'off';
  return { gpus: c.tp * c.pp * c.dp, tp: c.tp, pp: c.pp, dp: c.dp, moeTp: c.moeTp, moeEp: c.moeEp, batch, tokens, speculative };
}

/** Differences between what a candidate's manifest and run scripts deploy and what was predicted (empty when none). */
function roundTrip(result: SearchResult, ctx: EngineContext, c: RankedCandidate, dynamoVersion?: string): string[] {
  const backend = result.inputs.backend;
  const plan = { inputs: result.inputs, ctx, candidate: c, dynamoVersion };
  const workers = deployedWorkers(buildDeployManifest(plan), backend);
  const errors: string[] = [];
  const roles = c.estimate.mode === 'agg'
    ? { agg: (c.estimate as AggEstimate).config }
    : { prefill: (c.estimate as DisaggEstimate).config.prefill, decode: (c.estimate as DisaggEstimate).config.decode };
  // Bare metal: every engine command of every node script.
  const commands = scriptWorkers(buildRunScripts(plan), buildEngineConfigs(plan), backend);
  const spec = c.estimate.speculation;
  for (const [role, cfg] of Object.entries(roles)) {
    const { gpus: _g, ...want } = predicted(backend, cfg, spec);
    const mine = commands.filter((w) => w.role === role);
    if (mine.length === 0) errors.push(`${c.parallel}: no ${role} command in the run scripts`);
    for (const w of mine) {
      const diff = (Object.keys(want) as Array<keyof typeof want>).filter((k) => w[k] !== want[k]);
      if (diff.length) errors.push(`${c.parallel} ${role} in ${w.script}: ${diff.map((k) => `${k} runs ${w[k]}, predicted ${want[k]}`).join('; ')}`);
    }
  }
  if (commands.some((w) => !(w.role in roles))) errors.push(`${c.parallel}: run scripts start roles ${[...new Set(commands.map((w) => w.role))]}`);
  const strip = ({ service: _s, role: _r, replicas: _n, ...rest }: DeployedWorker) => rest;
  const compare = (role: string, want: ReturnType<typeof predicted>) => {
    const got = workers.filter((w) => w.role === role);
    if (got.length !== 1) return errors.push(`${c.parallel}: ${got.length} ${role} worker groups`);
    const diff = Object.entries(want).filter(([k, v]) => strip(got[0]!)[k as keyof typeof want] !== v);
    if (diff.length) errors.push(`${c.parallel} ${role}: ${diff.map(([k, v]) => `${k} deployed ${strip(got[0]!)[k as keyof typeof want]}, predicted ${v}`).join('; ')}`);
  };
  if (c.estimate.mode === 'agg') {
    const e = c.estimate as AggEstimate;
    compare('agg', predicted(backend, e.config, spec));
    if (workers.length !== 1) errors.push(`${c.parallel}: ${workers.length} worker groups in an aggregated deployment`);
  } else {
    const e = c.estimate as DisaggEstimate;
    compare('prefill', predicted(backend, e.config.prefill, spec));
    compare('decode', predicted(backend, e.config.decode, spec));
    const p = workers.find((w) => w.role === 'prefill');
    const d = workers.find((w) => w.role === 'decode');
    // The xPyD ratio survives the replication of units.
    if (p && d && p.replicas * e.config.decode.workers !== d.replicas * e.config.prefill.workers) {
      errors.push(`${c.parallel}: ${p.replicas} prefill and ${d.replicas} decode workers, predicted ${e.config.prefill.workers}:${e.config.decode.workers}`);
    }
  }
  const deployedGpus = workers.reduce((s, w) => s + w.replicas * w.gpus, 0);
  if (deployedGpus !== c.gpusUsed) errors.push(`${c.parallel}: deploys ${deployedGpus} GPUs, predicted ${c.gpusUsed}`);
  return errors;
}

/** Top, frontier and one candidate of every layout meeting the SLA. */
function candidatesOf(result: SearchResult, mode: Mode): RankedCandidate[] {
  const m = result[mode];
  if (!m) return [];
  const seen = new Set<string>();
  const out: RankedCandidate[] = [];
  for (const c of [...m.top, ...m.frontier]) out.push(c);
  for (const c of m.feasibleAll ?? []) {
    if (seen.has(c.parallel)) continue;
    seen.add(c.parallel);
    out.push(c);
  }
  return out;
}

async function search(s: Scenario, backend: Backend, extra: { ttft?: number; tpot?: number; topN?: number } = {}) {
  const isl = s.isl ?? 2000;
  const osl = s.osl ?? 256;
  const sla = { ttftMs: extra.ttft ?? 5000, tpotMs: extra.tpot ?? 100 };
  const ctx = await loadEngineContext({ hfId: s.model, system: s.system, backend, isl, osl, prefix: 0, ttft: sla.ttftMs, tpot: sla.tpotMs });
  const result = runSearch(ctx, { totalGpus: s.gpus, sla, topN: extra.topN ?? 3, modes: ['agg', 'disagg'], keepFeasible: true });
  return { ctx, result };
}

const checked: Record<string, number> = {};

describe.skipIf(!TABLES)('manifests deploy the predicted layout', () => {
  for (const s of SCENARIOS) {
    for (const backend of BACKENDS) {
      it(`${s.model} on ${s.gpus} ${s.system} with ${backend}`, async () => {
        const { ctx, result } = await search(s, backend);
        const errors: string[] = [];
        let n = 0;
        for (const mode of ['agg', 'disagg'] as const) {
          const cands = candidatesOf(result, mode);
          if (cands.length) checked[`${backend}/${mode}`] = (checked[`${backend}/${mode}`] ?? 0) + 1;
          for (const c of cands) {
            errors.push(...roundTrip(result, ctx, c, s.dynamo));
            n++;
          }
        }
        expect(n).toBeGreaterThan(0);
        expect(errors).toEqual([]);
      }, 30_000);
    }
  }

  it('covers every engine in both modes, at least 40 scenarios in all', () => {
    for (const b of BACKENDS) for (const m of ['agg', 'disagg']) expect(checked[`${b}/${m}`] ?? 0, `${b} ${m}`).toBeGreaterThanOrEqual(6);
    expect(Object.values(checked).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(40);
  });
});

/** "tp4pp2dp1etp2ep2" -> its numbers. */
function layoutOf(parallel: string): { tp: number; pp: number; dp: number; moeTp: number; moeEp: number } {
  const m = /^tp(\d+)pp(\d+)dp(\d+)etp(\d+)ep(\d+)$/.exec(parallel);
  if (!m) throw new Error(`not a MoE layout name: ${parallel}`);
  const [tp, pp, dp, moeTp, moeEp] = m.slice(1).map(Number) as [number, number, number, number, number];
  return { tp, pp, dp, moeTp, moeEp };
}

const mixedExperts = (l: { moeTp: number; moeEp: number }) => l.moeTp > 1 && l.moeEp > 1;

describe.skipIf(!TABLES)('vLLM splits experts all or nothing', () => {
  // The issue's case: `configure default --hf-id deepseek-ai/DeepSeek-R1 --system b200_sxm --total-gpus 16
  // --backend vllm` used to rank tp4pp2dp1etp2ep2 first, which vLLM deploys as expert parallel 4.
  const cases: Scenario[] = [
    { model: 'deepseek-ai/DeepSeek-R1', system: 'b200_sxm', gpus: 16, isl: 4000, osl: 1000 },
    { model: 'Qwen/Qwen3-235B-A22B-FP8', system: 'h200_sxm', gpus: 16, isl: 4000, osl: 1000 },
  ];
  for (const s of cases) {
    it(`${s.model} on ${s.gpus} ${s.system}: ranks only what it deploys`, async () => {
      const { ctx, result } = await search(s, 'vllm', { ttft: 2000, tpot: 30, topN: 20 });
      const all = [...candidatesOf(result, 'agg'), ...candidatesOf(result, 'disagg')];
      expect(all.length).toBeGreaterThan(0);
      for (const c of all) {
        const layouts = c.estimate.mode === 'agg' ? [(c.estimate as AggEstimate).config] : [(c.estimate as DisaggEstimate).config.prefill, (c.estimate as DisaggEstimate).config.decode];
        for (const l of layouts) expect(mixedExperts(l), c.parallel).toBe(false);
      }
      const top = result.agg!.top[0]!;
      expect(roundTrip(result, ctx, top)).toEqual([]);
    }, 30_000);
  }

  it('estimate refuses a mixed split with the rule, and support answers with a deployable layout', async () => {
    const s = { model: 'deepseek-ai/DeepSeek-R1', system: 'b200_sxm', gpus: 16, isl: 4000, osl: 1000 };
    const ctx = await loadEngineContext({ hfId: s.model, system: s.system, backend: 'vllm', isl: s.isl, osl: s.osl, prefix: 0, ttft: 2000, tpot: 30 });
    const r = estimateAgg(ctx, { tp: 4, pp: 2, dp: 1, moeTp: 2, moeEp: 2, batchSize: 64, maxNumTokens: 8192 });
    expect(isRefusal(r) && r.constraint).toBe('engine');
    expect(isRefusal(r) && r.reason).toMatch(/expert parallel over all tp x dp = 4 GPUs .* moe_tp 2 x moe_ep 2 cannot be deployed/);
    const report = await checkSupport(
      { engine: realEngine, loadContext: async () => ctx, search: runSearch },
      { modelId: s.model, system: ctx.system, backend: 'vllm', version: ctx.version, budget: { totalGpus: 16, sla: { ttftMs: 2000, tpotMs: 30 } } },
    );
    const row = report.rows[0]!;
    expect(row.sla?.met).toBe(true);
    for (const part of row.sla!.parallel!.replace(/^p:/, '').split(' d:')) expect(mixedExperts(layoutOf(part)), part).toBe(false);
    if (row.fit?.parallel) expect(mixedExperts(layoutOf(row.fit.parallel))).toBe(false);
  }, 30_000);
});

describe.skipIf(!TABLES)('manifests deploy the predicted speculative decoding', () => {
  // Each engine's speculative flags read back: MTP at a fixed depth, every depth of --nextn auto ranked
  // together, and an EAGLE-3 draft.
  const cases: Array<{ s: Scenario; nextn: number | 'auto'; method?: 'mtp' | 'eagle3' }> = [
    { s: { model: 'deepseek-ai/DeepSeek-R1', system: 'b200_sxm', gpus: 8 }, nextn: 3 },
    { s: { model: 'deepseek-ai/DeepSeek-R1', system: 'b200_sxm', gpus: 8 }, nextn: 'auto' },
    { s: { model: 'meta-llama/Llama-3.3-70B-Instruct', system: 'h200_sxm', gpus: 4 }, nextn: 2, method: 'eagle3' },
  ];
  for (const { s, nextn, method } of cases) {
    for (const backend of BACKENDS) {
      it(`${s.model} with --nextn ${nextn}${method ? ` --speculative ${method}` : ''} on ${backend}`, async () => {
        const isl = s.isl ?? 2000;
        const osl = s.osl ?? 256;
        const sla = { ttftMs: 5000, tpotMs: 100 };
        const req = { nextn, method };
        const ctx = await loadEngineContext({ hfId: s.model, system: s.system, backend, isl, osl, prefix: 0, ttft: sla.ttftMs, tpot: sla.tpotMs, speculation: req });
        const spec = { totalGpus: s.gpus, sla, topN: 5, modes: ['agg', 'disagg'] as Mode[], keepFeasible: true };
        const result = nextn === 'auto' ? searchDepths(depthContexts(ctx, req), (c) => runSearch(c, spec), 5) : runSearch(ctx, spec);
        const errors: string[] = [];
        const seen = new Set<string>();
        for (const mode of ['agg', 'disagg'] as const) {
          for (const c of candidatesOf(result, mode)) {
            errors.push(...roundTrip(result, ctx, c));
            seen.add(c.estimate.speculation ? `${c.estimate.speculation.method}${c.estimate.speculation.draft}` : 'off');
          }
        }
        expect(errors).toEqual([]);
        if (nextn === 'auto') expect(seen.size, [...seen].join()).toBeGreaterThan(1);
        else expect([...seen]).toEqual([`${method ?? 'mtp'}${nextn}`]);
      }, 60_000);
    }
  }
});
