import { describe, expect, it } from 'vitest';
import { fallbackFp8Gemms, findOutlierGroups, findUnservedGroups, headBlindAttention, hostBoundDecodeModules, loadCalibration, resolvedModel, slowHopperMxfp4, unservedMxfp4, type SystemCalibration } from '../../src/perf/calibration.js';
import { servingMoeRows, pickMoeDistribution } from '../../src/perf/aic.js';
import type { OpModel } from '../../src/perf/model.js';
import { loadSystem } from '../../src/inputs/systems.js';
import { loadPerfSource } from '../../src/perf/index.js';
import { generationAttentionSol, peaksOf } from '../../src/perf/sol.js';

/** A one-feature decode-attention-like model whose correction is a constant ln(eff). */
const flat = (lnEff: number, groups: string[]): OpModel => ({
  features: ['x'], lo: [0], hi: [3], scale: 0.01,
  groups: Object.fromEntries(groups.map((g) => [g, { rows: 10, surfaces: [[0, 1, 2, 3].map(() => Math.round(lnEff / 0.01))] }])),
});

describe('outlier kernels and group borrowing', () => {
  const cal: SystemCalibration = {
    system: 'x', generator: 't',
    sources: {
      'a/1.0.0': { generation_attention: flat(Math.log(1.5), ['128|bf16|full']) },
      'b/1.0.0': { generation_attention: flat(Math.log(1.4), ['128|bf16|full', '128|fp8|full']) },
      'c/1.0.0': { generation_attention: flat(Math.log(1.6), ['128|bf16|full', '128|fp8|full']) },
      'c/2.0.0': { generation_attention: flat(Math.log(12), ['128|bf16|full', '128|fp8|full', '64|bf16|full']) },
    },
  };
  cal.excluded = findOutlierGroups(cal);

  it('flags a group far slower than the system median, and its uncompared siblings of the same family', () => {
    const ex = cal.excluded!.map((e) => `${e.source} ${e.group}`).sort();
    expect(ex).toEqual(['c/2.0.0 128|bf16|full', 'c/2.0.0 128|fp8|full', 'c/2.0.0 64|bf16|full']);
  });

  it('replaces excluded groups from the nearest sound source, keeps sound ones', () => {
    const m = resolvedModel(cal, 'c', '2.0.0', 'generation_attention', 'c/2.0.0')!;
    const src = cal.sources;
    expect(m.groups['128|bf16|full']).toBe(src['c/1.0.0']!.generation_attention!.groups['128|bf16|full']);
    expect(m.groups['64|bf16|full']).toBe(src['c/1.0.0']!.generation_attention!.groups['128|bf16|full']);
    const own = resolvedModel(cal, 'a', '1.0.0', 'generation_attention', 'a/1.0.0')!;
    expect(own.groups['128|bf16|full']).toBe(src['a/1.0.0']!.generation_attention!.groups['128|bf16|full']);
    // A dtype a version never measured comes only from the same engine.
    expect(own.groups['128|fp8|full']).toBeUndefined();
    // One only an excluded sibling version measured is priced as that version prices it.
    expect(resolvedModel(cal, 'c', '1.0.0', 'generation_attention', 'c/1.0.0')!.groups['64|bf16|full']).toBe(m.groups['64|bf16|full']);
  });
});

