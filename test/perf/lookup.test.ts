import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSystem } from '../../src/inputs/systems.js';
import { loadPerfSource, tableDir } from '../../src/perf/index.js';
import { buildGrids, GEMM_TILE, OpTable } from '../../src/perf/grid.js';
import { GemmFast } from '../../src/perf/gemm-fast.js';
import { collectiveSol, computeFlops, peaksOf, gemmSol, generationAttentionSol, moeSol, NETWORK_LATENCY_MS } from '../../src/perf/sol.js';
import { decodeLatency, encodeLatency, fmtLatency, OP_NAMES, OP_SPECS, PACKED_FILE, packRows, parseCsv, readPacked, toCsv, writePacked, type Row } from '../../src/perf/tables.js';
import { rng } from '../../src/util/rng.js';
import { UnsupportedError } from '../../src/util/errors.js';

const h200 = loadSystem('h200_sxm');

describe('perf source (bundled tables)', () => {
  it('loads the default tables and says what they are calibrated on', async () => {
    const src = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0' });
    expect(src.info.kind).toBe('synthesized');
    expect(src.info.calibratedOn).toMatch(/^calibrated on /);
    const t = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.12.0' });
    expect(t.info.calibratedOn).toMatch(/^calibrated on vllm /);
  });

  it('refuses a version without tables (exit 4)', async () => {
    await expect(loadPerfSource({ system: h200, backend: 'vllm', version: '9.9.9' })).rejects.toBeInstanceOf(UnsupportedError);
  });

  it('GEMM latency never decreases with more work and never beats the roofline', async () => {
    const src = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0' });
    const p = peaksOf(h200);
    // More tokens are more work once the GEMM is compute-bound (below that the kernel choice by m rules; see carriesAlong).
    const computeBound = (dtype: string, m: number): boolean => (2 * m * 6144 * 4096) / computeFlops(p, dtype) >= gemmSol(p, dtype, m, 6144, 4096);
    for (const dtype of ['bfloat16', 'fp8'] as const) {
      let prev = 0;
      let checked = 0;
      for (let m = 1; m <= 200000; m = Math.ceil(m * 1.37)) {
        const t = src.gemm({ dtype, m, n: 6144, k: 4096 });
        if (computeBound(dtype, m / 4)) { expect(t).toBeGreaterThanOrEqual(prev * (1 - 1e-9)); checked++; }
        expect(t).toBeGreaterThanOrEqual(gemmSol(p, dtype, m, 6144, 4096) * (1 - 1e-9));
        prev = t;
      }
      expect(checked).toBeGreaterThan(10);
      prev = 0;
      // Weight dimensions are more work from one tile on (below it the kernels pad; see GEMM_TILE).
      for (let n = GEMM_TILE; n <= 400000; n = Math.ceil(n * 1.5)) {
        const t = src.gemm({ dtype, m: 333, n, k: 5000 });
        expect(t).toBeGreaterThanOrEqual(prev * (1 - 1e-9));
        prev = t;
      }
    }
  });

  it('prices SmoothQuant GEMMs at the int8 roofline (int8 weights and activations, int8 tensor cores)', () => {
    const p = peaksOf(h200);
    expect(gemmSol(p, 'sq', 8192, 8192, 8192)).toBeCloseTo(gemmSol(p, 'int8', 8192, 8192, 8192), 12);
    expect(gemmSol(p, 'sq', 1, 8192, 8192)).toBeCloseTo(gemmSol(p, 'int8', 1, 8192, 8192), 12);
    expect(computeFlops(p, 'sq')).toBeGreaterThan(1.9 * computeFlops(p, 'bfloat16'));
  });

  it('reads 8-bit activations for activation-quantized formats and 16-bit ones for weight-only formats', () => {
    const p = peaksOf(h200);
    // Many tokens through a tiny weight: activation traffic decides the memory roofline.
    const actBound = (dtype: string): number => gemmSol(p, dtype, 1 << 20, 16, 4096);
    for (const dtype of ['fp8_static', 'sq', 'w4afp8']) expect(actBound(dtype) / actBound('fp8')).toBeCloseTo(1, 4);
    for (const dtype of ['int8_wo', 'int4_wo', 'w4a16_mxfp4']) expect(actBound(dtype) / actBound('bfloat16')).toBeCloseTo(1, 4);
  });

  it('prices m off the block-FP8 kernel alignment as its tables say, and leaves other GEMMs smooth', async () => {
    // vLLM 0.19.0 on H200 measured its block-FP8 GEMM about 1.26x slower at m = 4097 than at 4096.
    const src = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0' });
    const ratio = (dtype: 'fp8_block' | 'bfloat16', m: number): number => src.gemm({ dtype, m: m + 1, n: 7168, k: 4096 }) / src.gemm({ dtype, m, n: 7168, k: 4096 });
    expect(ratio('fp8_block', 4096)).toBeGreaterThan(1.15);
    expect(ratio('fp8_block', 4097)).toBeCloseTo(1, 2);
    expect(ratio('bfloat16', 4096)).toBeLessThan(1.02);
  });

  it('decode attention grows with kv length and batch; prefill with sequence', async () => {
    const src = await loadPerfSource({ system: h200, backend: 'sglang', version: '0.5.9' });
    const p = peaksOf(h200);
    let prev = 0;
    for (let kv = 10; kv <= 300000; kv = Math.ceil(kv * 1.6)) {
      const t = src.generationAttention({ batch: 24, kvLen: kv, heads: 8, kvHeads: 1, headDim: 128, kvDtype: 'bfloat16', window: 0 });
      expect(t).toBeGreaterThanOrEqual(prev * (1 - 1e-9));
      expect(t).toBeGreaterThanOrEqual(generationAttentionSol(p, 24, kv, 8, 1, 128, 'bfloat16', 0) * (1 - 1e-9));
      prev = t;
    }
    prev = 0;
    for (let s = 8; s <= 262144; s *= 2) {
      const t = src.contextAttention({ batch: 1, seq: s, heads: 16, kvHeads: 2, headDim: 128, dtype: 'bfloat16', kvDtype: 'bfloat16', window: 0 });
      expect(t).toBeGreaterThanOrEqual(prev * (1 - 1e-9));
      prev = t;
    }
  });

  it('a window never measured costs less than full attention (it reads its tokens); a measured one is as measured', async () => {
    const src = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0' });
    const dc = { batch: 64, kvLen: 16000, heads: 8, kvHeads: 2, headDim: 128, kvDtype: 'bfloat16' } as const;
    const open = src.generationAttention({ ...dc, window: 0 });
    // A window wider than the KV is full attention.
    expect(src.generationAttention({ ...dc, window: 20000 })).toBeCloseTo(open, 9);
    // Mistral's 4k window, measured by neither the tables nor the calibrated model: full attention over its tokens.
    expect(src.generationAttention({ ...dc, window: 4096 })).toBeCloseTo(src.generationAttention({ ...dc, kvLen: 4096, window: 0 }), 9);
    expect(src.generationAttention({ ...dc, window: 4096 })).toBeLessThan(open);
    // Llama 4's 8k chunks, which the window group these tables take (vLLM 0.24.0's) measured: the model's answer.
    expect(src.generationAttention({ ...dc, window: 8192 })).not.toBeCloseTo(src.generationAttention({ ...dc, kvLen: 8192, window: 0 }), 4);
    const pf = { batch: 1, seq: 16000, heads: 8, kvHeads: 2, headDim: 128, dtype: 'bfloat16', kvDtype: 'bfloat16' } as const;
    const full = src.contextAttention({ ...pf, window: 0 });
    expect(src.contextAttention({ ...pf, window: 16000 })).toBeCloseTo(full, 9);
    expect(src.contextAttention({ ...pf, window: 4096 })).toBeLessThan(full);
    expect(src.contextAttention({ ...pf, window: 2048 })).toBeLessThan(src.contextAttention({ ...pf, window: 4096 }));
    // vLLM's measured 8k-window prefill kernel runs slower than its full attention; the tables say so.
    expect(src.contextAttention({ ...pf, window: 8192 })).toBeGreaterThan(full);
  });

  it('a cached prefix makes prefill cheaper than the full prompt', async () => {
    const src = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0' });
    const q = { batch: 1, seq: 2000, heads: 8, kvHeads: 1, headDim: 128, dtype: 'bfloat16', kvDtype: 'bfloat16', window: 0 } as const;
    expect(src.contextAttention({ ...q, prefix: 6000 })).toBeLessThan(src.contextAttention({ ...q, seq: 8000 }));
  });

  it("prices trtllm-gen MoE from TRT-LLM's low-latency kernel at every size, the default kernels past the switch", async () => {
    const b200 = loadSystem('b200_sxm');
    const src = await loadPerfSource({ system: b200, backend: 'trtllm', version: '1.2.0rc5' });
    // DeepSeek-R1's expert shapes at moe_tp 8, NVFP4 (measured with both kernel families up to 8k tokens).
    const q = { dtype: 'nvfp4' as const, hidden: 7168, inter: 2048, topk: 8, experts: 256, moeTp: 8, moeEp: 1 };
    // Up to the switch both are the low-latency kernel (the flag asks its model, the table interpolates it).
    for (const tokens of [16, 64]) expect(src.moe({ ...q, tokens, trtllmGen: true }) / src.moe({ ...q, tokens })).toBeCloseTo(1, 1);
    for (const tokens of [1024, 8192]) {
      const gen = src.moe({ ...q, tokens, trtllmGen: true });
      const cutlass = src.moe({ ...q, tokens });
      expect(gen).toBeGreaterThan(0);
      expect(Math.abs(Math.log(gen / cutlass))).toBeGreaterThan(0.1);
    }
    // Where no low-latency kernel was measured (bf16 experts) the flag changes nothing but the table's rounding.
    const bf16 = { ...q, dtype: 'bfloat16' as const, tokens: 4096 };
    expect(src.moe({ ...bf16, trtllmGen: true }) / src.moe(bf16)).toBeCloseTo(1, 3);
  });

  it("prices trtllm-gen MoE on B300 / GB300, whose tables never timed the low-latency kernel, at its efficiency on the kin GPU, never above their own kernel", async () => {
    const q = { dtype: 'nvfp4' as const, hidden: 7168, inter: 2048, topk: 8, experts: 256, moeTp: 1, moeEp: 8 };
    for (const [name, kin] of [['gb300', 'gb200_sxm'], ['b300_sxm', 'b200_sxm']] as const) {
      const sys = loadSystem(name);
      expect(sys.kernelsLike).toBe(kin);
      const src = await loadPerfSource({ system: sys, backend: 'trtllm', version: '1.3.0rc20' });
      const kinSrc = await loadPerfSource({ system: loadSystem(kin), backend: 'trtllm', version: '1.3.0rc20' });
      const alone = await loadPerfSource({ system: { ...sys, kernelsLike: undefined }, backend: 'trtllm', version: '1.3.0rc20' });
      for (const tokens of [1, 8, 48, 512]) {
        const gen = src.moe({ ...q, tokens, trtllmGen: true });
        const own = src.moe({ ...q, tokens });
        // At small batches the low-latency kernel as it runs on the kin GPU, faster than the CUTLASS kernel timed here.
        if (tokens <= 8) {
          expect(gen).toBeLessThan(0.9 * own);
          expect(gen / kinSrc.moe({ ...q, tokens, trtllmGen: true })).toBeCloseTo(1, 1);
        }
        expect(gen).toBeLessThanOrEqual(own * 1.01);
        // Without a kin GPU the flag prices the GPU's own kernels.
        expect(alone.moe({ ...q, tokens, trtllmGen: true }) / alone.moe({ ...q, tokens })).toBeCloseTo(1, 1);
      }
      // What its own tables timed (the engine's default kernels) keeps its price.
      expect(src.moe({ ...q, tokens: 48 })).toBeCloseTo(alone.moe({ ...q, tokens: 48 }), 9);
    }
  });

  it("prices SGLang's FlashInfer TRT-LLM-gen runner with NVFP4 experts as TRT-LLM times the trtllm-gen kernel, never above SGLang's own NVFP4 kernel", async () => {
    // DeepSeek-R1's experts (within the routings TRT-LLM timed the kernel on) and Qwen3.5-397B's (beyond them: the
    // efficiency of the nearest it timed); SGLang's tables time NVFP4 on CuteDSL only.
    const deepseek = { dtype: 'nvfp4' as const, hidden: 7168, inter: 2048, topk: 8, experts: 256, moeTp: 8, moeEp: 1 };
    const qwen = { dtype: 'nvfp4' as const, hidden: 4096, inter: 1024, topk: 10, experts: 512, moeTp: 4, moeEp: 1 };
    for (const name of ['b200_sxm', 'b300_sxm'] as const) {
      const sys = loadSystem(name);
      const sglang = await loadPerfSource({ system: sys, backend: 'sglang', version: '0.5.14' });
      const trtllm = await loadPerfSource({ system: sys, backend: 'trtllm', version: '1.3.0rc20' });
      for (const q of [deepseek, qwen]) {
        let faster = 0;
        for (const tokens of [1, 8, 64, 512]) {
          const runner = sglang.moe({ ...q, tokens, flashinferTrtllm: true });
          const own = sglang.moe({ ...q, tokens });
          expect(runner).toBeLessThanOrEqual(own * 1.001);
          if (runner < own * 0.99) faster++;
          if (q === deepseek && runner < own * 0.99) expect(runner / trtllm.moe({ ...q, tokens, trtllmGen: true })).toBeCloseTo(1, 1);
        }
        expect(faster).toBeGreaterThan(0);
      }
      // Formats SGLang timed on the runner itself keep its own tables.
      const fp8 = { ...qwen, dtype: 'fp8_block' as const, tokens: 64 };
      expect(sglang.moe({ ...fp8, flashinferTrtllm: true })).not.toBeCloseTo(trtllm.moe({ ...fp8, trtllmGen: true }), 3);
    }
  });

  it('answers every op with a positive latency', async () => {
    const src = await loadPerfSource({ system: loadSystem('b200_sxm'), backend: 'trtllm', version: '1.2.0rc5' });
    const vals = [
      src.gemm({ dtype: 'nvfp4', m: 64, n: 7168, k: 2048 }),
      src.moe({ dtype: 'nvfp4', tokens: 512, hidden: 7168, inter: 2048, topk: 8, experts: 256, moeTp: 1, moeEp: 8 }),
      src.mla({ phase: 'generation', batch: 64, seq: 4096, heads: 16, kvLoraRank: 512, qkRopeHeadDim: 64, qkNopeHeadDim: 128, vHeadDim: 128, qLoraRank: 1536, hidden: 7168, dtype: 'fp8_block', kvDtype: 'fp8' }),
      src.allReduce({ dtype: 'bfloat16', gpus: 8, elements: 8192 * 4096 }),
      src.allReduce({ dtype: 'bfloat16', gpus: 16, elements: 8192 * 4096 }),
      src.nccl('alltoall', { dtype: 'fp8', gpus: 8, elements: 1 << 20 }),
      src.elementwise({ bytes: 1 << 26 }),
      src.p2p(1 << 26, true),
    ];
    for (const v of vals) expect(v).toBeGreaterThan(0);
    expect(src.allReduce({ dtype: 'bfloat16', gpus: 1, elements: 1000 })).toBe(0);
    // Crossing nodes costs more than staying inside one.
    expect(src.allReduce({ dtype: 'bfloat16', gpus: 8, elements: 1 << 24, crossNode: true })).toBeGreaterThan(src.allReduce({ dtype: 'bfloat16', gpus: 8, elements: 1 << 24 }));
  });

  it('prices collectives across nodes by their wire time: small messages pay the network round trip, bulk ones the slower link', async () => {
    const src = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0' });
    const p = peaksOf(h200);
    // 16: a table key; 24: a GPU count the tables do not list (answered by the op model); 8 + crossNode: a lookup flag.
    for (const [gpus, crossNode] of [[16, false], [24, false], [8, true]] as const) {
      for (const [op, inNode, across] of [
        ['alltoall', (e: number) => src.nccl('alltoall', { dtype: 'bfloat16', gpus: 8, elements: e }), (e: number) => src.nccl('alltoall', { dtype: 'bfloat16', gpus, elements: e, crossNode })],
        ['all_reduce', (e: number) => src.allReduce({ dtype: 'bfloat16', gpus: 8, elements: e }), (e: number) => src.allReduce({ dtype: 'bfloat16', gpus, elements: e, crossNode })],
      ] as const) {
        // A launch-bound message: the in-node latency plus about one network round trip, not the link ratio times it.
        const small = across(8192);
        expect(small, `${op} ${gpus} small`).toBeGreaterThan(inNode(8192));
        expect(small, `${op} ${gpus} small`).toBeLessThan(inNode(8192) + 3 * NETWORK_LATENCY_MS);
        // A bulk message runs near the inter-node link's speed of light.
        const bulk = 1 << 27;
        const sol = collectiveSol(p, op, 'bfloat16', gpus, bulk, true);
        expect(across(bulk), `${op} ${gpus} bulk`).toBeGreaterThan(sol);
        expect(across(bulk), `${op} ${gpus} bulk`).toBeLessThan(3 * sol);
      }
    }
  });
});

