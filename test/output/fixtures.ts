// Hand-built search results for the output tests (no search engine involved).
import { loadSystem } from '../../src/inputs/systems.js';
import type { Backend, ModelSpec } from '../../src/inputs/types.js';
import type { AggEstimate, DisaggEstimate, EngineContext, MemoryPicture, MetricBands, ServingMetrics } from '../../src/engine/types.js';
import type { PerfSource } from '../../src/perf/types.js';
import type { ModeResult, RankedCandidate, SearchResult } from '../../src/search/types.js';
import { ttftPartsOf } from '../support/ttft-parts.js';

export const DENSE: ModelSpec = {
  id: 'Qwen/Qwen3-32B',
  family: 'qwen3',
  architecture: 'Qwen3ForCausalLM',
  numLayers: 64,
  hiddenSize: 5120,
  numHeads: 64,
  numKvHeads: 8,
  headDim: 128,
  intermediateSize: 25600,
  vocabSize: 151936,
  tiedEmbeddings: false,
  maxPositionEmbeddings: 40960,
  quant: { scheme: 'none', gemmDtype: 'bfloat16', moeDtype: 'bfloat16' },
  kvDtype: 'bfloat16',
  source: 'bundled',
};

export const MOE: ModelSpec = {
  ...DENSE,
  id: 'Qwen/Qwen3-30B-A3B',
  family: 'qwen3_moe',
  architecture: 'Qwen3MoeForCausalLM',
  numLayers: 48,
  hiddenSize: 2048,
  numHeads: 32,
  numKvHeads: 4,
  intermediateSize: 6144,
  moe: { numExperts: 128, topK: 8, expertIntermediateSize: 768, sharedExperts: 0, sharedIntermediateSize: 0, firstDenseLayers: 0 },
};

function memory(kvTokens: number): MemoryPicture {
  return {
    capacityGiB: 140.4,
    weightsGiB: 30.5,
    activationGiB: 4.2,
    reserveGiB: 6,
    kvCacheGiB: 99.7,
    kvBytesPerTokenPerGpu: 131072,
    kvTokens,
    maxSequences: Math.floor(kvTokens / 4500),
  };
}

function metrics(ttft: number, tpot: number, conc: number, gpus: number, osl: number): ServingMetrics {
  const user = 1000 / tpot;
  const latency = ttft + tpot * (osl - 1);
  const out = user * conc;
  return {
    ttftMs: ttft,
    tpotMs: tpot,
    requestLatencyMs: latency,
    outputTokPerS: out,
    tokPerSPerGpu: out / gpus,
    tokPerSPerUser: user,
    requestsPerS: (conc * 1000) / latency,
    concurrency: conc,
    gpus,
  };
}

function bands(m: ServingMetrics): MetricBands {
  const b = (v: number, lo: number, hi: number) => ({ low: v * lo, high: v * hi });
  return {
    ttftMs: b(m.ttftMs, 0.8, 1.25),
    tpotMs: b(m.tpotMs, 0.9, 1.12),
    requestLatencyMs: b(m.requestLatencyMs, 0.9, 1.12),
    tokPerSPerGpu: b(m.tokPerSPerGpu, 0.88, 1.1),
    tokPerSPerUser: b(m.tokPerSPerUser, 0.89, 1.11),
  };
}

export function aggCandidate(tp: number, bs: number, replicas: number, ttft: number, tpot: number, totalGpus: number, moe = false, dp = 1): RankedCandidate {
  const gpus = tp * dp * replicas;
  const m = metrics(ttft, tpot, bs * replicas, gpus, 500);
  const est: AggEstimate = {
    refused: false,
    mode: 'agg',
    config: { tp, pp: 1, dp, moeTp: moe ? 1 : tp, moeEp: moe ? tp * dp : 1, batchSize: bs, maxNumTokens: 8192 },
    replicas,
    metrics: m,
    ttftParts: ttftPartsOf(ttft),
    bands: bands(m),
    memory: memory(700000),
  };
  return {
    estimate: est,
    parallel: moe ? `tp${tp}pp1dp${dp}etp1ep${tp * dp}` : `tp${tp}pp1`,
    gpusUsed: gpus,
    clusterTokPerSPerGpu: (m.tokPerSPerGpu * gpus) / totalGpus,
  };
}

