// Planner profiles: the files have the planner loader's keys, shapes and units (checked against fixtures written
// from the Dynamo notes, not from our output), the points repeat the engine's estimates, and the curves rise
// where the physics says they must.
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadEngineContext } from '../../src/cli/context.js';
import { readCommonInputs } from '../../src/cli/options.js';
import { runSearch } from '../../src/search/index.js';
import { decodeItlMs, estimateDisagg, isRefusal, type DisaggEstimate, type EngineContext } from '../../src/engine/index.js';
import { buildPlannerProfile, profileJsonFiles, profileNpzFiles, type PlannerProfile } from '../../src/output/planner-profile.js';
import { npyBytes, npzBytes } from '../../src/output/planner-npz.js';

const FIXTURES = new URL('./planner-fixtures/', import.meta.url);

/**
 * What the planner's and the mocker's JSON loaders need (dynamo-planner-handoff.md, A2): exactly these keys,
 * equal-length 1-D number arrays, max_kv_tokens a plain integer, KV usage a fraction, times in ms.
 */
function loaderProblems(prefill: Record<string, unknown>, decode: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const arrays = (o: Record<string, unknown>, keys: string[]) => {
    const lengths = new Set<number>();
    for (const k of keys) {
      const v = o[k];
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) problems.push(`${k} is not a 1-D number array`);
      else lengths.add(v.length);
    }
    if (lengths.size > 1) problems.push(`${keys.join('/')} differ in length`);
  };
  const prefillKeys = ['prefill_isl', 'prefill_ttft', 'prefill_thpt_per_gpu'];
  const decodeKeys = ['x_kv_usage', 'y_context_length', 'z_itl', 'z_thpt_per_gpu'];
  if (Object.keys(prefill).sort().join() !== [...prefillKeys].sort().join()) problems.push(`prefill keys ${Object.keys(prefill)}`);
  if (Object.keys(decode).sort().join() !== [...decodeKeys, 'max_kv_tokens'].sort().join()) problems.push(`decode keys ${Object.keys(decode)}`);
  arrays(prefill, prefillKeys);
  arrays(decode, decodeKeys);
  if (!Number.isInteger(decode.max_kv_tokens)) problems.push('max_kv_tokens is not a plain integer');
  const usage = decode.x_kv_usage as number[];
  if (Array.isArray(usage) && usage.some((x) => x < 0 || x > 1)) problems.push('x_kv_usage outside [0, 1]');
  if (Array.isArray(prefill.prefill_isl) && (prefill.prefill_isl as number[]).length < 3) problems.push('fewer than 3 prefill points');
  return problems;
}

/** An independent .npz reader: walk the zip's local headers, inflate or copy each entry, parse the .npy header. */
function readNpz(buf: Buffer): Record<string, { shape: number[]; descr: string; data: number[] }> {
  const out: Record<string, { shape: number[]; descr: string; data: number[] }> = {};
  let at = 0;
  while (buf.readUInt32LE(at) === 0x04034b50) {
    const method = buf.readUInt16LE(at + 8);
    const size = buf.readUInt32LE(at + 18);
    const nameLen = buf.readUInt16LE(at + 26);
    const extraLen = buf.readUInt16LE(at + 28);
    const name = buf.subarray(at + 30, at + 30 + nameLen).toString('utf8');
    const start = at + 30 + nameLen + extraLen;
    const raw = buf.subarray(start, start + size);
    const npy = method === 8 ? inflateRawSync(raw) : raw;
    expect(npy.subarray(0, 6).toString('latin1')).toBe('\x93NUMPY');
    const headerLen = npy.readUInt16LE(8);
    const header = npy.subarray(10, 10 + headerLen).toString('latin1');
    expect((10 + headerLen) % 64).toBe(0);
    const descr = /'descr': '([^']+)'/.exec(header)![1]!;
    const shape = /'shape': \(([^)]*)\)/.exec(header)![1]!.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
    const body = npy.subarray(10 + headerLen);
    const data: number[] = [];
    for (let i = 0; i < body.length; i += 8) data.push(descr === '<i8' ? Number(body.readBigInt64LE(i)) : body.readDoubleLE(i));
    out[name.replace(/\.npy$/, '')] = { shape, descr, data };
    at = start + size;
  }
  return out;
}

interface Case {
  label: string;
  ctx: EngineContext;
  est: DisaggEstimate;
  profile: PlannerProfile;
}