describe('grid lookup', () => {
  const p = peaksOf(h200);
  const rows = [1, 2, 4, 8].flatMap((m) => [1024, 2048].flatMap((n) => [1024, 4096].map((k) => ({ dtype: 'bfloat16', m, n, k, latency_ms: 0.01 * m * (n / 1024) * (k / 1024) }))));
  const t = new OpTable(OP_SPECS.gemm, p, buildGrids(OP_SPECS.gemm, p, rows));

  it('returns grid points exactly and interpolates in log space between them', () => {
    expect(t.lookup({ dtype: 'bfloat16', m: 4, n: 2048, k: 1024 })).toBeCloseTo(0.08, 12);
    // Latency proportional to m: log-log interpolation is exact.
    expect(t.lookup({ dtype: 'bfloat16', m: 3, n: 1024, k: 1024 })).toBeCloseTo(0.03, 10);
  });

  it('outside the grid holds the edge efficiency (scales by the roofline)', () => {
    const edge = t.lookup({ dtype: 'bfloat16', m: 8, n: 2048, k: 4096 })!;
    const far = t.lookup({ dtype: 'bfloat16', m: 64000, n: 2048, k: 4096 })!;
    const ratio = gemmSol(p, 'bfloat16', 64000, 2048, 4096) / gemmSol(p, 'bfloat16', 8, 2048, 4096);
    expect(far / edge).toBeCloseTo(ratio, 6);
  });

  it('keeps a memory-bound small-m dip (kernel choice) but holds compute-bound GEMMs monotone in m', () => {
    const n = 4096, k = 4096;
    // Weight-bound: m = 4 measured slower than m = 16 (another kernel); compute-bound: a dip is lifted.
    const lat: Record<number, number> = { 1: 0.04, 4: 0.04, 16: 0.02, 64: 0.021, 4096: 1.0, 8192: 0.9, 16384: 3.0 };
    const dip = Object.entries(lat).map(([m, l]) => ({ dtype: 'bfloat16', m: Number(m), n, k, latency_ms: Math.max(l, gemmSol(p, 'bfloat16', Number(m), n, k)) }));
    const g = new OpTable(OP_SPECS.gemm, p, buildGrids(OP_SPECS.gemm, p, dip));
    expect(g.lookup({ dtype: 'bfloat16', m: 16, n, k })).toBeCloseTo(dip[2]!.latency_ms as number, 12);
    expect(g.lookup({ dtype: 'bfloat16', m: 8192, n, k })!).toBeGreaterThanOrEqual(g.lookup({ dtype: 'bfloat16', m: 4096, n, k })!);
  });

  it('takes no floor from GEMM weight dimensions below one tile, and holds them monotone from the tile on', () => {
    const m = 4096, n = 4096;
    // k = 64 (padded to the 128-wide tile) measured slower than k = 128; k = 512 measured faster than k = 256 (lifted).
    const lat: Record<number, number> = { 32: 1.5, 64: 1.5, 128: 1.0, 256: 3.0, 512: 1.2 };
    const dip = Object.entries(lat).map(([k, f]) => ({ dtype: 'bfloat16', m, n, k: Number(k), latency_ms: f * gemmSol(p, 'bfloat16', m, n, Number(k)) }));
    const g = new OpTable(OP_SPECS.gemm, p, buildGrids(OP_SPECS.gemm, p, dip));
    expect(g.lookup({ dtype: 'bfloat16', m, n, k: 128 })).toBeCloseTo(dip[2]!.latency_ms as number, 12);
    expect(g.lookup({ dtype: 'bfloat16', m, n, k: 512 })!).toBeGreaterThanOrEqual(g.lookup({ dtype: 'bfloat16', m, n, k: 256 })!);
  });

  it('keeps a memory-bound MoE dip (kernel choice) but holds compute-bound expert layers monotone in tokens', () => {
    const shape = { dtype: 'bfloat16', distribution: 'balanced', hidden: 4096, inter: 1536, topk: 8, experts: 128, moe_tp: 1, moe_ep: 1 };
    const floor = (tokens: number) => moeSol(p, 'bfloat16', tokens, 4096, 1536, 8, 128, 1, 1);
    // Weight-bound (64 copies per expert and fewer): 768 tokens measured 3x slower than 1024 (another kernel).
    // Compute-bound: 64k tokens measured faster than 32k, a dip the tables lift.
    const lat: Record<number, number> = { 16: 1.5, 768: 3, 1024: 1.2, 32768: 3, 65536: 1.05 };
    const rowsMoe = Object.entries(lat).map(([t, f]) => ({ ...shape, tokens: Number(t), latency_ms: f * floor(Number(t)) }));
    const g = new OpTable(OP_SPECS.moe, p, buildGrids(OP_SPECS.moe, p, rowsMoe));
    expect(g.lookup({ ...shape, tokens: 1024 })).toBeCloseTo(rowsMoe[2]!.latency_ms as number, 12);
    expect(g.lookup({ ...shape, tokens: 65536 })!).toBeGreaterThanOrEqual(g.lookup({ ...shape, tokens: 32768 })!);
  });

  it('answers the hot-path GEMM lookups as the grid does, for every format (roofline scaling included)', () => {
    const formats = ['bfloat16', 'fp8', 'fp8_static', 'nvfp4', 'int4_wo', 'sq', 'w4afp8'];
    const all = formats.flatMap((dtype) => rows.map((r) => ({ ...r, dtype })));
    const table = new OpTable(OP_SPECS.gemm, p, buildGrids(OP_SPECS.gemm, p, all));
    const fast = new GemmFast(p, (dtype) => table.gridByKey(`${dtype}|`));
    for (const dtype of formats) {
      for (const [m, n, k] of [[3, 1500, 3000], [8, 2048, 4096], [64000, 2048, 4096], [1, 300, 100000]] as const) {
        expect(fast.lookup(dtype, m, n, k)! / table.lookup({ dtype, m, n, k })!, `${dtype} ${m}x${n}x${k}`).toBeCloseTo(1, 9);
      }
    }
  });

  it('has no grid for an unknown dtype', () => {
    expect(t.lookup({ dtype: 'nvfp4', m: 4, n: 2048, k: 1024 })).toBeUndefined();
  });

  it('CSV round-trips and rejects a missing column', () => {
    const text = toCsv(OP_SPECS.gemm, rows);
    expect(parseCsv(OP_SPECS.gemm, text, 'x')).toHaveLength(rows.length);
    expect(() => parseCsv(OP_SPECS.gemm, 'dtype,m,n,latency_ms\nbfloat16,1,2,3\n', 'x.csv')).toThrow(/missing column/);
  });
});

