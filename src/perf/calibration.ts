// Calibration files (data/calibration/<system>.json): fitted op-model coefficients per reference source.
import { existsSync, readFileSync } from 'node:fs';
import { dataPath } from '../util/paths.js';
import { compareVersions, versionDistance } from '../util/versions.js';
import { FEATURES, FLASHINFER_TRTLLM, LOW_LATENCY, MOE_MIN_LATENCY_TOKENS, MOE_ROUTING, TRTLLM_GEN, evalCorrection, withinRoutes, type GroupModel, type ModelOp, type OpModel } from './model.js';
import { DTYPE_FALLBACK, OP_SPECS, type Row } from './tables.js';

export interface SystemCalibration {
  system: string;
  generator: string;
  /** Fitted sources: "<backend>/<version>" -> op -> model. */
  sources: Record<string, Partial<Record<ModelOp, OpModel>>>;
  /** System-wide NCCL fit (reference NCCL version). */
  nccl?: { version: string; model: OpModel };
  /** Groups whose measurements disagree wildly with every other source of the system (see findOutlierGroups). */
  excluded?: ExcludedGroup[];
  /** Collective groups whose rows from `fromGpus` GPUs went through host memory and were left out (see hostRoutedFrom). */
  hostRouted?: { source: string; op: ModelOp; group: string; fromGpus: number }[];
}

/**
 * A fitted group left out of the tables. An outlier (no `reason`): its typical efficiency is `ratio` x the median
 * of the system's sources. A kernel serving does not run (`reason`, see findUnservedGroups): `ratio` is the
 * measure its rule judged.
 */
export interface ExcludedGroup {
  source: string;
  op: ModelOp;
  group: string;
  ratio: number;
  /** Set when the group had no sibling to compare with and is left out because `like`, same kernel, was. */
  like?: string;
  reason?: 'unserved kernel' | 'fallback kernel' | 'query-head-blind kernel' | 'host-bound module';
  /** Left out of these engines' tables only (other engines that borrow the group keep it). */
  backends?: string[];
}

/** A group key without its first field (e.g. attention "head_dim|kv_dtype|window" -> "kv_dtype|window"). */
const tailOf = (g: string): string | undefined => (g.includes('|') ? g.slice(g.indexOf('|') + 1) : undefined);

const cache = new Map<string, SystemCalibration | null>();

/**
 * Surfaces are stored as "~" + base64 of zigzag varints of the differences between consecutive values (units of
 * the model's `scale`, clamped to int16): fitted surfaces are smooth, so most differences take one byte. Plain
 * base64 of little-endian int16 values (the first format) still reads.
 */
export function encodeSurface(v: number[]): string {
  const bytes: number[] = [];
  let prev = 0;
  for (const x of v) {
    const q = Math.max(-32768, Math.min(32767, Math.round(x)));
    const d = q - prev;
    prev = q;
    let z = d >= 0 ? 2 * d : -2 * d - 1;
    while (z >= 0x80) { bytes.push((z & 0x7f) | 0x80); z >>>= 7; }
    bytes.push(z);
  }
  return '~' + Buffer.from(bytes).toString('base64');
}