/** The winning disagg layout of a real search, and its profile. */
async function caseOf(hfId: string, backend: string, isl: number, osl: number, ttft: number, tpot: number, totalGpus = 8): Promise<Case> {
  const ctx = await loadEngineContext(readCommonInputs({ hfId, system: 'h200_sxm', backend, isl, osl, ttft, tpot }));
  const result = runSearch(ctx, { totalGpus, topN: 1, modes: ['disagg'], sla: { ttftMs: ttft, tpotMs: tpot } });
  const est = result.disagg!.top[0]!.estimate as DisaggEstimate;
  const profile = buildPlannerProfile(ctx, est.config, { planRunning: est.decodeRunning });
  if (typeof profile === 'string') throw new Error(profile);
  return { label: `${hfId} ${backend} isl${isl} osl${osl}`, ctx, est, profile };
}

let cases: Case[] = [];
beforeAll(async () => {
  cases = [
    await caseOf('Qwen/Qwen3-32B', 'vllm', 4000, 500, 600, 16.67),
    await caseOf('Qwen/Qwen3-32B', 'trtllm', 2000, 1000, 1000, 30),
    await caseOf('Qwen/Qwen3-30B-A3B', 'sglang', 3000, 300, 800, 20),
  ];
}, 60_000);

describe('profile files match the planner loader', () => {
  it('the fixtures written from the notes pass the loader check, and a broken one fails it', () => {
    const prefill = JSON.parse(readFileSync(new URL('prefill_raw_data.json', FIXTURES), 'utf8'));
    const decode = JSON.parse(readFileSync(new URL('decode_raw_data.json', FIXTURES), 'utf8'));
    expect(loaderProblems(prefill, decode)).toEqual([]);
    expect(loaderProblems(prefill, { ...decode, max_kv_tokens: [decode.max_kv_tokens] })).toContain('max_kv_tokens is not a plain integer');
    expect(loaderProblems({ ...prefill, prefill_ttft: [1, 2] }, decode)).toContain('prefill_isl/prefill_ttft/prefill_thpt_per_gpu differ in length');
  });

  it('our JSON files have the fixtures\' keys, types and units', () => {
    const prefillFixture = JSON.parse(readFileSync(new URL('prefill_raw_data.json', FIXTURES), 'utf8'));
    for (const c of cases) {
      const files = profileJsonFiles(c.profile);
      const prefill = JSON.parse(files['prefill_raw_data.json']);
      const decode = JSON.parse(files['decode_raw_data.json']);
      expect(loaderProblems(prefill, decode), c.label).toEqual([]);
      expect(Object.keys(prefill).sort()).toEqual(Object.keys(prefillFixture).sort());
      // tokens/s/GPU by the profiler's formula: isl / ttft_ms x 1000 / GPUs x attention-DP ranks.
      const p = c.est.config.prefill;
      prefill.prefill_isl.forEach((isl: number, i: number) => {
        expect(prefill.prefill_thpt_per_gpu[i]).toBeCloseTo(((isl / prefill.prefill_ttft[i]) * 1000 * p.dp) / (p.tp * p.pp * p.dp), 0);
      });
      // KV usage = context x running / capacity, with a whole number of running sequences.
      decode.x_kv_usage.forEach((x: number, i: number) => {
        const running = (x * decode.max_kv_tokens) / decode.y_context_length[i];
        expect(Math.abs(running - Math.round(running))).toBeLessThan(0.01 * Math.max(1, running));
      });
      expect(Math.max(...prefill.prefill_isl)).toBeLessThanOrEqual(c.profile.contextLimit - 512);
    }
  });

  it('the NPZ files hold the same arrays under the profiler\'s and the mocker\'s keys', () => {
    const c = cases[0]!;
    const files = Object.fromEntries(profileNpzFiles(c.profile).map((f) => [f.path, readNpz(f.content)]));
    const prefill = files['selected_prefill_interpolation/raw_data.npz']!;
    expect(Object.keys(prefill).sort()).toEqual(['prefill_isl', 'prefill_thpt_per_gpu', 'prefill_ttft']);
    expect(prefill.prefill_ttft!.data).toEqual(c.profile.prefill.prefill_ttft);
    const decode = files['selected_decode_interpolation/raw_data.npz']!;
    expect(decode.max_kv_tokens).toEqual({ shape: [1], descr: '<i8', data: [c.profile.decode.max_kv_tokens] });
    expect(decode.z_itl!.data).toEqual(c.profile.decode.z_itl);
    const mocker = files['mocker_perf_data.npz']!;
    expect(Object.keys(mocker).sort()).toEqual(['decode_active_kv_tokens', 'decode_context_length', 'decode_itl', 'prefill_isl', 'prefill_ttft_ms']);
    expect(mocker.decode_itl!.shape).toEqual([mocker.decode_active_kv_tokens!.data.length, mocker.decode_context_length!.data.length]);
  });

  it('npy headers are what numpy writes (format 1.0, little-endian, C order)', () => {
    const bytes = npyBytes({ data: [1, 2, 3], shape: [3], dtype: 'float64' });
    expect(bytes.subarray(10, 10 + bytes.readUInt16LE(8)).toString('latin1')).toMatch(/^\{'descr': '<f8', 'fortran_order': False, 'shape': \(3,\), \} *\n$/);
    expect(() => npzBytes({ bad: { data: [1, 2], shape: [3], dtype: 'float64' } })).toThrow(/shape/);
  });
});

