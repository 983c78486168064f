// A small analytical stand-in for the inference model, with answers that are easy to reason about.
import type {
  AggConfig,
  AggEstimate,
  Band,
  DisaggConfig,
  DisaggEstimate,
  EngineContext,
  MemoryPicture,
  MetricBands,
  ParallelLayout,
  Refusal,
  ServingMetrics,
} from '../../src/engine/types.js';
import type { ModelSpec, SystemSpec } from '../../src/inputs/types.js';
import type { SearchEngine } from '../../src/search/port.js';
import { ttftPartsOf } from '../support/ttft-parts.js';

export interface FakeKnobs {
  /** Weights of the whole model, GiB. */
  weightsGiB: number;
  /** Usable memory per GPU, GiB. */
  capGiB: number;
  /** KV cache of one isl+osl sequence on one GPU of a tp1 instance, GiB. */
  kvPerSeqGiB: number;
  /** Prefill time of one prompt on one GPU, ms. */
  prefillMs: number;
  /** Decode step: fixed ms, plus weight-read ms per GiB per GPU, plus ms per sequence per GPU. */
  stepMs: number;
  readMsPerGiB: number;
  perSeqMs: number;
  /** Layout the engine refuses, e.g. (l) => l.pp > 1 ? 'no pp' : null. */
  rule?: (l: ParallelLayout) => string | null;
}

export const DEFAULT_KNOBS: FakeKnobs = {
  weightsGiB: 60,
  capGiB: 120,
  kvPerSeqGiB: 1,
  prefillMs: 400,
  stepMs: 4,
  readMsPerGiB: 0.3,
  perSeqMs: 0.05,
};

const band = (v: number): Band => ({ low: v * 0.9, high: v * 1.1 });
function bands(m: ServingMetrics): MetricBands {
  return {
    ttftMs: band(m.ttftMs),
    tpotMs: band(m.tpotMs),
    requestLatencyMs: band(m.requestLatencyMs),
    tokPerSPerGpu: band(m.tokPerSPerGpu),
    tokPerSPerUser: band(m.tokPerSPerUser),
  };
}

const gpus = (l: ParallelLayout): number => l.tp * l.pp * l.dp;

