// Least-squares fit of the op model's correction surfaces (ln latency - ln SOL) with a smoothness penalty,
// solved by conjugate gradients on the normal equations. Deterministic: fixed order, fixed iteration count.
import { FEATURES, FLASHINFER_TRTLLM, GEMM_M_ALIGN, isLowLatencyKernel, latticePos, MOE_MIN_LATENCY_TOKENS, MOE_ROUTING, pairsOf, withinRoutes, type FeatureDef, type GroupModel } from './model.js';
import type { Row } from './tables.js';
import { ringBytesPerByte } from './sol.js';
import { compareVersions } from '../util/versions.js';

export interface FitOptions {
  /** Weight of the first-difference smoothness penalty (relative to the mean squared residual). */
  smooth: number;
  /** Ridge weight pulling unseen nodes toward zero. */
  ridge: number;
  iterations: number;
  /** Integer unit of the stored coefficients (ln latency). */
  scale: number;
  /** Reweighting passes toward a least-absolute-error fit (0 = plain least squares). */
  irls?: number;
}

export const DEFAULT_FIT: FitOptions = { smooth: 3e-4, ridge: 1e-7, iterations: 300, scale: 0.002, irls: 2 };

/** Lattice bounds a group's rows reach: [floor(min), ceil(max)] per feature, inside the model's bounds. */
export function groupBounds(def: Pick<FeatureDef, 'lo' | 'hi'>, xs: number[][]): { lo: number[]; hi: number[] } {
  const lo = def.lo.map((l, i) => {
    let mn = Infinity;
    for (const x of xs) if (x[i]! < mn) mn = x[i]!;
    return Math.min(Math.max(l, Math.floor(mn)), def.hi[i]!);
  });
  const hi = def.hi.map((h, i) => {
    let mx = -Infinity;
    for (const x of xs) if (x[i]! > mx) mx = x[i]!;
    return Math.max(Math.min(h, Math.ceil(mx)), lo[i]!);
  });
  return { lo, hi };
}

/**
 * Fit one group: `xs` are feature vectors, `ys` the targets ln(latency / SOL). The lattice spans only the nodes
 * the rows reach (see groupBounds); the result records those bounds.
 */