describe('MoE rows as served', () => {
  it('use balanced routing and the mxfp8-activation MXFP4 kernel where measured', () => {
    const rows = [
      { dtype: 'mxfp4', tokens: 1, distribution: 'balanced', latency_ms: 2 },
      { dtype: 'w4a8_mxfp4_mxfp8', tokens: 1, distribution: 'balanced', latency_ms: 1 },
      { dtype: 'w4a8_mxfp4_mxfp8', tokens: 1, distribution: 'power_law_1.01', latency_ms: 1.5 },
    ];
    const out = servingMoeRows(pickMoeDistribution(rows));
    expect(out).toEqual([{ dtype: 'mxfp4', tokens: 1, distribution: 'balanced', latency_ms: 1 }]);
    expect(servingMoeRows(rows.slice(0, 1))).toEqual(rows.slice(0, 1));
  });

  it('fit each dtype on its own base routing when a table measured one format under skewed routing only', () => {
    const rows = [
      { dtype: 'bfloat16', tokens: 1, distribution: 'balanced', latency_ms: 1 },
      { dtype: 'bfloat16', tokens: 1, distribution: 'power_law_1.01', latency_ms: 1.2 },
      { dtype: 'w4afp8', tokens: 1, distribution: 'power_law_1.2', latency_ms: 0.6 },
      { dtype: 'w4afp8', tokens: 1, distribution: 'power_law_1.01', latency_ms: 0.5 },
    ];
    expect(pickMoeDistribution(rows)).toEqual([rows[0], rows[3]]);
  });
});

describe('bundled GB200 TRT-LLM decode attention', () => {
  it('stays within a few times its memory roofline (the measured GQA-unaware kernel is left out)', async () => {
    const sys = loadSystem('gb200_sxm');
    if (!loadCalibration(sys.name)) return;
    const src = await loadPerfSource({ system: sys, backend: 'trtllm', version: '1.3.0rc10' });
    const q = { batch: 89, kvLen: 4000, heads: 64, kvHeads: 8, headDim: 128, kvDtype: 'bfloat16' as const, window: 0 };
    const s = generationAttentionSol(peaksOf(sys), 89, 4000, 64, 8, 128, 'bfloat16', 0);
    expect(src.generationAttention(q) / s).toBeLessThan(4);
  });
});

describe('MXFP4 MoE tables measured with a kernel engines do not serve', () => {
  /** One source's MoE model with an nvfp4 and an mxfp4 group of the given efficiencies. */
  const moe = (nvEff: number, mxEff: number): OpModel => ({
    ...flat(0, []),
    groups: { ...flat(Math.log(nvEff), ['nvfp4']).groups, ...flat(Math.log(mxEff), ['mxfp4']).groups },
  });
  it('sets aside an mxfp4 fit far less efficient than the same source nvfp4 fit, keeps a close one', () => {
    expect(unservedMxfp4(flat(Math.log(12), ['mxfp4']))).toBe(false); // no nvfp4 to compare with
    expect(unservedMxfp4(moe(1.5, 9))).toBe(true);
    expect(unservedMxfp4(moe(1.5, 2))).toBe(false);
  });
});

describe('8-bit GEMMs timed on a fallback path', () => {
  it('are those no faster than their own bf16 GEMM on compute-bound shapes where another version of the engine is, and are priced from it', async () => {
    const cal = loadCalibration('h200_sxm')!;
    expect(fallbackFp8Gemms(cal, 'vllm/0.14.0')).toEqual(['fp8', 'fp8_block']);
    expect(fallbackFp8Gemms(cal, 'vllm/0.19.0')).toEqual([]);
    expect(fallbackFp8Gemms(cal, 'sglang/0.5.9')).toEqual([]);
    // No tensor-core gain on B200 in 0.19.0 either, while 0.24.0 there measured one: priced from 0.24.0.
    expect(fallbackFp8Gemms(loadCalibration('b200_sxm')!, 'vllm/0.19.0')).toEqual(['fp8', 'fp8_block']);
    expect(fallbackFp8Gemms(loadCalibration('b200_sxm')!, 'vllm/0.24.0')).toEqual([]);
    const m = resolvedModel(cal, 'vllm', '0.14.0', 'gemm', 'vllm/0.14.0')!;
    expect(m.groups.fp8).toBe(cal.sources['vllm/0.19.0']!.gemm!.groups.fp8);
    expect(m.groups.bfloat16).toBe(cal.sources['vllm/0.14.0']!.gemm!.groups.bfloat16);
    const src = await loadPerfSource({ system: loadSystem('h200_sxm'), backend: 'vllm', version: '0.12.0' });
    const at = (dtype: 'fp8' | 'bfloat16') => src.gemm({ dtype, m: 8192, n: 8192, k: 8192 });
    expect(at('fp8')).toBeLessThan(0.75 * at('bfloat16'));
  });
});

