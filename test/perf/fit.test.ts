import { describe, expect, it } from 'vitest';
import { fitGroup, fitMoeRouting, hostRoutedFrom, modelAwareMoe, moeKernelRoles, nongatedShapes, routesOf, siblingMoeRows, tagMoeKernels, unalignedMFactor } from '../../src/perf/fit.js';
import type { Row } from '../../src/perf/tables.js';
import { evalCorrection, FEATURES, FLASHINFER_TRTLLM, LOW_LATENCY, MOE_MIN_LATENCY_TOKENS, MOE_ROUTING, type GroupModel, type OpModel } from '../../src/perf/model.js';
import { clampToBox, groupFor, decodeSurface, encodeSurface, modelLatency, pickSource, type SystemCalibration } from '../../src/perf/calibration.js';

describe('op-model fit', () => {
  it('recovers a smooth efficiency surface from samples', () => {
    const def = { ...FEATURES.gemm, names: ['a', 'b', 'c'], lo: [0, 5, 5], hi: [16, 18, 16] };
    const truth = (x: number[]): number => 0.8 - 0.05 * x[0]! + 0.02 * (x[1]! - 10) * (x[2]! - 10) * 0.1;
    const xs: number[][] = [];
    const ys: number[] = [];
    for (let m = 0; m <= 16; m++) for (let n = 5; n <= 18; n += 1) for (let k = 5; k <= 16; k += 1) { xs.push([m + 0.3, n, k]); ys.push(truth([m + 0.3, n, k])); }
    const g = fitGroup(def, xs, ys, { smooth: 1e-6, ridge: 1e-9, iterations: 400, scale: 0.001 });
    const model: OpModel = { features: def.names, lo: def.lo, hi: def.hi, scale: 0.001, groups: { x: g } };
    for (const x of [[3.3, 8, 9], [10.3, 14, 12], [15.3, 6, 15]]) expect(Math.abs(evalCorrection(model, g, x) - truth(x))).toBeLessThan(0.02);
  });

  it('stores only the lattice nodes its rows reach and holds the edge beyond them', () => {
    const def = { ...FEATURES.allreduce, lo: [7, 1], hi: [29, 3] };
    const xs: number[][] = [];
    const ys: number[] = [];
    for (let e = 10; e <= 20; e += 0.5) for (const g of [1, 2]) { xs.push([e, g]); ys.push(0.1 * (e - 10)); }
    const gm = fitGroup(def, xs, ys, { smooth: 1e-6, ridge: 1e-9, iterations: 300, scale: 0.001 });
    expect([gm.lo, gm.hi]).toEqual([[10, 1], [20, 2]]);
    expect(gm.surfaces[0]!.length).toBe(11 * 2);
    const model: OpModel = { features: def.names, lo: def.lo, hi: def.hi, scale: 0.001, groups: { x: gm } };
    expect(evalCorrection(model, gm, [25, 2])).toBeCloseTo(evalCorrection(model, gm, [20, 2]), 9);
    expect(evalCorrection(model, gm, [15.5, 1])).toBeCloseTo(0.55, 1);
  });

  it('outside the measured box keeps the efficiency of the nearest measured shape', () => {
    // Measured m in [4, 64]; a slope in the first feature (log2 m / 2): ln(latency / SOL) grows toward small m.
    const zero = [0, 0, 0, 0];
    const g = { rows: 10, surfaces: [[500, 500, 0, 0], zero, zero, zero, zero, zero], box: [4, 64, 128, 8192, 128, 8192] };
    const model: OpModel = { features: [], lo: [0, 0, 0, 0], hi: [1, 1, 1, 1], scale: 0.001, groups: { bfloat16: g } };
    const at = (m: number): number => modelLatency('gemm', model, { dtype: 'bfloat16', m, n: 1024, k: 1024 }, 1)!;
    expect(at(1)).toBeCloseTo(at(4), 12);
    expect(at(1)).toBeLessThan(Math.exp(0.5));
    expect(clampToBox('gemm', g, { dtype: 'bfloat16', m: 1, n: 100000, k: 1024 })).toMatchObject({ m: 4, n: 8192, k: 1024 });
  });

  it('finds the factor a GEMM kernel pays for m off its alignment, and none where it pays nothing', () => {
    const rows = (slow: number): Row[] => {
      const out: Row[] = [];
      for (const m of [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]) for (const n of [1024, 4096, 8192]) {
        const lat = 0.01 * Math.sqrt(m) * (n / 1024);
        out.push({ dtype: 'fp8_block', m, n, k: 4096, latency_ms: lat }, { dtype: 'fp8_block', m: m + 1, n, k: 4096, latency_ms: lat * slow });
      }
      return out;
    };
    expect(unalignedMFactor(rows(1.26))).toBeCloseTo(1.26, 3);
    expect(unalignedMFactor(rows(1.03))).toBeUndefined();
  });

  it("fits each of SGLang's two gated MoE kernels on its own rows and prices the one a worker runs", () => {
    const row = (kernel: string, dtype: string, hidden: number): Row => ({ dtype, hidden, inter: 1536, topk: 8, experts: 128, moe_tp: 1, moe_ep: 1, tokens: 64, distribution: 'balanced', kernel });
    const rows = [row('sglang_fused_moe_triton', 'bfloat16', 6144), row('sglang_flashinfer_trtllm_moe', 'bfloat16', 4096), row('sglang_flashinfer_trtllm_moe', 'nvfp4', 4096)];
    const tagged = tagMoeKernels(rows);
    // The runner's rows join a group of their own only where the format was timed with Triton too.
    expect(tagged.map((r) => FEATURES.moe.group(r))).toEqual(['bfloat16', `bfloat16|${FLASHINFER_TRTLLM}`, 'nvfp4']);
    expect(rows[1]!.kernel).toBe('sglang_flashinfer_trtllm_moe');
    expect(tagMoeKernels(rows.slice(1))).toEqual(rows.slice(1));
    const triton: GroupModel = { rows: 9, surfaces: [] }, trtllm: GroupModel = { rows: 8, surfaces: [] }, nvfp4: GroupModel = { rows: 7, surfaces: [] };
    const m: OpModel = { features: [], lo: FEATURES.moe.lo, hi: FEATURES.moe.hi, scale: 0.001, groups: { bfloat16: triton, [`bfloat16|${FLASHINFER_TRTLLM}`]: trtllm, nvfp4 } };
    const q = (dtype: string, kernel?: string): Row => ({ ...row('', dtype, 4096), ...(kernel ? { kernel } : {}) });
    expect(groupFor('moe', m, q('bfloat16'))).toBe(triton);
    expect(groupFor('moe', m, q('bfloat16', FLASHINFER_TRTLLM))).toBe(trtllm);
    // A format the runner alone was timed with: its group is the runner's.
    expect(groupFor('moe', m, q('nvfp4', FLASHINFER_TRTLLM))).toBe(nvfp4);
  });

  it('reports non-gated expert layers apart where a table times them under a usual kernel name', () => {
    const row = (kernel: string, hidden: number, inter: number): Row => ({ dtype: 'bfloat16', hidden, inter, topk: 6, experts: 128, moe_tp: 1, moe_ep: 1, tokens: 64, distribution: 'balanced', kernel });
    const trtllm = [row('moe_torch_flow_nongated', 2688, 1856), row('moe_torch_flow_cutlass', 2048, 768)];
    const sglang = [row('sglang_flashinfer_cutlass_moe', 2688, 1856), row('sglang_fused_moe_triton', 2048, 768)];
    const nongated = nongatedShapes([...trtllm, ...sglang]);
    expect([...nongated]).toEqual(['2688|1856|128|6']);
    expect(moeKernelRoles(sglang, nongated)).toEqual(['nongated', 'served']);
    expect(moeKernelRoles(sglang)).toEqual(['served', 'served']);
    expect(modelAwareMoe('sglang', '0.5.14')).toBe(true);
    expect(modelAwareMoe('sglang', '0.5.10')).toBe(false);
    expect(modelAwareMoe('trtllm', '1.3.0rc20')).toBe(false);
  });

  it('tells served MoE kernels from the kernel the switch does not pick and from non-gated FFNs', () => {
    const row = (kernel: string, tokens: number): Row => ({ dtype: 'nvfp4', hidden: 7168, inter: 2048, topk: 8, experts: 256, moe_tp: 1, moe_ep: 8, tokens, distribution: 'balanced', kernel });
    const kimi = (kernel: string, tokens: number): Row => ({ ...row(kernel, tokens), experts: 384 });
    const rows = [row('moe_torch_flow_min_latency', 64), row('moe_torch_flow_cutlass', 64), row('moe_torch_flow_min_latency', 1024), row('moe_torch_flow_cutlass', 1024),
      row('moe_torch_flow_cutlass', 32), row('moe_torch_flow_nongated', 64), { ...row('moe_torch_flow_min_latency', 2048), hidden: 2688 },
      kimi('moe_torch_flow_cutlass', 32), kimi('moe_torch_flow_cutlass', 1024)];
    // Small batches on a routing the low-latency kernel was measured on are its, measured pair or not; larger ones
    // and other routings (384 experts) the CUTLASS kernel's.
    expect(moeKernelRoles(rows)).toEqual(['served', 'unserved', 'unserved', 'served', 'unserved', 'nongated', 'unserved', 'served', 'served']);
    expect(routesOf(rows.filter((r) => String(r.kernel).includes('min_latency')))).toEqual([256, 256, 8, 8]);
    // Up to the switch the low-latency group prices MoE, above it the CUTLASS one.
    const { lo, hi } = FEATURES.moe;
    // The low-latency kernel was measured on expert FFNs up to 4096 wide (log2 12).
    const cutlass: GroupModel = { rows: 9, surfaces: [] }, low: GroupModel = { rows: 8, surfaces: [], lo, hi: hi.map((h, i) => (i === 2 ? 12 : h)) };
    const m: OpModel = { features: [], lo, hi, scale: 0.001, groups: { nvfp4: cutlass, [`nvfp4|${LOW_LATENCY}`]: low } };
    expect(groupFor('moe', m, row('', MOE_MIN_LATENCY_TOKENS))).toBe(low);
    expect(groupFor('moe', m, row('', MOE_MIN_LATENCY_TOKENS + 1))).toBe(cutlass);
    expect(groupFor('moe', m, { ...row('', 16), inter: 14336 })).toBe(cutlass);
    // A routing outside the ones the kernel was measured on takes the CUTLASS kernel at any size.
    low.routes = [128, 256, 6, 8];
    expect(groupFor('moe', m, row('', 16))).toBe(low);
    expect(groupFor('moe', m, kimi('', 16))).toBe(cutlass);
    expect(groupFor('moe', m, { ...row('', 16), topk: 2, experts: 8 })).toBe(cutlass);
  });

  it('fits how a skewed expert routing changes latency, relative to the group\'s own model', () => {
    // Skew halves the latency of small batches (fewer distinct experts) and doubles it for large ones (hot experts).
    const rows: Row[] = [];
    const ratio = (tokens: number): number => (tokens <= 64 ? 0.5 : 2);
    for (const tokens of [1, 4, 16, 64, 256, 1024, 4096, 16384])
      for (const moe_ep of [1, 2, 4, 8])
        for (const distribution of ['balanced', 'power_law_1.2']) {
          const latency_ms = tokens / 1000 + 0.05;
          rows.push({ dtype: 'fp8', hidden: 4096, inter: 1536, topk: 8, experts: 128, moe_tp: 1, moe_ep, tokens, distribution, kernel: 'k',
            latency_ms: distribution === 'balanced' ? latency_ms : latency_ms * ratio(tokens) });
        }
    // The group's own model prices the balanced rows exactly here; the routing model fits what it leaves.
    const routing = fitMoeRouting(rows, new Map([['fp8', 'balanced']]), (r) => (r.tokens as number) / 1000 + 0.05).get('fp8')!;
    expect(Object.keys(routing)).toEqual(['power_law_1.2']);
    const base: GroupModel = { rows: 1, surfaces: FEATURES.moe.lo.flatMap((_, i) => FEATURES.moe.lo.slice(i + 1).map(() => [0])), lo: FEATURES.moe.lo.map(() => 0), hi: FEATURES.moe.lo.map(() => 0), routing };
    const m: OpModel = { features: FEATURES.moe.names, lo: FEATURES.moe.lo, hi: FEATURES.moe.hi, scale: 0.002, groups: { fp8: base } };
    const at = (tokens: number, distribution?: string) => modelLatency('moe', m, { ...rows[0]!, tokens, moe_ep: 4, ...(distribution ? { distribution } : {}) }, 1);
    expect(at(4, 'power_law_1.2')! / at(4, 'balanced')!).toBeCloseTo(0.5, 1);
    expect(at(4096, 'power_law_1.2')! / at(4096)!).toBeCloseTo(2, 1);
    // A routing the group has no model for is not priced (the tables leave it out).
    expect(at(4096, 'power_law_1.01')).toBeUndefined();
  });

  it('prices the skew across expert-parallel ranks from the first token', () => {
    // Balanced routing spreads a token's copies over the ranks; skew sends them to the rank holding the hot
    // experts, whatever the expert count: 1x on one GPU, 2x at EP 16, back toward 1x when every rank holds one
    // expert (H200 SGLang measured 1.0, 1.8, 2.1, 1.9, 1.2x at EP 1, 8, 16, 64, 128).
    const rows: Row[] = [];
    const skewAt = (moe_ep: number): number => 1 + Math.sin((Math.PI * Math.log2(moe_ep)) / 8);
    for (const experts of [64, 128, 256])
      for (const moe_ep of [1, 2, 4, 8, 16, 32, 64].filter((e) => e <= experts))
        for (const tokens of [1, 2, 4, 8, 16])
          for (const distribution of ['balanced', 'power_law_1.2'])
            rows.push({ dtype: 'fp8', hidden: 4096, inter: 1536, topk: 8, experts, moe_tp: 1, moe_ep, tokens, distribution, kernel: 'k',
              latency_ms: distribution === 'balanced' ? 0.05 : 0.05 * skewAt(moe_ep) });
    const routing = fitMoeRouting(rows, new Map([['fp8', 'balanced']]), () => 0.05).get('fp8')!['power_law_1.2']!;
    const model: OpModel = { features: MOE_ROUTING.names, lo: MOE_ROUTING.lo, hi: MOE_ROUTING.hi, scale: 0.002, groups: {} };
    let worst = 0;
    for (const r of rows.filter((x) => x.distribution !== 'balanced'))
      worst = Math.max(worst, Math.abs(Math.exp(evalCorrection(model, routing, MOE_ROUTING.features(r))) / skewAt(r.moe_ep as number) - 1));
    expect(worst).toBeLessThan(0.02);
  });

  it('prices expert-parallel ranks apart from the work they leave each GPU', () => {
    // At equal work per GPU a wider EP can run slower (H100 TRT-LLM: Kimi-K2's 384 experts 2.5x slower at EP 32 / 64
    // than at EP 16); here the factor peaks at EP 16 whatever the expert count and batch.
    const epFactor = (ep: number): number => 1 + Math.sin((Math.PI * Math.log2(ep)) / 8);
    const xs: number[][] = [];
    const ys: number[] = [];
    const rows: Row[] = [];
    for (const experts of [64, 128, 256, 384])
      for (const moe_ep of [1, 2, 4, 8, 16, 32, 64].filter((e) => e <= experts))
        for (const tokens of [1, 16, 256, 4096]) {
          const r: Row = { dtype: 'fp8', hidden: 4096, inter: 1536, topk: 8, experts, moe_tp: 1, moe_ep, tokens };
          rows.push(r);
          xs.push(FEATURES.moe.features(r));
          ys.push(Math.log(epFactor(moe_ep)));
        }
    const g = fitGroup(FEATURES.moe, xs, ys);
    const m: OpModel = { features: FEATURES.moe.names, lo: FEATURES.moe.lo, hi: FEATURES.moe.hi, scale: 0.002, groups: { fp8: g } };
    let worst = 0;
    rows.forEach((r, i) => { worst = Math.max(worst, Math.abs(Math.exp(evalCorrection(m, g, xs[i]!)) / epFactor(r.moe_ep as number) - 1)); });
    expect(worst).toBeLessThan(0.01);
  });

  it('stores surfaces compactly and losslessly', () => {
    const v = [0, 1, -1, 32767, -32768, 1234, 1240, 1238];
    expect(decodeSurface(encodeSurface(v))).toEqual(v);
    // Smooth surfaces take about one byte per value; the first (int16) format still reads.
    const smooth = Array.from({ length: 300 }, (_, i) => Math.round(500 * Math.sin(i / 40)));
    expect(encodeSurface(smooth).length).toBeLessThan(300 * 1.4);
    expect(decodeSurface(Buffer.from(Int16Array.from(v).buffer).toString('base64'))).toEqual(v);
  });

  it('lends a version the expert layers a later version measured with an unchanged kernel, nearest first', () => {
    const layer = (version: string, inter: number, tokens: number, ms: number, dtype = 'bfloat16'): Row & { v: string } => ({
      v: version, dtype, kernel: 'sglang_fused_moe_triton', distribution: 'balanced', tokens, hidden: 4096, inter, experts: 512, topk: 10, moe_tp: 8, moe_ep: 1, latency_ms: ms,
    });
    const sweep = (version: string, inter: number, scale: number, dtype?: string) => Array.from({ length: 60 }, (_, i) => layer(version, inter, i + 1, scale * (0.05 + 0.01 * i), dtype));
    const own = sweep('0.5.9', 2688, 1);
    // Both others time the shared layer within 2%; each adds Qwen3.5's layer, 0.5.14 one more.
    const near = [...sweep('0.5.10', 2688, 1.01), ...sweep('0.5.10', 1024, 0.7)];
    const far = [...sweep('0.5.14', 2688, 1.02), ...sweep('0.5.14', 1024, 0.5), ...sweep('0.5.14', 512, 0.5)];
    const lent = siblingMoeRows('0.5.9', own, [{ version: '0.5.14', rows: far }, { version: '0.5.10', rows: near }]);
    const from = (v: string, inter: number) => lent.filter((r) => (r as { v: string }).v === v && r.inter === inter).length;
    expect([lent.length, from('0.5.10', 1024), from('0.5.14', 512)]).toEqual([120, 60, 60]);
    // Not lent: a format this version never measured (no points to agree on), a kernel that changed (10% slower).
    expect(siblingMoeRows('0.5.9', own, [{ version: '0.5.10', rows: sweep('0.5.10', 1024, 1, 'fp8_block') }])).toEqual([]);
    const changed = [...sweep('0.5.14', 2688, 1.1), ...sweep('0.5.14', 1024, 0.5)];
    expect(siblingMoeRows('0.5.9', own, [{ version: '0.5.14', rows: changed }])).toEqual([]);
    // ... nor one that agrees at the median but changed on a fifth of the points (1.5x there).
    const partly = [...sweep('0.5.14', 2688, 1).map((r, i) => (i % 5 === 0 ? { ...r, latency_ms: 1.5 * (r.latency_ms as number) } : r)), ...sweep('0.5.14', 1024, 0.5)];
    expect(siblingMoeRows('0.5.9', own, [{ version: '0.5.14', rows: partly }])).toEqual([]);
    // An earlier version lends nothing.
    expect(siblingMoeRows('0.5.14', sweep('0.5.14', 2688, 1), [{ version: '0.5.10', rows: near }])).toEqual([]);
  });

  it('borrows the nearest version of the same backend', () => {
    const cal: SystemCalibration = { system: 's', generator: 'x', sources: { 'vllm/0.14.0': {}, 'vllm/0.19.0': {}, 'trtllm/1.2.0rc5': {} } };
    expect(pickSource(cal, 'vllm', '0.19.0')).toBe('vllm/0.19.0');
    expect(pickSource(cal, 'vllm', '0.12.0')).toBe('vllm/0.14.0');
    expect(pickSource(cal, 'vllm', '0.18.0')).toBe('vllm/0.19.0');
    expect(pickSource(cal, 'trtllm', '1.3.0rc1')).toBe('trtllm/1.2.0rc5');
    expect(pickSource(cal, 'sglang', '0.5.9')).toBeDefined();
  });
});