export function fitGroup(full: FeatureDef, xs: number[][], ys: number[], opt: FitOptions = DEFAULT_FIT): GroupModel {
  const { lo, hi } = groupBounds(full, xs);
  const d = lo.length;
  const pairs = pairsOf(d);
  const dims = pairs.map(([i, j]) => [hi[i]! - lo[i]! + 1, d === 1 ? 1 : hi[j]! - lo[j]! + 1] as [number, number]);
  const offs: number[] = [];
  let nUnk = 0;
  for (const [a, b] of dims) { offs.push(nUnk); nUnk += a * b; }
  const N = xs.length;
  const per = d === 1 ? 2 : 4 * pairs.length;
  const idx = new Int32Array(N * per);
  const wts = new Float64Array(N * per);
  for (let r = 0; r < N; r++) {
    const x = xs[r]!;
    let c = r * per;
    for (let p = 0; p < pairs.length; p++) {
      const [i, j] = pairs[p]!;
      const [ni, nj] = dims[p]!;
      const [ai, wi] = latticePos(x[i]!, lo[i]!, hi[i]!);
      const ai1 = Math.min(ai + 1, ni - 1);
      if (d === 1) {
        idx[c] = offs[p]! + ai; wts[c++] = 1 - wi;
        idx[c] = offs[p]! + ai1; wts[c++] = wi;
        continue;
      }
      const [aj, wj] = latticePos(x[j]!, lo[j]!, hi[j]!);
      const aj1 = Math.min(aj + 1, nj - 1);
      const o = offs[p]!;
      idx[c] = o + ai * nj + aj; wts[c++] = (1 - wi) * (1 - wj);
      idx[c] = o + ai1 * nj + aj; wts[c++] = wi * (1 - wj);
      idx[c] = o + ai * nj + aj1; wts[c++] = (1 - wi) * wj;
      idx[c] = o + ai1 * nj + aj1; wts[c++] = wi * wj;
    }
  }
  // Neighbour pairs for the smoothness penalty.
  const edges: number[] = [];
  for (let p = 0; p < pairs.length; p++) {
    const [ni, nj] = dims[p]!;
    const o = offs[p]!;
    for (let a = 0; a < ni; a++)
      for (let b = 0; b < nj; b++) {
        if (a + 1 < ni) edges.push(o + a * nj + b, o + (a + 1) * nj + b);
        if (b + 1 < nj) edges.push(o + a * nj + b, o + a * nj + b + 1);
      }
  }
  // Row weights: 1 for least squares; IRLS passes set 1/|residual| (normalized) to fit the median.
  const rowW = new Float64Array(N).fill(1);
  const invN = 1 / Math.max(N, 1);
  const apply = (v: Float64Array, out: Float64Array): void => {
    out.fill(0);
    for (let r = 0; r < N; r++) {
      let s = 0;
      const base = r * per;
      for (let c = base; c < base + per; c++) s += wts[c]! * v[idx[c]!]!;
      s *= invN * rowW[r]!;
      for (let c = base; c < base + per; c++) out[idx[c]!]! += wts[c]! * s;
    }
    for (let e = 0; e < edges.length; e += 2) {
      const a = edges[e]!, b = edges[e + 1]!;
      const diff = opt.smooth * (v[a]! - v[b]!);
      out[a]! += diff;
      out[b]! -= diff;
    }
    for (let u = 0; u < nUnk; u++) out[u]! += opt.ridge * v[u]!;
  };
  const x = new Float64Array(nUnk);
  const Ad = new Float64Array(nUnk);
  const solve = (iterations: number): void => {
    const rhs = new Float64Array(nUnk);
    for (let r = 0; r < N; r++) {
      const base = r * per;
      for (let c = base; c < base + per; c++) rhs[idx[c]!]! += wts[c]! * ys[r]! * invN * rowW[r]!;
    }
    // Conjugate gradients, warm-started from the current solution.
    apply(x, Ad);
    const res = Float64Array.from(rhs, (v, u) => v - Ad[u]!);
    const dir = Float64Array.from(res);
    let rr = dot(res, res);
    for (let it = 0; it < iterations && rr > 1e-30; it++) {
      apply(dir, Ad);
      const alpha = rr / dot(dir, Ad);
      for (let u = 0; u < nUnk; u++) { x[u]! += alpha * dir[u]!; res[u]! -= alpha * Ad[u]!; }
      const rr2 = dot(res, res);
      const beta = rr2 / rr;
      rr = rr2;
      for (let u = 0; u < nUnk; u++) dir[u] = res[u]! + beta * dir[u]!;
    }
  };
  solve(opt.iterations);
  for (let pass = 0; pass < (opt.irls ?? 0); pass++) {
    let sumW = 0;
    for (let r = 0; r < N; r++) {
      let pred = 0;
      const base = r * per;
      for (let c = base; c < base + per; c++) pred += wts[c]! * x[idx[c]!]!;
      rowW[r] = 1 / Math.max(Math.abs(ys[r]! - pred), 0.08);
      sumW += rowW[r]!;
    }
    // Keep the data term's total weight, so the smoothness penalty keeps its meaning.
    for (let r = 0; r < N; r++) rowW[r] = (rowW[r]! * N) / sumW;
    solve(Math.ceil(opt.iterations / 2));
  }
  const surfaces = dims.map(([a, b], p) => Array.from(x.subarray(offs[p]!, offs[p]! + a * b), (v) => Math.round(v / opt.scale)));
  return { rows: N, surfaces, lo, hi };
}

/** A GEMM group's slowdown at unaligned m counts when it is at least this (m and m + 1 differ by <= 25% in work, mostly 1/m). */
export const UNALIGNED_M_MIN = 1.1;

/**
 * The latency factor a GEMM group pays when m is not a multiple of GEMM_M_ALIGN, or undefined when it pays none:
 * the median of latency(m + 1) / latency(m) over the rows measured at both an aligned m and the token after it
 * (same n, k). vLLM 0.19.0's block-FP8 GEMM on H100 / H200 measures 1.26-1.27x, GB200 TRT-LLM's 1.46x; every
 * other group measured at most 1.06x.
 */