describe('--perf-data with a partial measured directory', () => {
  it('uses the measured file and falls back to the bundled tables for the rest', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'perf-'));
    writeFileSync(join(dir, 'meta.yaml'), 'system: h200_sxm\nbackend: vllm\nversion: 0.19.0\nkind: measured\ngpu: H200\n');
    writeFileSync(join(dir, 'gemm.csv'), 'dtype,m,n,k,latency_ms\nbfloat16,1,4096,4096,0.5\nbfloat16,1024,4096,4096,1.5\n');
    const src = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0', perfData: dir });
    expect(src.info.kind).toBe('measured');
    expect(src.info.fallbackOps).toContain('moe');
    expect(src.gemm({ dtype: 'bfloat16', m: 1, n: 4096, k: 4096 })).toBeCloseTo(0.5, 9);
    expect(src.moe({ dtype: 'bfloat16', tokens: 64, hidden: 4096, inter: 1536, topk: 8, experts: 128, moeTp: 1, moeEp: 1 })).toBeGreaterThan(0);
  });

  it('reads a MoE file without the routing column as balanced routing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'perf-'));
    writeFileSync(join(dir, 'meta.yaml'), 'system: h200_sxm\nbackend: vllm\nversion: 0.19.0\nkind: measured\ngpu: H200\n');
    writeFileSync(join(dir, 'moe.csv'), 'dtype,tokens,hidden,inter,topk,experts,moe_tp,moe_ep,latency_ms\nbfloat16,64,4096,1536,8,128,1,1,1.5\nbfloat16,128,4096,1536,8,128,1,1,1.8\n');
    const src = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0', perfData: dir });
    const q = { dtype: 'bfloat16' as const, tokens: 64, hidden: 4096, inter: 1536, topk: 8, experts: 128, moeTp: 1, moeEp: 1 };
    expect(src.moe(q)).toBeCloseTo(1.5, 9);
    expect(src.moe({ ...q, distribution: 'balanced' })).toBeCloseTo(1.5, 9);
  });
});