describe('prefill attention timed without its query heads', () => {
  it('is a group pricing 64 query heads faster than 8 on the same KV heads, and is priced from a sound source', async () => {
    const cal = loadCalibration('h200_sxm')!;
    expect(headBlindAttention(cal, 'vllm/0.19.0')).toContain('128|bfloat16|bfloat16|full');
    for (const k of ['vllm/0.14.0', 'sglang/0.5.9', 'trtllm/1.2.0rc5']) expect(headBlindAttention(cal, k)).toEqual([]);
    expect(headBlindAttention(loadCalibration('b200_sxm')!, 'vllm/0.19.0')).toEqual([]);
    const m = resolvedModel(cal, 'vllm', '0.19.0', 'context_attention', 'vllm/0.19.0')!;
    expect(m.groups['128|bfloat16|bfloat16|full']).toBe(cal.sources['vllm/0.14.0']!.context_attention!.groups['128|bfloat16|bfloat16|full']);
    // Eight times the query heads on the same KV heads costs several times more, as on every sound source.
    const src = await loadPerfSource({ system: loadSystem('h200_sxm'), backend: 'vllm', version: '0.19.0' });
    const at = (heads: number) => src.contextAttention({ batch: 1, seq: 8192, heads, kvHeads: 8, headDim: 128, dtype: 'bfloat16', kvDtype: 'bfloat16', window: 0 });
    expect(at(64)).toBeGreaterThan(4 * at(8));
  });
});