export function unalignedMFactor(rows: Row[]): number | undefined {
  const lat = new Map<string, number>();
  for (const r of rows) lat.set(`${r.m}|${r.n}|${r.k}`, r.latency_ms as number);
  const ratios: number[] = [];
  for (const r of rows) {
    const m = r.m as number;
    if (m % GEMM_M_ALIGN !== 0) continue;
    const next = lat.get(`${m + 1}|${r.n}|${r.k}`);
    if (next !== undefined) ratios.push(next / (r.latency_ms as number));
  }
  if (ratios.length < 20) return undefined;
  const f = ratios.sort((a, b) => a - b)[ratios.length >> 1]!;
  return f >= UNALIGNED_M_MIN ? Math.round(f * 1000) / 1000 : undefined;
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/**
 * Routing models of the MoE groups: for each group (FEATURES.moe) and each routing other than its dtype's base
 * (`base`, by dtype), the rest of ln(latency) that the group's own model (`predict`, fitted on the base rows)
 * leaves on that routing's rows, fitted on the MOE_ROUTING lattice. `rows`: the rows of every routing of kernels
 * serving runs.
 */
export function fitMoeRouting(rows: Row[], base: ReadonlyMap<string, string>, predict: (r: Row) => number | undefined): Map<string, Record<string, GroupModel>> {
  const byGroup = new Map<string, { xs: number[][]; ys: number[] }>();
  for (const r of rows) {
    if (r.distribution === base.get(String(r.dtype)) || !((r.latency_ms as number) > 0)) continue;
    const p = predict(r);
    if (!(p !== undefined && p > 0)) continue;
    const k = `${FEATURES.moe.group(r)} ${String(r.distribution)}`;
    let e = byGroup.get(k);
    if (!e) byGroup.set(k, (e = { xs: [], ys: [] }));
    e.xs.push(MOE_ROUTING.features(r));
    e.ys.push(Math.log((r.latency_ms as number) / p));
  }
  const out = new Map<string, Record<string, GroupModel>>();
  for (const k of [...byGroup.keys()].sort()) {
    const e = byGroup.get(k)!;
    if (e.xs.length < 8) continue;
    const [g, dist] = k.split(' ') as [string, string];
    const m = out.get(g) ?? {};
    m[dist] = fitGroup(MOE_ROUTING, e.xs, e.ys);
    out.set(g, m);
  }
  return out;
}

/** What a reference MoE row measured, relative to what serving runs (see moeKernelRoles). */
export type MoeKernelRole = 'served' | 'unserved' | 'nongated';

/**
 * Expert counts and top-k of the shapes a kernel was measured on: [fewest, most experts, lowest, highest top-k].
 * TRT-LLM's low-latency FP4 kernel serves the routings it implements; the collector measured it there only.
 */
export function routesOf(rows: Row[]): number[] {
  const e = rows.map((r) => r.experts as number);
  const k = rows.map((r) => r.topk as number);
  return [Math.min(...e), Math.max(...e), Math.min(...k), Math.max(...k)];
}

/** The expert layer a MoE row measured, without its parallelism and batch: "hidden|inter|experts|topk". */
export function moeShapeKey(r: Row): string {
  return `${r.hidden}|${r.inter}|${r.experts}|${r.topk}`;
}

/**
 * Expert layers (moeShapeKey) that a system's tables timed with a kernel named non-gated (TRT-LLM's). Tables that
 * time each model through the engine's own MoE layer with the model's activation (modelAwareMoe) measure those
 * models (Nemotron-H's relu2 experts) non-gated too, under their usual kernel names (SGLang 0.5.14: FlashInfer
 * CUTLASS on Hopper, TRT-LLM-gen on Blackwell, Triton on L40S). `rows`: every MoE row of one system.
 */
export function nongatedShapes(rows: Iterable<Row>): Set<string> {
  const out = new Set<string>();
  for (const r of rows) if (String(r.kernel ?? '').includes('nongated')) out.add(moeShapeKey(r));
  return out;
}

/**
 * Whether a source's MoE table timed each model as the engine runs it, gating included: SGLang from 0.5.14, whose
 * collector drives SGLang's FusedMoE layer with each model's activation and gating (aiconfigurator
 * collector/sglang/collect_moe.py; on H200 it times Nemotron-H through the FlashInfer CUTLASS runner SGLang
 * serves it with, where earlier SGLang tables timed the same shapes with the gated Triton kernel).
 */
export function modelAwareMoe(framework: string, version: string): boolean {
  return framework === 'sglang' && compareVersions(version, '0.5.14') >= 0;
}

/** Points two versions must both have measured, per format and kernel, before one lends the other its shapes. */
const SIBLING_MIN_SHARED = 50;
/** Two versions' kernel counts as unchanged when their latencies on those points differ by at most 5% at the median and 15% at p90. */
const SIBLING_MEDIAN = Math.log(1.05);
const SIBLING_P90 = Math.log(1.15);

/**
 * MoE rows a version's fit borrows from later versions of the same engine on the same system: the expert layers
 * (moeShapeKey) a later version measured with a format and kernel this version also measured, where this version
 * measured no such layer, when the two time the layers both measured alike (the kernel did not change between
 * them: within 5% at the median and 15% at p90 over SIBLING_MIN_SHARED points or more; SGLang 0.5.14's Triton
 * kernel on B200 is within 5% of 0.5.10's at the median but 60% at p90, and lends nothing). Collectors add the
 * shapes of newly released models to later tables; fitted without them, a version's surfaces extrapolated to such a
 * shape priced it up to 1.5x what the next version measured with the same kernel (Qwen3.5-397B's experts, SGLang
 * 0.5.9 against 0.5.10 on B200, which agree within 0.7% at the median on the layers both timed). Nearer versions
 * lend first.
 */
export function siblingMoeRows(version: string, own: Row[], siblings: ReadonlyArray<{ version: string; rows: Row[] }>): Row[] {
  const groupOf = (r: Row) => `${r.dtype}|${r.kernel ?? ''}`;
  const pointOf = (r: Row) => `${groupOf(r)}|${r.distribution}|${r.tokens}|${moeShapeKey(r)}|${r.moe_tp}|${r.moe_ep}`;
  const ownLatency = new Map(own.map((r) => [pointOf(r), r.latency_ms as number]));
  const taken = new Set(own.map((r) => `${groupOf(r)}|${moeShapeKey(r)}`));
  // Only formats, kernels and routings this version measured: its table is lent shapes, not other measurements.
  const ownGroups = new Set(own.map((r) => `${groupOf(r)}|${r.distribution}`));
  // Later versions only, nearest first: tables grow with the models released after them, and SGLang's from 0.5.14
  // time each model through its own layer, where borrowing earlier generic layers pulled their own slices off.
  const ordered = siblings.filter((sib) => compareVersions(sib.version, version) > 0).sort((a, b) => compareVersions(a.version, b.version));
  const out: Row[] = [];
  for (const sib of ordered) {
    const ratios = new Map<string, number[]>();
    for (const r of sib.rows) {
      const mine = ownLatency.get(pointOf(r));
      if (mine === undefined || !(mine > 0) || !((r.latency_ms as number) > 0)) continue;
      const g = groupOf(r);
      if (!ratios.has(g)) ratios.set(g, []);
      ratios.get(g)!.push(Math.abs(Math.log((r.latency_ms as number) / mine)));
    }
    const agreeing = new Set<string>();
    for (const [g, e] of ratios) {
      if (e.length < SIBLING_MIN_SHARED) continue;
      e.sort((x, y) => x - y);
      if (e[e.length >> 1]! <= SIBLING_MEDIAN && e[Math.floor(0.9 * (e.length - 1))]! <= SIBLING_P90) agreeing.add(g);
    }
    const lent = new Set<string>();
    for (const r of sib.rows) {
      const g = groupOf(r);
      const shape = `${g}|${moeShapeKey(r)}`;
      if (!ownGroups.has(`${g}|${r.distribution}`) || taken.has(shape) || !agreeing.has(g)) continue;
      lent.add(shape);
      out.push(r);
    }
    for (const shape of lent) taken.add(shape);
  }
  return out;
}

/** SGLang's Triton MoE kernel, which its server runs unless a model architecture selects another runner. */
const SGLANG_TRITON = 'sglang_fused_moe_triton';
/** SGLang's FlashInfer TRT-LLM-gen MoE runner. */
const SGLANG_FLASHINFER_TRTLLM = 'sglang_flashinfer_trtllm_moe';

/**
 * MoE rows with the kernel tag their group reads (FEATURES.moe.group): where one table timed a format with both
 * SGLang's Triton kernel and its FlashInfer TRT-LLM-gen runner (SGLang 0.5.14 on Blackwell, each on the models
 * its server selects it for: server_args picks the runner per architecture), the runner's rows are tagged
 * FLASHINFER_TRTLLM, so each kernel is fitted on its own rows. Tagged rows are copies; the rest are returned as is.
 */
export function tagMoeKernels(rows: Row[]): Row[] {
  const both = new Set<string>();
  const triton = new Set(rows.filter((r) => r.kernel === SGLANG_TRITON).map((r) => String(r.dtype)));
  for (const r of rows) if (r.kernel === SGLANG_FLASHINFER_TRTLLM && triton.has(String(r.dtype))) both.add(String(r.dtype));
  if (!both.size) return rows;
  return rows.map((r) => (r.kernel === SGLANG_FLASHINFER_TRTLLM && both.has(String(r.dtype)) ? { ...r, kernel: FLASHINFER_TRTLLM } : r));
}

/**
 * Role of each row of one reference MoE table, by the rule the lookup follows. Non-gated expert FFNs (two
 * matrices, not three) are another op than ours: rows of a kernel named so, or of an expert layer in `nongated`
 * (nongatedShapes of the system's tables). Where TRT-LLM's low-latency kernel was measured, the engine
 * serves it up to MOE_MIN_LATENCY_TOKENS tokens on the routings it was measured on (routesOf, per dtype) and the
 * CUTLASS kernel elsewhere; the other kernel's row at that size and routing is not what serving runs, whether
 * or not the collector measured both at that shape.
 */
export function moeKernelRoles(rows: Row[], nongated?: ReadonlySet<string>): MoeKernelRole[] {
  const routes = new Map<string, number[]>();
  for (const dtype of new Set(rows.filter(isLowLatencyKernel).map((r) => String(r.dtype)))) {
    routes.set(dtype, routesOf(rows.filter((r) => isLowLatencyKernel(r) && String(r.dtype) === dtype)));
  }
  return rows.map((r) => {
    if (String(r.kernel ?? '').includes('nongated') || nongated?.has(moeShapeKey(r))) return 'nongated';
    const low = (r.tokens as number) <= MOE_MIN_LATENCY_TOKENS;
    if (isLowLatencyKernel(r)) return low ? 'served' : 'unserved';
    const lowServes = routes.get(String(r.dtype));
    return low && lowServes && withinRoutes(lowServes, r) ? 'unserved' : 'served';
  });
}

/** Group of a collective row for hostRoutedFrom (allreduce rows count as all_reduce): "collective|kind|dtype". */
export function commGroupKey(r: Row): string {
  return `${r.collective ?? 'all_reduce'}|${r.kind ?? ''}|${r.dtype}`;
}

/**
 * The GPU count from which a host's collectives went through system memory instead of peer-to-peer links, or
 * undefined. On such a host bus bandwidth collapses as GPUs are added (the L40S reference host: 16.6 GB/s for a
 * 2-GPU all-reduce of 2 MB, 1.1 GB/s for 8 GPUs), unlike a server whose GPUs share a PCIe switch or NVLink, where
 * it holds or grows. Those rows describe the host, not the GPU, and are left out of the fit: wider groups
 * keep the efficiency the 2-GPU rows measured against the link in data/systems/.
 * `rows`: one collective and dtype (allreduce rows count as all_reduce), with `elements`, `gpus`, `latency_ms`.
 */
export function hostRoutedFrom(rows: Row[], collective: string, bytesPerElement: number): number | undefined {
  const byGpus = new Map<number, number[]>();
  for (const r of rows) {
    const g = r.gpus as number;
    const bytes = (r.elements as number) * bytesPerElement;
    if (g < 2 || bytes < 2 ** 20) continue; // large messages only: bandwidth, not latency
    const bw = (ringBytesPerByte(collective, g) * bytes) / (r.latency_ms as number);
    if (!byGpus.has(g)) byGpus.set(g, []);
    byGpus.get(g)!.push(bw);
  }
  const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
  const two = byGpus.get(2);
  if (!two) return undefined;
  const base = median(two);
  return [...byGpus.keys()].sort((a, b) => a - b).find((g) => g > 2 && median(byGpus.get(g)!) < base / 4);
}
