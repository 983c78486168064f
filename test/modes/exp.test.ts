import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bestOverall, convertAicExperiments, registerExp, renderExpTable, toExperiment, type ExpRow } from '../../src/cli/commands/exp.js';
import YAML from 'yaml';
import { runInProcess } from './cli.js';
import { InputError } from '../../src/util/errors.js';

const run = (args: string[]) => runInProcess([registerExp], args);

function tmpFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'inferplan-exp-'));
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

const ONE = (extra = '') => `experiments:
  - name: small
    mode: agg
    model: Qwen/Qwen3-8B
    system: h200_sxm
    backend: vllm
    total_gpus: 2
    isl: 2000
    osl: 200
    ttft: 2000
    tpot: 50
    search: { tp: [1, 2], batch: [8, 32] }
${extra}`;

describe('exp: file handling', () => {
  it('maps a parsed entry to plain values (both = agg + disagg; search lists become restrictions)', () => {
    const e = toExperiment({ name: 'x', mode: 'both', model: 'm', system: 's', backend: 'sglang', total_gpus: 8, isl: 100, osl: 10, prefix: 0, ttft: 1, tpot: 2, top_n: 3, search: { tp: [2], moe_ep: [4] } });
    expect(toExperiment({ name: 'y', mode: 'disagg', model: 'm', system: 's', decode_system: 'd', backend: 'vllm', total_gpus: 8, isl: 100, osl: 10, prefix: 0, ttft: 1, tpot: 2, top_n: 5 })).toMatchObject({ modes: ['disagg'], decodeSystem: 'd', restrict: undefined });
    expect(e.modes).toEqual(['agg', 'disagg']);
    expect(e.inputs).toMatchObject({ hfId: 'm', system: 's', backend: 'sglang', isl: 100, osl: 10, ttft: 1, tpot: 2 });
    expect(e.restrict).toMatchObject({ tp: [2], moeEp: [4] });
    expect(e.topN).toBe(3);
  });

  it('an unknown key exits 2 naming the key and its line', async () => {
    const p = tmpFile('bad.yaml', ONE('    tp_size: 4\n'));
    const r = await run(['exp', '--yaml', p]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${p}:13: unknown key "experiments.0.tp_size"`);
  });

  it('a wrong type exits 2 naming the key and its line', async () => {
    const p = tmpFile('bad.yaml', ONE().replace('total_gpus: 2', 'total_gpus: two'));
    const r = await run(['exp', '--yaml', p]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`${p}:7: experiments\\.0\\.total_gpus: `));
  });

  it('a duplicate experiment name exits 2', async () => {
    const r = await run(['exp', '--yaml', tmpFile('dup.yaml', ONE() + ONE().replace('experiments:\n', ''))]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/duplicate experiment name "small"/);
  });

  it('a bad system exits 2 naming the experiment; a missing file exits 2', async () => {
    const r = await run(['exp', '--yaml', tmpFile('x.yaml', ONE().replace('system: h200_sxm', 'system: h900'))]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/experiment "small": unknown system "h900"/);
    expect((await run(['exp', '--yaml', '/nonexistent/file.yaml'])).code).toBe(2);
    expect((await run(['exp'])).code).toBe(2);
  });

  it('converts an aiconfigurator experiment file (exps order, serving_mode, *_name keys, config lists)', () => {
    const doc = {
      exps: ['b', 'a'],
      a: { mode: 'patch', serving_mode: 'agg', model_name: 'QWEN3_32B', total_gpus: 8, system_name: 'h200_sxm', profiles: [], config: { nextn: 1, worker_config: { tp_list: [1, 2], pp_list: [1], gemm_quant_mode: 'fp8' } } },
      b: {
        serving_mode: 'disagg', model_path: 'Qwen/Qwen3-32B', total_gpus: 16, system_name: 'h200_sxm', decode_system_name: 'b200_sxm',
        backend_name: 'vllm', isl: 4000, osl: 500, ttft: 600, tpot: 16, enable_wideep: false,
        config: { prefill_worker_config: { tp_list: [4] }, decode_worker_config: { tp_list: [2, 4] } },
      },
    };
    const c = convertAicExperiments(doc, 'f.yaml')!;
    expect(c.experiments.map((e) => e.name)).toEqual(['b', 'a']);
    expect(c.experiments[0]).toMatchObject({ mode: 'disagg', model: 'Qwen/Qwen3-32B', system: 'h200_sxm', decode_system: 'b200_sxm', backend: 'vllm', search: { tp: [2, 4] } });
    // aiconfigurator's defaults: trtllm and the `cli default` workload/SLA.
    expect(c.experiments[1]).toMatchObject({ model: 'Qwen/Qwen3-32B', backend: 'trtllm', isl: 4000, osl: 1000, ttft: 2000, tpot: 30, search: { tp: [1, 2], pp: [1] }, weight_dtype: 'fp8' });
    expect(c.experiments[1]).toMatchObject({ nextn: 1 });
    expect(c.ignored).toEqual(['b.enable_wideep']);
    expect(convertAicExperiments({ experiments: [] }, 'f')).toBeNull();
    expect(convertAicExperiments({ serving_mode: 'agg' }, 'f')).toBeNull();
  });

  it('takes aiconfigurator\'s nextn and its zero-padded nextn_accept_rates (in config: or flat)', () => {
    const aic = (x: Record<string, unknown>) => convertAicExperiments({ a: { serving_mode: 'agg', model_path: 'deepseek-ai/DeepSeek-R1', ...x } }, 'f')!;
    const padded = aic({ config: { nextn: 2, nextn_accept_rates: [0.85, 0.6, 0, 0, 0] } });
    expect(padded.experiments[0]).toMatchObject({ nextn: 2, nextn_accept_rates: [0.85, 0.6] });
    expect(padded.ignored).toEqual([]);
    expect(aic({ nextn_accept_rates: [0.8, 0, 0, 0, 0] }).experiments[0]).toMatchObject({ nextn_accept_rates: [0.8] });
    const off = aic({ config: { nextn: 0, nextn_accept_rates: [0.85, 0, 0, 0, 0] } }).experiments[0]!;
    expect(off.nextn).toBe(0);
    expect(off.nextn_accept_rates).toBeUndefined();
    // A zero inside the positions that run is passed on, so the schema names it.
    expect(aic({ config: { nextn: 2, nextn_accept_rates: [0.85, 0] } }).experiments[0]).toMatchObject({ nextn_accept_rates: [0.85, 0] });
  });

  it('converts the flat (v0.7+) aiconfigurator format', () => {
    const c = convertAicExperiments(
      {
        exp_h200_b200: {
          serving_mode: 'disagg', total_gpus: 16, isl: 4000, osl: 500, ttft: 300, tpot: 50,
          prefill_model_path: 'Qwen/Qwen3-32B-FP8', prefill_system_name: 'h200_sxm', prefill_backend_name: 'trtllm',
          decode_model_path: 'Qwen/Qwen3-32B-FP8', decode_system_name: 'b200_sxm', decode_backend_name: 'trtllm',
          prefill_tp_candidates: [1, 2], decode_tp_candidates: [4], prefill_max_batch_size: 1,
        },
      },
      'f.yaml',
    )!;
    expect(c.experiments[0]).toMatchObject({
      name: 'exp_h200_b200', mode: 'disagg', model: 'Qwen/Qwen3-32B-FP8', system: 'h200_sxm', decode_system: 'b200_sxm',
      backend: 'trtllm', search: { tp: [1, 2, 4] },
    });
    expect(c.ignored).toEqual(['exp_h200_b200.prefill_max_batch_size']);
  });

  it('maps aiconfigurator quant modes to our dtypes, and refuses what it cannot plan', () => {
    const base = { serving_mode: 'disagg', total_gpus: 8, prefill_model_path: 'Qwen/Qwen3-32B', prefill_system_name: 'h200_sxm' };
    const conv = (x: Record<string, unknown>) => convertAicExperiments({ e: { ...base, ...x } }, 'f.yaml')!;
    const flat = conv({ prefill_gemm_quant_mode: 'fp8_block', decode_gemm_quant_mode: 'fp8_block', prefill_kvcache_quant_mode: 'fp8', decode_kvcache_quant_mode: 'fp8', prefill_fmha_quant_mode: 'fp8' });
    expect(flat.experiments[0]).toMatchObject({ weight_dtype: 'fp8_block', kv_cache_dtype: 'fp8' });
    expect(flat.ignored).toEqual([]);
    const v1 = convertAicExperiments({ a: { serving_mode: 'agg', model_name: 'QWEN3_32B', total_gpus: 8, system_name: 'h200_sxm', config: { worker_config: { gemm_quant_mode: 'nvfp4', moe_quant_mode: 'nvfp4', kvcache_quant_mode: 'bfloat16' } } } }, 'f.yaml')!;
    expect(v1.experiments[0]).toMatchObject({ weight_dtype: 'nvfp4', kv_cache_dtype: 'bfloat16' });
    expect(conv({ gemm_quant_mode: 'fp8_static' }).experiments[0]).toMatchObject({ weight_dtype: 'fp8' });
    // gpt-oss: bfloat16 GEMMs with mxfp4 experts cannot be one override: the checkpoint's formats, reported.
    const mixed = conv({ gemm_quant_mode: 'bfloat16', moe_quant_mode: 'w4a16_mxfp4' });
    expect(mixed.experiments[0]!.weight_dtype).toBeUndefined();
    expect(mixed.ignored[0]).toMatch(/^e\.moe_quant_mode \(mxfp4 experts with bfloat16 GEMMs/);
    expect(() => conv({ gemm_quant_mode: 'sq' })).toThrow(/e\.gemm_quant_mode "sq" has no counterpart here \(accepted: bfloat16/);
    expect(() => conv({ kvcache_quant_mode: 'int8' })).toThrow(InputError);
    expect(() => conv({ prefill_gemm_quant_mode: 'fp8', decode_gemm_quant_mode: 'nvfp4' })).toThrow(/differ; an experiment here has one weight dtype/);
  });
});

const row = (name: string, t?: number): ExpRow =>
  t === undefined
    ? { name, requested: 'agg', model: 'm', system: 's', backend: 'vllm 1', totalGpus: 8, status: 'none', verdict: 'tpot removed 12 candidates' }
    : { name, requested: 'agg', model: 'm', system: 's', backend: 'vllm 1', totalGpus: 8, status: 'ok', bestMode: 'agg', parallel: 'tp2pp1', gpusUsed: 8, tokPerSPerGpu: t, tokPerSPerUser: 50, ttftMs: 300, tpotMs: 20, verdict: '' };

describe('exp: side by side', () => {
  it('picks the best overall among experiments that met their SLA', () => {
    const rows = [row('a', 100), row('b'), row('c', 250), row('d', 90)];
    expect(bestOverall(rows)?.name).toBe('c');
    const text = renderExpTable(rows);
    expect(text).toMatch(/best overall: c \(agg tp2pp1, 250\.0 tok\/s\/gpu/);
    expect(text).toMatch(/b: tpot removed 12 candidates/);
    expect(bestOverall([row('x')])).toBeUndefined();
  });

  it('runs every experiment and prints one row each (agg, restricted search)', async () => {
    const p = tmpFile('two.yaml', ONE() + ONE().replace('experiments:\n', '').replace('name: small', 'name: tp1only').replace('tp: [1, 2]', 'tp: [1]'));
    const r = await run(['exp', '--yaml', p, '--json', '--top-n', '2']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.experiments[0].result.inputs.topN).toBe(2);
    expect(doc.rows.map((x: ExpRow) => x.name)).toEqual(['small', 'tp1only']);
    expect(doc.rows[1].parallel).toBe('tp1pp1');
    expect(doc.rows.every((x: ExpRow) => x.status === 'ok')).toBe(true);
    expect(['small', 'tp1only']).toContain(doc.best);
    const best = doc.rows.find((x: ExpRow) => x.name === doc.best);
    for (const x of doc.rows) expect(best.tokPerSPerGpu).toBeGreaterThanOrEqual(x.tokPerSPerGpu);
  });

  it('runs disagg with decode workers on another system (heterogeneous)', async () => {
    const hetero = ONE()
      .replace('mode: agg', 'mode: disagg\n    decode_system: h100_sxm')
      .replace('search: { tp: [1, 2], batch: [8, 32] }', 'search: { tp: [1] }');
    const r = await run(['exp', '--yaml', tmpFile('hetero.yaml', hetero), '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.rows[0]).toMatchObject({ system: 'h200_sxm/h100_sxm', bestMode: 'disagg', parallel: 'p:tp1pp1 d:tp1pp1' });
    expect(doc.experiments[0].result.inputs.decodeSystem).toBe('h100_sxm');
  });

  it('exits 3 when an experiment has nothing that meets its SLA, still printing the others', async () => {
    const p = tmpFile('sla.yaml', ONE() + ONE().replace('experiments:\n', '').replace('name: small', 'name: impossible').replace('tpot: 50', 'tpot: 0.5'));
    const r = await run(['exp', '--yaml', p]);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/^small\s+agg/m);
    expect(r.stdout).toMatch(/^impossible\s+agg.*none/m);
    expect(r.stdout).toMatch(/best overall: small/);
  });

  it('runs the images an experiment names per role, unless --image overrides them', async () => {
    const img = 'registry.example.com/dynamo/vllm-runtime:prefill-build';
    const yaml = ONE()
      .replace('mode: agg', 'mode: disagg')
      .replace('backend: vllm', 'backend: vllm\n    backend_version: 0.19.0')
      .replace('search: { tp: [1, 2], batch: [8, 32] }', `search: { tp: [1] }\n    image: { prefill: ${img} }`);
    const file = tmpFile('images.yaml', yaml);
    const images = async (extra: string[]) => {
      const out = mkdtempSync(join(tmpdir(), 'inferplan-exp-out-'));
      const r = await run(['exp', '--yaml', file, '--save-dir', out, '--dynamo-version', '1.2', '--json', ...extra]);
      expect(r.code, r.stderr).toBe(0);
      const slug = readdirSync(join(out, 'small'))[0]!;
      const text = readFileSync(join(out, 'small', slug, 'disagg', 'top1', 'k8s_deploy.yaml'), 'utf8');
      const dgd = YAML.parse(text.split(/^---$/m).pop()!);
      expect(dgd.apiVersion).toBe('nvidia.com/v1beta1');
      return Object.fromEntries(dgd.spec.components.map((c: any) => [c.type, c.podTemplate.spec.containers[0].image]));
    };
    expect(await images([])).toEqual({ frontend: 'nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.1', prefill: img, decode: 'nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.1' });
    expect(await images(['--image', 'mine/all:1'])).toEqual({ frontend: 'mine/all:1', prefill: 'mine/all:1', decode: 'mine/all:1' });
  });

  it("with --save-dir writes each experiment's results dir, and its exp_config.yaml runs unchanged", async () => {
    const p = tmpFile('one.yaml', ONE());
    const out = mkdtempSync(join(tmpdir(), 'inferplan-exp-out-'));
    const first = await run(['exp', '--yaml', p, '--save-dir', out, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const slug = readdirSync(join(out, 'small'));
    expect(slug).toHaveLength(1);
    const cfg = join(out, 'small', slug[0]!, 'agg', 'exp_config.yaml');
    expect(readFileSync(cfg, 'utf8')).toMatch(/model: Qwen\/Qwen3-8B/);
    const again = await run(['exp', '--yaml', cfg, '--json']);
    expect(again.code, again.stderr).toBe(0);
    const a = JSON.parse(first.stdout).rows[0];
    const b = JSON.parse(again.stdout).rows[0];
    // Same inputs; the saved file carries no search restriction, so the rerun can only do as well or better.
    expect(b.tokPerSPerGpu).toBeGreaterThanOrEqual(a.tokPerSPerGpu * 0.999);
    expect(b.model).toBe(a.model);
  });
});