describe("vLLM's MXFP4 expert table on Hopper", () => {
  it("gives way to another engine's measured MXFP4 table, for vLLM and for SGLang, which borrows vLLM's table", () => {
    const cal = loadCalibration('h200_sxm')!;
    const found = slowHopperMxfp4(cal, 'vllm/0.19.0')!;
    // Compared with the nearest other engine that measured MXFP4 experts on the GPU (SGLang 0.5.14 since it did).
    expect(found.from).not.toMatch(/^vllm\//);
    expect(found.ratio).toBeGreaterThan(1);
    const excluded = new Set((cal.excluded ?? []).filter((e) => e.op === 'moe' && e.group === 'mxfp4').map((e) => e.source));
    expect(excluded.has('vllm/0.19.0')).toBe(true);
    // Each takes the MXFP4 table of the nearest source that is not set aside: never vLLM 0.19.0's own.
    for (const [backend, version] of [['vllm', '0.19.0'], ['sglang', '0.5.9']] as const) {
      const g = resolvedModel(cal, backend, version, 'moe', `${backend}/${version}`)!.groups.mxfp4;
      const from = Object.keys(cal.sources).filter((k) => cal.sources[k]!.moe?.groups.mxfp4 === g);
      expect(from.length, `${backend} ${version}`).toBe(1);
      expect(excluded.has(from[0]!), `${backend} ${version} from ${from[0]}`).toBe(false);
    }
    // TRT-LLM's own table is not judged, and on Blackwell (native FP4 measured) the unserved-MXFP4 rule applies instead.
    expect(slowHopperMxfp4(cal, 'trtllm/1.2.0rc5')).toBeUndefined();
    expect(slowHopperMxfp4(loadCalibration('b200_sxm')!, 'vllm/0.19.0')).toBeUndefined();
  });
});

describe("vLLM's host-bound MLA decode module", () => {
  it("is taken from TRT-LLM's module on the same GPU for vLLM and for SGLang, which borrows vLLM's module", async () => {
    const cal = loadCalibration('b200_sxm')!;
    const found = hostBoundDecodeModules(cal, 'vllm/0.19.0');
    expect([...found.keys()]).toContain('generation|nvfp4|fp8');
    expect([...found.keys()].every((g) => g.startsWith('generation|'))).toBe(true);
    const served = resolvedModel(cal, 'vllm', '0.19.0', 'mla', 'vllm/0.19.0')!;
    for (const [group, { from, ratio }] of found) {
      // TRT-LLM's module nearest in release (1.3.0rc20 since B200 measured it).
      expect(from).toBe('trtllm/1.3.0rc20');
      // `from` names the module vLLM's tables then use.
      expect(served.groups[group]).toBe(cal.sources[from]!.mla!.groups[group]);
      expect(ratio).toBeGreaterThan(1.2);
    }
    expect(hostBoundDecodeModules(cal, 'trtllm/1.2.0rc5').size).toBe(0);
    const g = 'generation|nvfp4|fp8';
    expect(resolvedModel(cal, 'vllm', '0.19.0', 'mla', 'vllm/0.19.0')!.groups[g]).toBe(cal.sources['trtllm/1.3.0rc20']!.mla!.groups[g]);
    expect(resolvedModel(cal, 'sglang', '0.5.9', 'mla', 'vllm/0.19.0')!.groups[g]).toBe(cal.sources['trtllm/1.3.0rc20']!.mla!.groups[g]);
    // TRT-LLM prices its own module.
    expect(resolvedModel(cal, 'trtllm', '1.3.0rc20', 'mla', 'trtllm/1.3.0rc20')!.groups[g]).toBe(cal.sources['trtllm/1.3.0rc20']!.mla!.groups[g]);
    // Prefill keeps vLLM's measured module.
    const c = 'context|nvfp4|fp8';
    expect(resolvedModel(cal, 'vllm', '0.19.0', 'mla', 'vllm/0.19.0')!.groups[c]).toBe(cal.sources['vllm/0.19.0']!.mla!.groups[c]);
    const q = { phase: 'generation' as const, batch: 4, seq: 2048, heads: 8, kvLoraRank: 512, qkRopeHeadDim: 64, qkNopeHeadDim: 128, vHeadDim: 128, qLoraRank: 1536, hidden: 7168, dtype: 'nvfp4' as const, kvDtype: 'fp8' as const };
    const vllm = await loadPerfSource({ system: loadSystem('b200_sxm'), backend: 'vllm', version: '0.19.0' });
    const sglang = await loadPerfSource({ system: loadSystem('b200_sxm'), backend: 'sglang', version: '0.5.9' });
    const trtllm = await loadPerfSource({ system: loadSystem('b200_sxm'), backend: 'trtllm', version: '1.3.0rc20' });
    // Decode: both price TRT-LLM's module (the tables round to 5 significant digits).
    expect(vllm.mla(q)).toBeCloseTo(sglang.mla(q), 4);
    expect(sglang.mla(q)).toBeCloseTo(trtllm.mla(q), 4);
    // GB200: TRT-LLM measured its module with a bf16 KV cache only; its FP8-KV decode groups are composed, so vLLM
    // takes those from it too.
    const gb = loadCalibration('gb200_sxm')!;
    expect(Object.keys(gb.sources['trtllm/1.3.0rc10']!.mla!.groups)).toEqual(expect.arrayContaining(['generation|nvfp4|bfloat16', 'generation|nvfp4|fp8']));
    expect(hostBoundDecodeModules(gb, 'vllm/0.19.0').get('generation|nvfp4|fp8')?.from).toMatch(/^trtllm\//);
  });
});

describe('groups of kernels serving does not run', () => {
  it('are recorded by the fit with their reason, as the rules find them', () => {
    for (const sys of ['h200_sxm', 'b200_sxm']) {
      const cal = loadCalibration(sys)!;
      const found = findUnservedGroups(cal);
      expect(cal.excluded!.filter((e) => e.reason)).toEqual(found);
    }
    const h200 = findUnservedGroups(loadCalibration('h200_sxm')!);
    expect(h200.filter((e) => e.reason === 'fallback kernel').map((e) => `${e.source} ${e.group}`)).toEqual(['vllm/0.14.0 fp8', 'vllm/0.14.0 fp8_block']);
    expect(h200.filter((e) => e.reason === 'query-head-blind kernel').every((e) => e.source === 'vllm/0.19.0' && e.ratio < 1)).toBe(true);
  });
});