export function decodeSurface(s: string): number[] {
  if (!s.startsWith('~')) {
    const buf = Buffer.from(s, 'base64');
    const out: number[] = new Array(buf.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = buf.readInt16LE(i * 2);
    return out;
  }
  const buf = Buffer.from(s.slice(1), 'base64');
  const out: number[] = [];
  let prev = 0;
  for (let i = 0; i < buf.length; ) {
    let z = 0, shift = 0, b: number;
    do { b = buf[i++]!; z += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80);
    prev += z % 2 === 0 ? z / 2 : -(z + 1) / 2;
    out.push(prev);
  }
  return out;
}

type Stored = Omit<SystemCalibration, 'sources'> & { sources: Record<string, Record<string, OpModel>> };

function mapModels(cal: Stored, f: (surface: unknown) => unknown): SystemCalibration {
  const convGroups = (gs: Record<string, GroupModel>): Record<string, GroupModel> =>
    Object.fromEntries(Object.entries(gs).map(([g, gm]) => [g, {
      ...gm, surfaces: gm.surfaces.map(f) as number[][], ...(gm.routing ? { routing: convGroups(gm.routing) } : {}),
    }]));
  const conv = (m: OpModel): OpModel => ({ ...m, groups: convGroups(m.groups) });
  return {
    ...cal,
    sources: Object.fromEntries(Object.entries(cal.sources).map(([k, ops]) => [k, Object.fromEntries(Object.entries(ops).map(([op, m]) => [op, conv(m)]))])),
    ...(cal.nccl ? { nccl: { version: cal.nccl.version, model: conv(cal.nccl.model) } } : {}),
  };
}

/** The file form of a calibration (surfaces base64-encoded). */
export function serializeCalibration(cal: SystemCalibration): string {
  return JSON.stringify(mapModels(cal as Stored, (s) => encodeSurface(s as number[]))) + '\n';
}

export function parseCalibration(text: string): SystemCalibration {
  return mapModels(JSON.parse(text) as Stored, (s) => (typeof s === 'string' ? decodeSurface(s) : s));
}

/** Formats a version that never measured them takes from another engine on the same GPU (see resolvedModel). */
const FORMAT_BORROW = new Set(['mxfp4']);

/** An outlier source is this many times slower (or faster) than the median source of the system. */
export const OUTLIER_RATIO = 4;

/**
 * Lattice nodes of a model (every `step`-th node, in row-major order with the last feature fastest, when there are
 * more than `max`), for comparing fitted surfaces. Nodes are decoded from their index: a model with many features
 * has millions of nodes, too many to list.
 */
function latticeNodes(m: OpModel, max = 40000): number[][] {
  const sizes = m.lo.map((lo, i) => m.hi[i]! - lo + 1);
  const total = sizes.reduce((a, b) => a * b, 1);
  const step = total <= max ? 1 : Math.ceil(total / max);
  const pts: number[][] = [];
  for (let idx = 0; idx < total; idx += step) {
    const p = new Array<number>(sizes.length);
    for (let i = sizes.length - 1, rest = idx; i >= 0; i--) {
      p[i] = m.lo[i]! + (rest % sizes[i]!);
      rest = Math.floor(rest / sizes[i]!);
    }
    pts.push(p);
  }
  return pts;
}

const sameLattice = (a: OpModel, b: OpModel): boolean =>
  a.scale === b.scale && a.lo.join() === b.lo.join() && a.hi.join() === b.hi.join();

/**
 * Groups (op, dtype/shape family) of a source whose typical latency/SOL differs from the median of all sources of
 * the same system by more than OUTLIER_RATIO (at least three sources must have the group). Such a kernel table
 * measured something the engines do not run in serving (e.g. a decode-attention kernel that ignores GQA sharing,
 * or untuned MoE kernels), so the tables use the group of a sibling source instead.
 */
export function findOutlierGroups(cal: SystemCalibration): ExcludedGroup[] {
  const out: ExcludedGroup[] = [];
  /** Every compared group's ratio to the median, by "source|op|group". */
  const compared = new Map<string, number>();
  const srcs = Object.keys(cal.sources).sort();
  for (const op of Object.keys(FEATURES).sort() as ModelOp[]) {
    const groups = [...new Set(srcs.flatMap((s) => Object.keys(cal.sources[s]![op]?.groups ?? {})))].sort();
    for (const g of groups) {
      const have = srcs.filter((s) => cal.sources[s]![op]?.groups[g]);
      if (have.length < 3) continue;
      const m0 = cal.sources[have[0]!]![op]!;
      if (!have.every((s) => sameLattice(m0, cal.sources[s]![op]!))) continue;
      // Compared over the whole lattice (each group holds its edge values beyond the nodes it measured) and over
      // the shapes every source measured (the nodes inside all their groups' bounds); the larger gap counts.
      const inside = (x: number[]): boolean => have.every((s) => withinBounds(m0, cal.sources[s]![op]!.groups[g]!, x));
      const all = latticeNodes(m0);
      const common = all.filter(inside);
      const gaps = (pts: number[][]): number[] => {
        const typical = have.map((s) => {
          const m = cal.sources[s]![op]!;
          const v = pts.map((x) => evalCorrection(m, m.groups[g]!, x)).sort((a, b) => a - b);
          return v[v.length >> 1]!;
        });
        const sorted = [...typical].sort((a, b) => a - b);
        const med = sorted[(sorted.length - 1) >> 1]!;
        return typical.map((t) => t - med);
      };
      const onAll = gaps(all);
      const onCommon = common.length ? gaps(common) : onAll;
      have.forEach((s, i) => {
        const gap = Math.abs(onCommon[i]!) > Math.abs(onAll[i]!) ? onCommon[i]! : onAll[i]!;
        const ratio = Math.exp(gap);
        if (ratio > OUTLIER_RATIO || ratio < 1 / OUTLIER_RATIO) out.push({ source: s, op, group: g, ratio: Number(ratio.toFixed(2)) });
        compared.set(`${s}|${op}|${g}`, ratio);
      });
    }
  }
  // A kernel that is an outlier in most groups that could be compared (at least two) is one in its other groups of
  // the same family too (same fields but the first, e.g. another head_dim): those not compared, and those compared
  // that lean the same way by more than the square root of the threshold (GB200 TRT-LLM 1.3.0rc10's GQA-unaware
  // decode kernel: 4.3-6.2x in five groups, its head_dim-64 FP8 group within 4x of a median that newer sources pull).
  const flagged = [...out];
  const lean = Math.sqrt(OUTLIER_RATIO);
  for (const src of srcs)
    for (const op of Object.keys(FEATURES).sort() as ModelOp[]) {
      const mine = flagged.filter((e) => e.source === src && e.op === op);
      const groups = Object.keys(cal.sources[src]![op]?.groups ?? {}).sort();
      const cmp = groups.filter((g) => compared.has(`${src}|${op}|${g}`));
      if (mine.length < 2 || 2 * mine.length <= cmp.length) continue;
      for (const g of groups) {
        if (mine.some((e) => e.group === g)) continue;
        const like = mine.find((e) => tailOf(e.group) !== undefined && tailOf(e.group) === tailOf(g));
        if (!like) continue;
        const r = compared.get(`${src}|${op}|${g}`);
        if (r === undefined) out.push({ source: src, op, group: g, ratio: like.ratio, like: like.group });
        else if (like.ratio > 1 ? r > lean : r < 1 / lean) out.push({ source: src, op, group: g, ratio: Number(r.toFixed(2)), like: like.group });
      }
    }
  return out;
}

/**
 * MXFP4 experts measured with bf16 activations by a source that also measured the GPU's native FP4 MoE kernel
 * (NVFP4) and far slower than it (median over the lattice, more than OUTLIER_RATIO): engines serve MXFP4 through
 * the native path there (vLLM on Blackwell: FlashInfer TRT-LLM-gen), so that table is not what serving runs and
 * the source's native FP4 group prices MXFP4 instead.
 */
export function unservedMxfp4(m: OpModel | undefined): boolean {
  return (mxfp4Ratio(m) ?? 0) > OUTLIER_RATIO;
}

/** Median MXFP4 / NVFP4 latency of one source's MoE model over its lattice (undefined without both groups). */
function mxfp4Ratio(m: OpModel | undefined): number | undefined {
  const mx = m?.groups.mxfp4, nv = m?.groups.nvfp4;
  return m && mx && nv ? latticeRatio(m, mx, m, nv) : undefined;
}

/** Median latency ratio of group `ga` of model `a` to group `gb` of model `b` over a's lattice (b on the same lattice). */
function latticeRatio(a: OpModel, ga: GroupModel, b: OpModel, gb: GroupModel): number {
  const d = latticeNodes(a, 4000).map((x) => evalCorrection(a, ga, x) - evalCorrection(b, gb, x)).sort((p, q) => p - q);
  return Math.exp(d[d.length >> 1]!);
}

/** 8-bit GEMM formats whose tensor cores run at twice the 16-bit rate on every GPU that has them. */
const FP8_GEMMS = ['fp8', 'fp8_block'];

/** Compute-bound GEMM shapes (m, n, k) where an 8-bit kernel shows its tensor cores' 2x over 16-bit. */
const COMPUTE_BOUND_GEMMS: Row[] = [4096, 8192, 16384].flatMap((m) =>
  [4096, 8192, 16384].flatMap((n) => [4096, 8192].map((k) => ({ m, n, k } as Row))));

/** An 8-bit GEMM at or above this share of its 16-bit time on compute-bound shapes shows no tensor-core gain. */
const FALLBACK_FP8_RATIO = 0.9;

/** Median 8-bit / bf16 latency of one source's GEMM model on compute-bound shapes (undefined without both groups). */
function fp8Ratio(m: OpModel | undefined, g: string): number | undefined {
  const q = m?.groups[g], bf = m?.groups.bfloat16;
  if (!m || !q || !bf) return undefined;
  // Corrections are log(latency / SOL), and the 8-bit SOL is half the 16-bit one on these shapes.
  const d = COMPUTE_BOUND_GEMMS.map((r) => FEATURES.gemm.features(r))
    .map((x) => evalCorrection(m, q, x) - evalCorrection(m, bf, x)).sort((a, b) => a - b);
  return Math.exp(d[d.length >> 1]!) / 2;
}

/**
 * 8-bit GEMM groups of a source ("<backend>/<version>") that run no faster than its own bf16 GEMM on compute-bound
 * shapes while another version of the same engine on the same GPU does (vLLM 0.14.0's fp8 and fp8_block on H100 /
 * H200 measure 0.92-1.26x bf16, vLLM 0.19.0's 0.54-0.77x, other engines 0.55-0.69x): the collector timed a path
 * that engine's serving does not take, so the tables price that format from the sibling version.
 */
export function fallbackFp8Gemms(cal: SystemCalibration, source: string): string[] {
  const backend = source.slice(0, source.indexOf('/') + 1);
  const siblings = Object.keys(cal.sources).filter((k) => k !== source && k.startsWith(backend));
  return FP8_GEMMS.filter((g) => (fp8Ratio(cal.sources[source]?.gemm, g) ?? 0) >= FALLBACK_FP8_RATIO
    && siblings.some((k) => (fp8Ratio(cal.sources[k]!.gemm, g) ?? 1) < FALLBACK_FP8_RATIO));
}

/**
 * Prefill-attention groups of a source whose fitted model prices 64 query heads sharing 8 KV heads faster than 8
 * query heads on the same 8 KV heads (4096-token prompts): eight times the work in less time. The kernel timed
 * did the work of its KV heads only (H200 vLLM 0.19.0: 16k-token prompts at 64 query heads in 0.14 ms, 1% of the
 * roofline; GQA rows that scale with KV heads while every other source scales with query heads), so the tables
 * price those groups from the nearest sound source.
 */
export function headBlindAttention(cal: SystemCalibration, source: string): string[] {
  const m = cal.sources[source]?.context_attention;
  return Object.keys(m?.groups ?? {}).sort().filter((g) => headRatio(m!, g) < 1);
}

/** Latency of 64 query heads over 8 query heads, both on 8 KV heads (4096-token prompts), of one group's model. */
function headRatio(m: OpModel, g: string): number {
  // ln latency = correction + ln SOL, and the SOL grows with the query heads.
  const at = (heads: number): number =>
    evalCorrection(m, m.groups[g]!, FEATURES.context_attention.features({ batch: 1, seq: 4096, heads, kv_heads: 8 })) + Math.log(heads);
  return Math.exp(at(64) - at(8));
}

/**
 * Groups whose rows timed a kernel serving does not run (unservedMxfp4, slowHopperMxfp4, fallbackFp8Gemms,
 * headBlindAttention), or not as serving runs it (hostBoundDecodeModules, for vLLM's tables only), recorded with the outliers by `perf:fit`
 * so the tables take those groups from the nearest sound source.
 */
export function findUnservedGroups(cal: SystemCalibration): ExcludedGroup[] {
  const out: ExcludedGroup[] = [];
  const r2 = (x: number): number => Number(x.toFixed(2));
  for (const source of Object.keys(cal.sources).sort()) {
    const ops = cal.sources[source]!;
    if (unservedMxfp4(ops.moe)) out.push({ source, op: 'moe', group: 'mxfp4', ratio: r2(mxfp4Ratio(ops.moe)!), reason: 'unserved kernel' });
    for (const group of fallbackFp8Gemms(cal, source)) out.push({ source, op: 'gemm', group, ratio: r2(fp8Ratio(ops.gemm, group)!), reason: 'fallback kernel' });
    for (const group of headBlindAttention(cal, source)) {
      out.push({ source, op: 'context_attention', group, ratio: r2(headRatio(ops.context_attention!, group)), reason: 'query-head-blind kernel' });
    }
    const slowMxfp4 = slowHopperMxfp4(cal, source);
    if (slowMxfp4) out.push({ source, op: 'moe', group: 'mxfp4', ratio: r2(slowMxfp4.ratio), reason: 'unserved kernel' });
    for (const [group, { ratio }] of hostBoundDecodeModules(cal, source)) {
      out.push({ source, op: 'mla', group, ratio: r2(ratio), reason: 'host-bound module', backends: HOST_BOUND_MODULE_SERVERS });
    }
  }
  return out;
}

/** An engine whose measured MXFP4 expert table its serving runs on Hopper do not pay (see slowHopperMxfp4). */
const HOPPER_MXFP4_ENGINE = 'vllm';

/**
 * vLLM's MXFP4 expert table on a GPU where it measured no native FP4 experts (Hopper) and another engine measured
 * MXFP4 experts: the other source and the median latency ratio of vLLM's table to it over the lattice. vLLM serves
 * MXFP4 experts on Hopper through OpenAI's triton_kernels (matmul_ogs); its table (kernel `vllm_mxfp4_moe`,
 * bf16 activations) runs 1.2-1.6x slower than TRT-LLM's measured MXFP4 kernel at decode sizes on H200, and its
 * gpt-oss runs on H200 match TRT-LLM's kernel (TPOT log bias +0.13 with its own table, +0.05 with TRT-LLM's), as
 * its H100 runs do, which are priced with TRT-LLM's kernel because vLLM measured none there. So the tables take
 * MXFP4 experts from the other engine, SGLang's too (it borrows vLLM's table and serves through the same kernels).
 */
export function slowHopperMxfp4(cal: SystemCalibration, source: string): { from: string; ratio: number } | undefined {
  const m = cal.sources[source]?.moe;
  if (!m?.groups.mxfp4 || m.groups.nvfp4 || !source.startsWith(`${HOPPER_MXFP4_ENGINE}/`)) return undefined;
  const from = otherEngineSources(cal, source, 'moe').find((k) => cal.sources[k]!.moe!.groups.mxfp4);
  if (!from) return undefined;
  const ratio = latticeRatio(m, m.groups.mxfp4, cal.sources[from]!.moe!, cal.sources[from]!.moe!.groups.mxfp4!);
  return ratio > 1 ? { from, ratio } : undefined;
}

/** The engine whose measured MLA decode module serving does not pay in full (see hostBoundDecodeModules). */
const HOST_BOUND_MODULE_ENGINE = 'vllm';
/** Engines priced with that module unless it is left out: vLLM, and SGLang, which measured no module and borrows vLLM's. */
const HOST_BOUND_MODULE_SERVERS = ['vllm', 'sglang'];

/**
 * Decode groups of vLLM's measured MLA module that another engine on the same GPU measured or composed (TRT-LLM),
 * with the median latency ratio of vLLM's module to that one over the lattice. vLLM's module benchmark is
 * host-bound at decode sizes (67-75 us per call at one head and batch 1 on B200 and GB200, where TRT-LLM's measured
 * module takes 46-50 us on GB200 and its attention kernel alone 13 us on B200), while serving replays the module
 * inside CUDA graphs: vLLM's Kimi-K2.5 runs (B200 nvfp4 and int4, H200 int4, GB200 disagg) match TRT-LLM's module,
 * not its own, and so do SGLang's DeepSeek-R1 runs that its source's published configuration says ran without
 * speculative decoding (docs/engine.md "Speculative decoding"). vLLM's tables and SGLang's, which measured no module
 * and borrow vLLM's, therefore take these groups from TRT-LLM.
 */
export function hostBoundDecodeModules(cal: SystemCalibration, source: string): Map<string, { from: string; ratio: number }> {
  const out = new Map<string, { from: string; ratio: number }>();
  const m = cal.sources[source]?.mla;
  if (!m || !source.startsWith(`${HOST_BOUND_MODULE_ENGINE}/`)) return out;
  const others = otherEngineSources(cal, source, 'mla');
  for (const g of Object.keys(m.groups).sort()) {
    if (!g.startsWith('generation|')) continue;
    const from = others.find((k) => cal.sources[k]!.mla!.groups[g]);
    if (!from) continue;
    const o = cal.sources[from]!.mla!;
    out.set(g, { from, ratio: latticeRatio(m, m.groups[g]!, o, o.groups[g]!) });
  }
  return out;
}

/**
 * Other engines' sources of an op on the same lattice as `source`'s model, in the order `source`'s engine borrows
 * an excluded group (resolvedModel), so the first that has a group is the one its tables then use.
 */
function otherEngineSources(cal: SystemCalibration, source: string, op: ModelOp): string[] {
  const engine = source.slice(0, source.indexOf('/'));
  const m = cal.sources[source]![op]!;
  return borrowOrder(cal, engine, source.slice(engine.length + 1), op)
    .filter((k) => !k.startsWith(`${engine}/`) && sameLattice(m, cal.sources[k]![op]!));
}

/** Sources in the order a (backend, version) borrows from: same backend by version distance, then the others. */
function borrowOrder(cal: SystemCalibration, backend: string, version: string, op: ModelOp): string[] {
  const keys = Object.keys(cal.sources).filter((k) => cal.sources[k]![op]).sort();
  const d = (k: string): number => (k.startsWith(`${backend}/`) ? 0 : 1e12) + versionDistance(k.slice(k.indexOf('/') + 1), version);
  return keys.sort((a, b) => d(a) - d(b) || (a < b ? -1 : 1));
}

const resolvedMemo = new WeakMap<SystemCalibration, Map<string, OpModel | undefined>>();

/**
 * The op model a (backend, version) uses: its plan source's groups, where a group is excluded (an outlier, or a
 * kernel serving does not run: the calibration's `excluded`) the same group of the nearest source that is not, and groups
 * (dtypes) it never measured from the nearest version of the same backend that did (MXFP4: else from another
 * engine on the same GPU).
 */
export function resolvedModel(cal: SystemCalibration, backend: string, version: string, op: ModelOp, primary: string | undefined, kinGpu?: SystemCalibration): OpModel | undefined {
  let memo = resolvedMemo.get(cal);
  if (!memo) resolvedMemo.set(cal, (memo = new Map()));
  const key = `${backend}|${version}|${op}|${primary ?? ''}|${kinGpu?.system ?? ''}`;
  if (memo.has(key)) return memo.get(key);
  const base = primary ? cal.sources[primary]?.[op] : undefined;
  let out = base;
  if (base) {
    const excluded = new Set((cal.excluded ?? []).filter((e) => e.op === op && (!e.backends || e.backends.includes(backend))).map((e) => `${e.source}|${e.group}`));
    const order = [primary!, ...borrowOrder(cal, backend, version, op).filter((k) => k !== primary)]
      .filter((k) => sameLattice(base, cal.sources[k]![op]!));
    const groups: Record<string, GroupModel> = {};
    // An excluded group nobody else measured: the same family (all fields but the first) of the nearest sound source.
    const kin = (g: string): GroupModel | undefined => {
      const t = tailOf(g);
      if (t === undefined) return undefined;
      for (const k of order) {
        const m = cal.sources[k]![op]!;
        const hit = Object.keys(m.groups).sort().find((h) => tailOf(h) === t && !excluded.has(`${k}|${h}`));
        if (hit) return m.groups[hit];
      }
      return undefined;
    };
    const names = [...new Set(order.flatMap((k) => Object.keys(cal.sources[k]![op]!.groups)))].sort();
    for (const g of names) {
      const own = base.groups[g];
      const ok = order.find((k) => cal.sources[k]![op]!.groups[g] && !excluded.has(`${k}|${g}`));
      if (own && !excluded.has(`${primary}|${g}`)) groups[g] = own;
      else if (own) groups[g] = ok ? cal.sources[ok]![op]!.groups[g]! : (kin(g) ?? (g === 'mxfp4' ? base.groups.nvfp4 : undefined) ?? own);
      else {
        // A dtype this version never measured: from another version of the same engine, else (FORMAT_BORROW
        // only) the same format measured by another engine on this GPU, which is closer than a different format
        // of this engine (e.g. MXFP4 experts priced as int4 weight-only, 3x slower on H100 vLLM). An MLA phase the
        // engine has no module for at all (TRT-LLM's prefill, where only its decode module is composed) comes from
        // another engine's measured module on this GPU, as the whole op did before.
        const same = order.find((k) => k.startsWith(`${backend}/`) && cal.sources[k]![op]!.groups[g] && !excluded.has(`${k}|${g}`));
        const phase = g.split('|')[0];
        const phaseUnmeasured = op === 'mla'
          && !order.some((k) => k.startsWith(`${backend}/`) && Object.keys(cal.sources[k]![op]!.groups).some((h) => h.split('|')[0] === phase));
        const other = FORMAT_BORROW.has(g) || phaseUnmeasured ? order.find((k) => cal.sources[k]![op]!.groups[g] && !excluded.has(`${k}|${g}`)) : undefined;
        const from = same ?? other;
        if (from) groups[g] = cal.sources[from]![op]!.groups[g]!;
        // Measured by a version of this engine but excluded there: priced as that version prices it.
        else if (order.some((k) => k.startsWith(`${backend}/`) && cal.sources[k]![op]!.groups[g])) {
          const sub = ok ? cal.sources[ok]![op]!.groups[g] : kin(g);
          if (sub) groups[g] = sub;
        }
      }
    }
    out = { ...base, groups: { ...groups, ...kinKernels(cal, backend, version, op, base, kinGpu) } };
    Object.assign(out.groups, sglangFp4Runner(cal, backend, op, out, kinGpu));
  }
  memo.set(key, out);
  return out;
}

/**
 * MoE kernels no source of this GPU timed that the same engine's nearest version timed on `kin`, a GPU of the same
 * architecture (SystemSpec.kernelsLike): TRT-LLM's low-latency FP4 kernel, which B300's and GB300's tables never
 * measured although the trtllm-gen MoE backend our deployments set runs it there as on B200 and GB200. Surfaces are
 * efficiencies over each GPU's own speed of light, so the group transfers as is, capped at this GPU's own kernel
 * (modelLatency): Blackwell Ultra's tables time the default kernel faster than Blackwell's at the same speed of
 * light, and on GB200, which timed both, the low-latency kernel is the faster one up to 4k tokens.
 */
function kinKernels(cal: SystemCalibration, backend: string, version: string, op: ModelOp, base: OpModel, kin?: SystemCalibration): Record<string, GroupModel> {
  const out: Record<string, GroupModel> = {};
  if (!kin || op !== 'moe') return out;
  const from = pickSource(kin, backend, version, op);
  if (!from?.startsWith(`${backend}/`)) return out;
  const theirs = resolvedModel(kin, backend, version, op, from);
  if (!theirs || !sameLattice(base, theirs)) return out;
  const timedHere = new Set(Object.values(cal.sources).flatMap((ops) => Object.keys(ops[op]?.groups ?? {})));
  for (const [g, gm] of Object.entries(theirs.groups)) {
    if (g.endsWith(`|${LOW_LATENCY}`) && !timedHere.has(g)) out[g] = { ...gm, kin: `${kin.system} ${from}` };
  }
  return out;
}

/**
 * SGLang's FlashInfer TRT-LLM-gen runner with NVFP4 experts calls the trtllm-gen fused MoE kernels TRT-LLM's own
 * TRTLLM MoE backend runs; SGLang's tables time NVFP4 on its CuteDSL kernel only. Where no SGLang source timed the
 * runner in NVFP4, it is priced as TRT-LLM's newest release times that kernel on this GPU (or on its kin GPU),
 * never slower than SGLang's own NVFP4 kernel (modelLatency caps a group marked `kin`). Routings beyond those TRT-LLM
 * timed it on (its `routes`: TRT-LLM then takes its default kernel, which SGLang does not run) keep the efficiency of
 * the nearest it timed (Qwen3.5's 512 experts, top-10: B300's NVFP4 runs read -1% at the median, 24% on CuteDSL).
 */
function sglangFp4Runner(cal: SystemCalibration, backend: string, op: ModelOp, base: OpModel, kin?: SystemCalibration): Record<string, GroupModel> {
  const g = `nvfp4|${FLASHINFER_TRTLLM}`;
  if (backend !== 'sglang' || op !== 'moe' || base.groups[g]) return {};
  const releases = Object.keys(cal.sources).filter((k) => k.startsWith('trtllm/') && cal.sources[k]![op]).map((k) => k.slice('trtllm/'.length));
  const newest = releases.sort(compareVersions).at(-1);
  // The trtllm-gen kernel as TRT-LLM prices it here: timed on this GPU or, for B300 / GB300, on its kin (kinKernels).
  const theirs = newest ? resolvedModel(cal, 'trtllm', newest, op, `trtllm/${newest}`, kin) : undefined;
  const gm = theirs?.groups[`nvfp4|${LOW_LATENCY}`];
  return theirs && gm && sameLattice(base, theirs) ? { [g]: { ...gm, kin: gm.kin ?? `${cal.system} trtllm/${newest}` } } : {};
}

/** Which groups of a resolved model come from another source than the primary one (for meta.yaml). */
export function borrowedGroups(cal: SystemCalibration, backend: string, version: string, op: ModelOp, primary: string | undefined): Record<string, string> {
  const m = resolvedModel(cal, backend, version, op, primary);
  const out: Record<string, string> = {};
  if (!m || !primary) return out;
  for (const [g, gm] of Object.entries(m.groups)) {
    if (cal.sources[primary]?.[op]?.groups[g] === gm) continue;
    for (const k of Object.keys(cal.sources).sort()) {
      const hit = Object.entries(cal.sources[k]![op]?.groups ?? {}).find(([, v]) => v === gm);
      if (hit) { out[g] = `${k.replace('/', ' ')}${hit[0] === g ? '' : ` (${hit[0]})`}`; break; }
    }
  }
  return out;
}

export function loadCalibration(system: string): SystemCalibration | undefined {
  if (!cache.has(system)) {
    const p = dataPath('calibration', `${system}.json`);
    cache.set(system, existsSync(p) ? parseCalibration(readFileSync(p, 'utf8')) : null);
  }
  return cache.get(system) ?? undefined;
}

/**
 * The calibrated source a (backend, version) uses: its own, else the nearest version of the same backend,
 * else the first other backend on the system (fixed order).
 */
export function pickSource(cal: SystemCalibration, backend: string, version: string, op?: ModelOp): string | undefined {
  const keys = Object.keys(cal.sources).filter((k) => !op || cal.sources[k]![op]);
  const own = `${backend}/${version}`;
  if (keys.includes(own)) return own;
  const same = keys.filter((k) => k.startsWith(`${backend}/`));
  const pool = same.length ? same : keys;
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of pool) {
    const v = k.slice(k.indexOf('/') + 1);
    const d = (same.length ? 0 : 1e12) + versionDistance(v, version);
    if (d < bestD) { bestD = d; best = k; }
  }
  return best;
}