describe('profiles come from the engine', () => {
  it('the prefill point at the plan\'s input length is the estimate of one request on the plan\'s layout', () => {
    for (const c of cases) {
      const i = c.profile.prefill.prefill_isl.indexOf(c.ctx.workload.isl);
      expect(i, c.label).toBeGreaterThanOrEqual(0);
      const single = estimateDisagg(c.ctx, c.est.config, { concurrency: 1 });
      if (isRefusal(single)) throw new Error(single.reason);
      expect(c.profile.prefill.prefill_ttft[i]).toBeCloseTo(single.metrics.ttftMs, 2);
    }
  });

  it('the decode point at the plan\'s context and load is the estimate\'s TPOT', () => {
    for (const c of cases) {
      const context = c.ctx.workload.isl + Math.floor(c.ctx.workload.osl / 2);
      const usage = (context * c.est.decodeRunning!) / c.profile.decode.max_kv_tokens;
      const d = c.profile.decode;
      const i = d.y_context_length.findIndex((y, j) => y === context && Math.abs(d.x_kv_usage[j]! - usage) < 1e-6);
      expect(i, c.label).toBeGreaterThanOrEqual(0);
      expect(d.z_itl[i]).toBeCloseTo(c.est.metrics.tpotMs, 2);
      // And the KV capacity is the estimate's decode memory picture.
      expect(d.max_kv_tokens).toBe(c.est.memory.decode.kvTokens);
    }
  });

  it('TTFT rises with input length; ITL rises with KV usage at each context length', () => {
    for (const c of cases) {
      const t = c.profile.prefill.prefill_ttft;
      for (let i = 1; i < t.length; i++) expect(t[i]!, `${c.label} isl ${c.profile.prefill.prefill_isl[i]}`).toBeGreaterThanOrEqual(t[i - 1]!);
      const d = c.profile.decode;
      for (const context of new Set(d.y_context_length)) {
        const pts = d.x_kv_usage.map((x, i) => ({ x, itl: d.z_itl[i]!, y: d.y_context_length[i] })).filter((p) => p.y === context).sort((a, b) => a.x - b.x);
        for (let i = 1; i < pts.length; i++) expect(pts[i]!.itl, `${c.label} context ${context}`).toBeGreaterThanOrEqual(pts[i - 1]!.itl);
      }
      // The mocker's grid: more active KV at one context means more sequences, never a faster step.
      const m = c.profile.mocker;
      for (let j = 0; j < m.decode_context_length.length; j++) {
        for (let i = 1; i < m.decode_active_kv_tokens.length; i++) expect(m.decode_itl[i]![j]!).toBeGreaterThanOrEqual(m.decode_itl[i - 1]![j]!);
      }
    }
  });

  it('a layout whose workers cannot hold the sequences gets no profile, with the engine\'s reason', () => {
    const c = cases[0]!;
    const tiny = { ...c.ctx, system: { ...c.ctx.system, gpu: { ...c.ctx.system.gpu, memGiB: 20 } } };
    const out = buildPlannerProfile(tiny, c.est.config, {});
    expect(typeof out).toBe('string');
    expect(out).toMatch(/^(decode|prefill): .*cannot hold one sequence/);
    expect(decodeItlMs(c.ctx, c.est.config.decode, 1, 1000)).toBeGreaterThan(0);
  });
});