export function disaggCandidate(p: { tp: number; workers: number }, d: { tp: number; workers: number; bs: number }, replicas: number, ttft: number, tpot: number, totalGpus: number): RankedCandidate {
  const perReplica = p.tp * p.workers + d.tp * d.workers;
  const gpus = perReplica * replicas;
  const m = metrics(ttft, tpot, d.bs * d.workers * replicas, gpus, 500);
  const est: DisaggEstimate = {
    refused: false,
    mode: 'disagg',
    config: {
      prefill: { tp: p.tp, pp: 1, dp: 1, moeTp: p.tp, moeEp: 1, batchSize: 1, maxNumTokens: 4096, workers: p.workers },
      decode: { tp: d.tp, pp: 1, dp: 1, moeTp: d.tp, moeEp: 1, batchSize: d.bs, maxNumTokens: d.bs, workers: d.workers },
    },
    replicas,
    metrics: m,
    ttftParts: ttftPartsOf(ttft),
    bands: bands(m),
    memory: { prefill: memory(600000), decode: memory(800000) },
    kvTransferMs: 12.5,
  };
  return {
    estimate: est,
    parallel: `p:tp${p.tp}pp1 d:tp${d.tp}pp1`,
    gpusUsed: gpus,
    clusterTokPerSPerGpu: (m.tokPerSPerGpu * gpus) / totalGpus,
  };
}

function modeResult(mode: 'agg' | 'disagg', top: RankedCandidate[], frontier: RankedCandidate[]): ModeResult {
  return {
    mode,
    evaluated: 40,
    feasible: top.length,
    removed: { memory: 3, engine: 2, ttft: 10, tpot: 5, request_latency: 0 },
    top,
    frontier,
    nearMisses: [],
  };
}

export interface FixtureOptions {
  backend?: Backend;
  version?: string;
  model?: ModelSpec;
  modelId?: string;
  modes?: Array<'agg' | 'disagg'>;
  totalGpus?: number;
  prefix?: number;
  /** Default h200_sxm. */
  system?: string;
}

const DEFAULT_VERSION: Record<Backend, string> = { vllm: '0.12.0', sglang: '0.5.6.post2', trtllm: '1.2.0rc5' };

export function fixture(o: FixtureOptions = {}): { result: SearchResult; ctx: EngineContext } {
  const backend = o.backend ?? 'vllm';
  const model = { ...(o.model ?? DENSE), id: o.modelId ?? (o.model ?? DENSE).id };
  const total = o.totalGpus ?? 8;
  const modes = o.modes ?? ['agg', 'disagg'];
  const system = loadSystem(o.system ?? 'h200_sxm');
  const workload = { isl: 4000, osl: 500, prefix: o.prefix ?? 0 };
  const moe = model.moe !== undefined;
  const aggTop = [aggCandidate(2, 32, 4, 420, 14.2, total, moe), aggCandidate(4, 64, 2, 380, 15.1, total, moe), aggCandidate(1, 16, 8, 560, 16.1, total, moe)];
  const slow = { ...aggCandidate(8, 128, 1, 500, 22, total, moe), meetsSla: false, broke: ['tpot' as const] };
  const aggFrontier = [{ ...aggTop[0], meetsSla: true }, { ...aggTop[1], meetsSla: true }, slow];
  const sameTp = backend === 'sglang';
  const disTop = [
    disaggCandidate({ tp: sameTp ? 2 : 1, workers: 1 }, { tp: 2, workers: 1, bs: 48 }, sameTp ? 2 : 2, 310, 15.8, total),
    disaggCandidate({ tp: 2, workers: 1 }, { tp: 2, workers: 1, bs: 32 }, 2, 290, 13.9, total),
  ];
  const result: SearchResult = {
    inputs: {
      model: model.id,
      system: system.name,
      backend,
      version: o.version ?? DEFAULT_VERSION[backend],
      totalGpus: total,
      workload,
      sla: { ttftMs: 600, tpotMs: 16.67 },
      calibratedOn: `${backend} ${o.version ?? DEFAULT_VERSION[backend]}`,
      topN: 5,
    },
    agg: modes.includes('agg') ? modeResult('agg', aggTop, aggFrontier) : undefined,
    disagg: modes.includes('disagg') ? modeResult('disagg', disTop, [disTop[1], disTop[0]]) : undefined,
    verdict: { winner: modes.includes('agg') ? 'agg' : 'disagg', text: 'agg wins: 1.08x over disagg', ratio: 1.08 },
    elapsedMs: 123.4,
  };
  const ctx: EngineContext = {
    model,
    system,
    backend,
    version: result.inputs.version,
    perf: {} as PerfSource,
    gemmDtype: model.quant.gemmDtype,
    moeDtype: model.quant.moeDtype,
    kvDtype: 'fp8',
    workload,
  };
  return { result, ctx };
}