/** Whether features `x` (from index `from` on) lie inside a group's lattice bounds (the model's when it has none). */
function withinBounds(m: OpModel, g: GroupModel, x: number[], from = 0): boolean {
  const lo = g.lo ?? m.lo, hi = g.hi ?? m.hi;
  return x.every((v, i) => i < from || (v >= lo[i]! - 1e-9 && v <= hi[i]! + 1e-9));
}

/** The group model for a row: exact group, else a fallback group with the first dtype field substituted. */
export function groupFor(op: ModelOp, m: OpModel, r: Row): GroupModel | undefined {
  const def = FEATURES[op];
  const g = def.group(r);
  // MoE up to the kernel switch: the low-latency kernel's group, on the routings it was measured on (routes) and
  // within its lattice bounds on every feature but the EP ranks.
  const lowKernel = (r.tokens as number) <= MOE_MIN_LATENCY_TOKENS || r.kernel === TRTLLM_GEN;
  const low = op === 'moe' && lowKernel ? m.groups[`${g}|${LOW_LATENCY}`] : undefined;
  const asked = !low?.kin || r.kernel === TRTLLM_GEN;
  if (low && asked && (!low.routes || withinRoutes(low.routes, r)) && withinBounds(m, low, def.features(r), 1)) return low;
  if (m.groups[g]) return m.groups[g];
  // A kernel the source did not time beside another: the dtype's group is that kernel (or the nearest measured).
  if (op === 'moe' && r.kernel === FLASHINFER_TRTLLM) {
    const { kernel: _kernel, ...plain } = r;
    return groupFor(op, m, plain);
  }
  const parts = g.split('|');
  // Try each dtype-like part against its fallbacks.
  for (let i = 0; i < parts.length; i++) {
    for (const alt of DTYPE_FALLBACK[parts[i]!] ?? []) {
      const cand = [...parts];
      cand[i] = alt;
      const k = cand.join('|');
      if (m.groups[k]) return m.groups[k];
    }
  }
  // Last resort: the group with most rows sharing the first field, else the largest group.
  const names = Object.keys(m.groups).sort();
  const first = names.filter((k) => k.split('|')[0] === parts[0]);
  const pool = first.length ? first : names;
  let best: string | undefined;
  for (const k of pool) if (!best || m.groups[k]!.rows > m.groups[best]!.rows) best = k;
  return best ? m.groups[best] : undefined;
}