describe('collectives routed through host memory', () => {
  // Rows of a 2 MiB-64 MiB all-reduce at a given bus bandwidth (bytes per ms) per GPU count.
  const rows = (busBw: Record<number, number>) => Object.entries(busBw).flatMap(([g, bw]) => [20, 22, 24, 26].map((e) => {
    const gpus = Number(g);
    const bytes = 2 ** e;
    return { dtype: 'bfloat16', gpus, elements: bytes / 2, latency_ms: (2 * ((gpus - 1) / gpus) * bytes) / bw };
  }));
  it('finds the GPU count from which bus bandwidth collapses', () => {
    expect(hostRoutedFrom(rows({ 2: 16e6, 4: 3e6, 8: 1e6 }), 'all_reduce', 2)).toBe(4);
    expect(hostRoutedFrom(rows({ 2: 16e6, 4: 12e6, 8: 1e6 }), 'all_reduce', 2)).toBe(8);
  });
  it('leaves switch- and NVLink-connected hosts alone', () => {
    expect(hostRoutedFrom(rows({ 2: 300e6, 4: 350e6, 8: 380e6 }), 'all_reduce', 2)).toBeUndefined();
    expect(hostRoutedFrom(rows({ 4: 3e6, 8: 1e6 }), 'all_reduce', 2)).toBeUndefined(); // no 2-GPU baseline
  });
});