describe('packed tables (tables.bin)', () => {
  it('store a latency as the double its CSV text parses to', () => {
    const r = rng(7);
    for (let i = 0; i < 50000; i++) {
      const x = 10 ** (-7 + 14 * r()) * (1 + r());
      expect(Object.is(decodeLatency(encodeLatency(x)), Number(fmtLatency(x))), String(x)).toBe(true);
    }
    for (const x of [0, 1, 99999, 99999.5, 0.000123455, 1.23455e-7, 9.99995, 1e7]) expect(decodeLatency(encodeLatency(x))).toBe(Number(fmtLatency(x)));
    expect(() => encodeLatency(NaN)).toThrow();
    expect(() => encodeLatency(1e-30)).toThrow(/range/);
  });

  it('read back the rows the CSV would give, holes and key order included', () => {
    const rows: Row[] = [];
    for (const dtype of ['fp8', 'bfloat16'])
      for (const m of [1, 4, 16]) for (const n of [64, 128]) for (const k of [32, 4096]) {
        if (dtype === 'fp8' && m === 4 && k === 4096) continue; // a hole
        rows.push({ dtype, m, n, k, latency_ms: (m * n * k) / 3e7 + 0.0012345678 });
      }
    const bin = writePacked({ gemm: packRows(OP_SPECS.gemm, rows) });
    const t = readPacked(bin, 'x').get('gemm')!;
    expect(t.keys).toEqual([{ dtype: 'fp8' }, { dtype: 'bfloat16' }]);
    expect(t.keys.flatMap((_, i) => t.rowsOf(i))).toEqual(parseCsv(OP_SPECS.gemm, toCsv(OP_SPECS.gemm, rows), 'x'));
    expect(() => packRows(OP_SPECS.gemm, [...rows].reverse())).toThrow(/grid order/);
    expect(() => readPacked(bin.subarray(0, 40), 'x')).toThrow(/truncated/);
  });

  it('answer exactly as the same tables written as CSV (--perf-data reads both)', async () => {
    const own = tableDir('h200_sxm', 'vllm', '0.19.0')!;
    const packed = readPacked(readFileSync(join(own, PACKED_FILE)), own);
    const dir = mkdtempSync(join(tmpdir(), 'perf-csv-'));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'meta.yaml'), readFileSync(join(own, 'meta.yaml')));
    for (const op of OP_NAMES) {
      const t = packed.get(op)!;
      writeFileSync(join(dir, OP_SPECS[op].file), toCsv(OP_SPECS[op], t.keys.flatMap((_, i) => t.rowsOf(i))));
    }
    const a = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0' });
    const b = await loadPerfSource({ system: h200, backend: 'vllm', version: '0.19.0', perfData: dir });
    expect(b.info.fallbackOps).toBeUndefined();
    const r = rng(11);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    for (let i = 0; i < 3000; i++) {
      const g = { dtype: pick(['bfloat16', 'fp8', 'fp8_block', 'nvfp4'] as const), m: 1 + Math.floor(2 ** (r() * 17)), n: pick([1000, 4096, 5120, 151936]), k: pick([128, 3000, 5120, 25600]) };
      expect(b.gemm(g)).toBe(a.gemm(g));
      const ctx = { batch: pick([1, 3, 8]), seq: 1 + Math.floor(2 ** (r() * 15)), heads: pick([8, 12, 64]), kvHeads: pick([1, 8]), headDim: pick([64, 128]), dtype: 'bfloat16' as const, kvDtype: pick(['bfloat16', 'fp8'] as const), window: pick([0, 128, 4096]) };
      expect(b.contextAttention(ctx)).toBe(a.contextAttention(ctx));
      const gen = { batch: 1 + Math.floor(2 ** (r() * 10)), kvLen: 1 + Math.floor(2 ** (r() * 17)), heads: pick([8, 40]), kvHeads: pick([1, 8]), headDim: 128, kvDtype: 'bfloat16' as const, window: 0 };
      expect(b.generationAttention(gen)).toBe(a.generationAttention(gen));
      const moe = { dtype: pick(['bfloat16', 'fp8', 'mxfp4'] as const), tokens: 1 + Math.floor(2 ** (r() * 14)), hidden: pick([2048, 2880, 4096]), inter: pick([768, 1536, 2880]), topk: 8, experts: 128, moeTp: 1, moeEp: pick([1, 2, 8]) };
      expect(b.moe(moe)).toBe(a.moe(moe));
      const comm = { gpus: pick([2, 4, 8, 16]), elements: 1 + Math.floor(2 ** (r() * 28)), dtype: 'bfloat16' as const };
      expect(b.allReduce(comm)).toBe(a.allReduce(comm));
      const coll = pick(['all_gather', 'alltoall', 'reduce_scatter'] as const);
      expect(b.nccl(coll, comm)).toBe(a.nccl(coll, comm));
      const mla = { phase: pick(['context', 'generation'] as const), batch: 1 + Math.floor(2 ** (r() * 9)), seq: 1 + Math.floor(2 ** (r() * 16)), heads: pick([16, 24, 128]), kvLoraRank: 512, qkRopeHeadDim: 64, qkNopeHeadDim: 128, vHeadDim: 128, qLoraRank: 1536, hidden: 7168, dtype: pick(['bfloat16', 'fp8_block'] as const), kvDtype: 'bfloat16' as const };
      expect(b.mla(mla)).toBe(a.mla(mla));
      const ew = { bytes: Math.floor(2 ** (10 + r() * 20)) };
      expect(b.elementwise(ew)).toBe(a.elementwise(ew));
    }
  });
});