/** Whether a sliding-window attention row's width is one its group measured (GroupModel.windows). */
export function measuredWindow(op: ModelOp, m: OpModel, r: Row): boolean {
  return groupFor(op, m, r)?.windows?.includes(r.window as number) ?? false;
}

/** The row with its table axes clamped into a group's measured box (the row itself when inside or no box). */
export function clampToBox(op: ModelOp, g: GroupModel, r: Row): Row {
  const box = g.box;
  if (!box) return r;
  const axes = OP_SPECS[op].axisCols;
  let out: Row | undefined;
  for (let i = 0; i < axes.length; i++) {
    const v = r[axes[i]!] as number;
    const c = Math.min(Math.max(v, box[2 * i]!), box[2 * i + 1]!);
    if (c !== v) (out ??= { ...r })[axes[i]!] = c;
  }
  return out ?? r;
}

/**
 * Model latency of a row: SOL x exp(correction); undefined when the op has no usable model. Outside the measured
 * box of its group the correction (efficiency) of the nearest measured shape applies to the row's own SOL.
 */
export function modelLatency(op: ModelOp, m: OpModel, r: Row, solMs: number): number | undefined {
  const g = groupFor(op, m, r);
  if (!g) return undefined;
  const x = clampToBox(op, g, r);
  const skew = op === 'moe' && r.distribution !== undefined ? routingCorrection(m, g, x, String(r.distribution)) : 0;
  if (skew === undefined) return undefined;
  const v = solMs * Math.exp(evalCorrection(m, g, FEATURES[op].features(x)) + skew);
  if (!g.kin) return v;
  // A kernel timed on the kin GPU only: no slower than this GPU's own kernel.
  const { kernel: _kernel, ...plain } = r;
  return Math.min(v, modelLatency(op, m, plain, solMs) ?? Infinity);
}

/** The routings an MoE group prices: its own rows' and those it has a routing model for. */
export function routingsOf(g: GroupModel): string[] {
  return [g.distribution ?? 'balanced', ...Object.keys(g.routing ?? {}).sort()];
}

/** ln(latency under `distribution` / the group's own model); undefined when not modelled. */
function routingCorrection(m: OpModel, g: GroupModel, r: Row, distribution: string): number | undefined {
  if (distribution === (g.distribution ?? 'balanced')) return 0;
  // A low-latency kernel group measured under one routing only takes its dtype's main group's routing model.
  const rm = g.routing?.[distribution] ?? m.groups[FEATURES.moe.group(r)]?.routing?.[distribution];
  if (!rm) return undefined;
  return evalCorrection({ ...m, lo: MOE_ROUTING.lo, hi: MOE_ROUTING.hi }, rm, MOE_ROUTING.features(r));
}
