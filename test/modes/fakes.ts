// A small engine with known answers: weights split evenly over tp*pp GPUs, a fixed KV cost per sequence,
// and metrics that are simple functions of the batch, so tests can state the expected layout exactly.
import type { AggConfig, AggEstimate, EngineContext, MemoryPicture, ParallelLayout, Refusal } from '../../src/engine/types.js';
import type { ModelSpec, SystemSpec } from '../../src/inputs/types.js';
import type { GenerateEngine } from '../../src/search/generate.js';
import { ttftPartsOf } from '../support/ttft-parts.js';

export interface FakeModelOpts {
  weightsGiB: number;
  kvGiBPerSeq: number;
  moeExperts?: number;
  architecture?: string;
}

export function fakeSystem(over: Partial<SystemSpec> = {}): SystemSpec {
  return {
    name: 'fake_sxm',
    aliases: [],
    gpu: { name: 'Fake', memGiB: 80, memBwGBs: 3000, tflops: { bfloat16: 900 }, numSms: 100, l2MiB: 50 },
    gpusPerNode: 8,
    intraNodeBwGBs: 450,
    interNodeBwGBs: 50,
    intraNodeLink: 'nvlink',
    backends: { vllm: { versions: ['0.1.0', '0.2.0'], default: '0.2.0' }, sglang: { versions: ['0.5.0'], default: '0.5.0' } },
    ...over,
  };
}

export function fakeModel(o: FakeModelOpts): ModelSpec {
  return {
    id: 'test/fake-model',
    family: 'llama',
    architecture: o.architecture ?? 'LlamaForCausalLM',
    numLayers: 32,
    hiddenSize: 4096,
    numHeads: 32,
    numKvHeads: 8,
    headDim: 128,
    intermediateSize: 14336,
    vocabSize: 128256,
    tiedEmbeddings: false,
    maxPositionEmbeddings: 131072,
    moe: o.moeExperts
      ? { numExperts: o.moeExperts, topK: 8, expertIntermediateSize: 1536, sharedExperts: 0, sharedIntermediateSize: 0, firstDenseLayers: 0 }
      : undefined,
    quant: { scheme: 'none', gemmDtype: 'bfloat16', moeDtype: 'bfloat16' },
    kvDtype: 'bfloat16',
    source: 'bundled',
  };
}

export function fakeContext(o: FakeModelOpts, system: SystemSpec = fakeSystem(), backend: 'vllm' | 'sglang' = 'vllm'): EngineContext {
  return {
    model: fakeModel(o),
    system,
    backend,
    version: system.backends[backend]?.default ?? '0',
    perf: { info: { calibratedOn: 'fake tables' } } as EngineContext['perf'],
    gemmDtype: 'bfloat16',
    moeDtype: 'bfloat16',
    kvDtype: 'bfloat16',
    workload: { isl: 4000, osl: 500, prefix: 0 },
  };
}

/** usable = 90% of HBM; weights / (tp*pp) per GPU; KV per sequence split over tp*pp. */
export function fakeEngine(o: FakeModelOpts & { refuseTp?: number[] }): GenerateEngine & { calls: string[] } {
  const calls: string[] = [];
  const mem = (ctx: EngineContext, l: ParallelLayout): MemoryPicture | Refusal => {
    const g = l.tp * l.pp * l.dp;
    const cap = ctx.system.gpu.memGiB;
    const weights = o.weightsGiB / (l.tp * l.pp);
    const kv = cap * 0.9 - weights;
    if (kv <= 0) return { refused: true, constraint: 'memory', reason: `weights ${weights.toFixed(1)} GiB/GPU exceed ${cap} GiB` };
    const perSeqPerGpu = o.kvGiBPerSeq / (l.tp * l.pp);
    return {
      capacityGiB: cap,
      weightsGiB: weights,
      activationGiB: 0,
      reserveGiB: cap * 0.1,
      kvCacheGiB: kv,
      kvBytesPerTokenPerGpu: 1,
      kvTokens: 1,
      maxSequences: (kv / perSeqPerGpu) * l.dp * (g / g),
    };
  };
  return {
    calls,
    layoutRule: (_ctx, l) => (o.refuseTp?.includes(l.tp) ? `tp${l.tp} refused by the fake engine` : null),
    memoryFor: (ctx, l) => {
      calls.push(`mem tp${l.tp}pp${l.pp}`);
      return mem(ctx, l);
    },
    estimateAgg: (ctx, c: AggConfig, opts) => {
      calls.push(`agg tp${c.tp}pp${c.pp} b${c.batchSize}`);
      const m = mem(ctx, c);
      if ('refused' in m) return m;
      const g = c.tp * c.pp * c.dp;
      const replicas = opts?.replicas ?? 1;
      const tpot = 10 + c.batchSize / 8;
      const perUser = 1000 / tpot;
      const est: AggEstimate = {
        refused: false,
        mode: 'agg',
        config: c,
        replicas,
        ttftParts: ttftPartsOf(200),
        metrics: {
          ttftMs: 200,
          tpotMs: tpot,
          requestLatencyMs: 200 + tpot * 499,
          outputTokPerS: perUser * c.batchSize * replicas,
          tokPerSPerGpu: (perUser * c.batchSize) / g,
          tokPerSPerUser: perUser,
          requestsPerS: 1,
          concurrency: c.batchSize * replicas,
          gpus: g * replicas,
        },
        bands: {
          ttftMs: { low: 180, high: 220 },
          tpotMs: { low: tpot * 0.9, high: tpot * 1.1 },
          requestLatencyMs: { low: 0, high: 0 },
          tokPerSPerGpu: { low: 0, high: 0 },
          tokPerSPerUser: { low: 0, high: 0 },
        },
        memory: m,
      };
      return est;
    },
    defaultMaxNumTokens: () => 8192,
  };
}
