import { loadSystem } from './src/inputs/systems.js';
import { referencePath } from './src/util/paths.js';
import { listRefTables, readRefTable, REF_FILE_OP, sourceKey } from './src/perf/reference.js';
import { loadCalibration, resolvedModel, modelLatency } from './src/perf/calibration.js';
import { planFor } from './src/perf/build.js';
import { OP_SPECS, modelSolOf } from './src/perf/tables.js';
import { peaksOf } from './src/perf/sol.js';
import { loadPerfSource } from './src/perf/index.js';
const [sysName, fw, ver, op, filt] = process.argv.slice(2);
const sys = loadSystem(sysName); const p = peaksOf(sys);
const cal = loadCalibration(sysName)!;
const plan = planFor(cal, fw as any, ver);
const m = resolvedModel(cal, fw, ver, op as any, (plan.sourceByOp as any)[op])!;
const t = listRefTables(referencePath('aic-silicon', 'kernels')).find((t) => t.system === (sysName === 'gb200_sxm' ? 'gb200' : sysName) && t.framework === fw && t.version === ver && REF_FILE_OP[t.file] === op)!;
const src = await loadPerfSource({ system: sys, backend: fw as any, version: ver });
const got = (await readRefTable(t))!;
const f = new Function('r', `return (${filt});`) as (r: any) => boolean;
const eM: number[] = [], eT: number[] = [];
for (const r of got.rows as any[]) {
  if (!f(r)) continue;
  const sol = OP_SPECS[op as 'gemm'].sol(p, r);
  const dm = Math.max(modelLatency(op as any, m, r, modelSolOf(OP_SPECS[op as 'gemm'], p, r)) ?? NaN, sol);
  const tb = op === 'gemm' ? src.gemm({ dtype: r.dtype, m: r.m, n: r.n, k: r.k }) : op === 'generation_attention' ? src.generationAttention({ batch: r.batch, kvLen: r.kv_len, heads: r.heads, kvHeads: r.kv_heads, headDim: r.head_dim, kvDtype: r.kv_dtype, window: r.window }) : src.moe({ dtype: r.dtype, tokens: r.tokens, hidden: r.hidden, inter: r.inter, topk: r.topk, experts: r.experts, moeTp: r.moe_tp, moeEp: r.moe_ep, distribution: r.distribution });
  eM.push(Math.abs(dm - r.latency_ms) / r.latency_ms * 100); eT.push(Math.abs(tb - r.latency_ms) / r.latency_ms * 100);
}
const q = (a: number[], x: number) => a.sort((u, v) => u - v)[Math.floor(x * (a.length - 1))]!.toFixed(1);
console.log(sysName, fw, ver, op, filt, 'n', eM.length, 'direct model med/p90', q(eM, 0.5), q(eM, 0.9), '| tables', q(eT, 0.5), q(eT, 0.9));