export function fakeEngine(k: FakeKnobs = DEFAULT_KNOBS): SearchEngine & { calls: number } {
  const memory = (ctx: EngineContext, l: ParallelLayout): MemoryPicture | Refusal => {
    const w = k.weightsGiB / gpus(l);
    if (w > k.capGiB) return { refused: true, constraint: 'memory', reason: `weights ${w.toFixed(0)} GiB per GPU > ${k.capGiB} GiB` };
    const kv = k.capGiB - w;
    return {
      capacityGiB: k.capGiB,
      weightsGiB: w,
      activationGiB: 0,
      reserveGiB: 0,
      kvCacheGiB: kv,
      kvBytesPerTokenPerGpu: 1,
      kvTokens: 1,
      maxSequences: Math.floor((kv * gpus(l)) / k.kvPerSeqGiB),
    };
  };
  const tpot = (l: ParallelLayout, batch: number): number =>
    k.stepMs + (k.readMsPerGiB * k.weightsGiB) / gpus(l) + (k.perSeqMs * batch) / gpus(l);
  const prefill = (l: ParallelLayout, batch: number): number => (k.prefillMs * batch) / gpus(l);
  const engine = {
    calls: 0,
    memoryFor: (ctx: EngineContext, l: ParallelLayout) => memory(ctx, l),
    layoutRule: (_ctx: EngineContext, l: ParallelLayout) => k.rule?.(l) ?? null,
    disaggRule: () => null,
    estimateAgg(ctx: EngineContext, c: AggConfig, opts?: { replicas?: number }): AggEstimate | Refusal {
      engine.calls++;
      const mem = memory(ctx, c);
      if ('refused' in mem) return mem;
      if (c.batchSize > mem.maxSequences) return { refused: true, constraint: 'memory', reason: 'kv' };
      const replicas = opts?.replicas ?? 1;
      const t = tpot(c, c.batchSize);
      const ttft = prefill(c, Math.ceil(c.batchSize / 4));
      const osl = ctx.workload.osl;
      const lat = ttft + t * (osl - 1);
      const reqPerS = (c.batchSize * 1000) / lat;
      const m: ServingMetrics = {
        ttftMs: ttft,
        tpotMs: t,
        requestLatencyMs: lat,
        outputTokPerS: reqPerS * osl * replicas,
        tokPerSPerGpu: (reqPerS * osl) / gpus(c),
        tokPerSPerUser: 1000 / t,
        requestsPerS: reqPerS * replicas,
        concurrency: c.batchSize * replicas,
        gpus: gpus(c) * replicas,
      };
      return { refused: false, mode: 'agg', config: c, replicas, metrics: m, ttftParts: ttftPartsOf(m.ttftMs), bands: bands(m), memory: mem };
    },
    estimateDisagg(ctx: EngineContext, c: DisaggConfig): DisaggEstimate | Refusal {
      engine.calls++;
      const mp = memory(ctx, c.prefill);
      const md = memory(ctx, c.decode);
      if ('refused' in mp) return mp;
      if ('refused' in md) return md;
      const osl = ctx.workload.osl;
      const t = tpot(c.decode, c.decode.batchSize);
      const pLat = prefill(c.prefill, c.prefill.batchSize);
      const prefillRate = (c.prefill.workers * c.prefill.batchSize * 1000) / pLat;
      const decodeRate = (c.decode.workers * c.decode.batchSize * 1000) / (t * osl);
      const reqPerS = Math.min(prefillRate, decodeRate);
      const unit = gpus(c.prefill) * c.prefill.workers + gpus(c.decode) * c.decode.workers;
      const ttft = pLat * 1.5 + 2;
      const m: ServingMetrics = {
        ttftMs: ttft,
        tpotMs: t,
        requestLatencyMs: ttft + t * (osl - 1),
        outputTokPerS: reqPerS * osl,
        tokPerSPerGpu: (reqPerS * osl) / unit,
        tokPerSPerUser: 1000 / t,
        requestsPerS: reqPerS,
        concurrency: c.decode.batchSize * c.decode.workers,
        gpus: unit,
      };
      return { refused: false, mode: 'disagg', config: c, replicas: 1, metrics: m, ttftParts: ttftPartsOf(m.ttftMs), bands: bands(m), memory: { prefill: mp, decode: md }, kvTransferMs: 2 };
    },
    defaultMaxNumTokens: () => 8192,
  };
  return engine;
}

export function fakeContext(over: { isl?: number; osl?: number; moe?: boolean; gpusPerNode?: number } = {}): EngineContext {
  const model = {
    id: 'test/Fake-8B',
    family: 'llama',
    architecture: 'LlamaForCausalLM',
    numLayers: 32,
    hiddenSize: 4096,
    numHeads: 32,
    numKvHeads: 8,
    headDim: 128,
    intermediateSize: 14336,
    vocabSize: 128256,
    tiedEmbeddings: false,
    maxPositionEmbeddings: 131072,
    quant: { scheme: 'none', gemmDtype: 'bfloat16', moeDtype: 'bfloat16' },
    kvDtype: 'bfloat16',
    source: 'bundled',
    ...(over.moe
      ? { moe: { numExperts: 8, topK: 2, expertIntermediateSize: 14336, sharedExperts: 0, sharedIntermediateSize: 0, firstDenseLayers: 0 } }
      : {}),
  } as ModelSpec;
  const system = {
    name: 'fake_sxm',
    aliases: [],
    gpu: { name: 'Fake', memGiB: 141, memBwGBs: 4800, tflops: { bfloat16: 989 }, numSms: 132, l2MiB: 50 },
    gpusPerNode: over.gpusPerNode ?? 8,
    intraNodeBwGBs: 450,
    interNodeBwGBs: 50,
    intraNodeLink: 'nvlink',
    backends: { vllm: { versions: ['0.1'], default: '0.1' } },
  } as SystemSpec;
  return {
    model,
    system,
    backend: 'vllm',
    version: '0.1',
    perf: { info: { calibratedOn: 'fake tables' } } as EngineContext['perf'],
    gemmDtype: 'bfloat16',
    moeDtype: 'bfloat16',
    kvDtype: 'bfloat16',
    workload: { isl: over.isl ?? 4000, osl: over.osl ?? 1000, prefix: 0 },
  };
}
