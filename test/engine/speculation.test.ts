// Speculative decoding as an explicit input: acceptance per draft position, defaults from published figures,
// refusals with reasons, memory and step pricing, rows that state it (and never provenance that implies it), and
// the CLI flags.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { estimateAgg, estimateDisagg, isRefusal } from '../../src/engine/index.js';
import { stepCost } from '../../src/engine/ops.js';
import { estimateRow, parseCsv, type RowInputs } from '../../src/engine/rows.js';
import {
  autoDepths, decodeTpotMs, defaultAcceptance, depthContexts, parseAcceptRates, resolveSpeculation, speculativeStepParts, tokensPerStep,
} from '../../src/engine/speculation.js';
import type { AggEstimate, EngineContext, MemoryPicture } from '../../src/engine/types.js';
import { InputError } from '../../src/util/errors.js';
import { registerEstimate } from '../../src/cli/commands/estimate.js';
import { registerDefault } from '../../src/cli/commands/default.js';
import { readExperiments } from '../../src/cli/commands/exp.js';
import { runInProcess } from '../modes/cli.js';
import { testCtx } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'inferplan-speculation-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const r1 = testCtx('deepseek-ai/DeepSeek-R1', { system: 'b200_sxm', backend: 'trtllm', version: '1.2.0rc5', workload: { isl: 1024, osl: 1024 } });
const llama = testCtx('meta-llama/Llama-3.1-70B');
const L8 = { tp: 8, pp: 1, dp: 1, moeTp: 1, moeEp: 8 };
const withSpec = (ctx: EngineContext, nextn: number, acceptRates?: number[]): EngineContext => ({ ...ctx, speculation: resolveSpeculation(ctx.model, { nextn, acceptRates }) });

describe('tokens per step from the acceptance of each draft position', () => {
  it('is 1 + a1 + a1 a2 + ...: a position counts only when the ones before it were accepted', () => {
    expect(tokensPerStep([])).toBe(1);
    expect(tokensPerStep([0.85])).toBeCloseTo(1.85, 12);
    expect(tokensPerStep([0.85, 0.5, 0.4])).toBeCloseTo(1 + 0.85 + 0.425 + 0.17, 12);
    // A rejected first position stops the chain: later rates do not count.
    expect(tokensPerStep([0.1, 1, 1])).toBeCloseTo(1.3, 12);
  });
  it('reads rate lists as the flag and the row column write them', () => {
    expect(parseAcceptRates('0.85,0.5,0.4')).toEqual([0.85, 0.5, 0.4]);
    expect(parseAcceptRates('[0.9; 0.7]')).toEqual([0.9, 0.7]);
    expect(parseAcceptRates(' ')).toEqual([]);
    expect(parseAcceptRates('0.9,1.2')).toBeUndefined();
    expect(parseAcceptRates('0.9,abc')).toBeUndefined();
    expect(parseAcceptRates('0,0.5')).toBeUndefined();
  });
});

describe('what a request resolves to', () => {
  it('MTP checkpoints default to the published DeepSeek figures, marked assumed, with their source', () => {
    const s = resolveSpeculation(r1.model, { nextn: 3 })!;
    expect(s).toMatchObject({ method: 'mtp', draft: 3, acceptRates: [0.85, 0.5, 0.4], assumed: true });
    expect(s.source).toMatch(/DeepSeek-V3 report/);
    expect(tokensPerStep(s.acceptRates)).toBeCloseTo(2.445, 9);
    // Deeper than the published positions: the last one repeats.
    expect(defaultAcceptance(r1.model, 'mtp', 5).rates).toEqual([0.85, 0.5, 0.4, 0.4, 0.4]);
  });
  it('given rates are used as given (the first nextn of them), not assumed', () => {
    expect(resolveSpeculation(r1.model, { nextn: 2, acceptRates: [0.9, 0.8, 0.7] })).toMatchObject({ draft: 2, acceptRates: [0.9, 0.8], assumed: false, source: 'given' });
    expect(resolveSpeculation(r1.model, { acceptRates: [0.9, 0.8] })?.draft).toBe(2);
  });
  it('nextn 0 and --speculative off are no speculation', () => {
    expect(resolveSpeculation(r1.model, { nextn: 0 })).toBeUndefined();
    expect(resolveSpeculation(r1.model, { method: 'off' })).toBeUndefined();
  });
  it('refuses what the model cannot run, naming why (exit 2)', () => {
    const plain = () => resolveSpeculation(llama.model, { nextn: 2 });
    expect(plain).toThrow(InputError);
    expect(plain).toThrow(/ships no MTP layers.*no EAGLE-3 draft is known/);
    expect(() => resolveSpeculation(llama.model, { nextn: 2, method: 'eagle3' })).toThrow(/no EAGLE-3 draft is known for meta-llama\/Llama-3.1-70B/);
    expect(() => resolveSpeculation(r1.model, { nextn: 3, acceptRates: [0.9] })).toThrow(/1 rate\(s\) for --nextn 3/);
    expect(() => resolveSpeculation(r1.model, { nextn: 2, method: 'off' })).toThrow(/--speculative is off/);
  });
  it('a checkpoint with a known EAGLE-3 draft speculates with it', () => {
    const l33 = testCtx('meta-llama/Llama-3.3-70B-Instruct').model;
    expect(resolveSpeculation(l33, { nextn: 2 })).toMatchObject({ method: 'eagle3', draft: 2, draftModel: 'yuhuili/EAGLE3-LLaMA3.3-Instruct-70B', assumed: true });
  });
  it('auto searches depths 0-3 for MTP checkpoints and only 0 for the others', () => {
    expect(autoDepths(r1.model, { nextn: 'auto' })).toEqual([0, 1, 2, 3]);
    expect(autoDepths(r1.model, { nextn: 'auto', acceptRates: [0.9, 0.8] })).toEqual([0, 1, 2]);
    expect(autoDepths(llama.model, { nextn: 'auto' })).toEqual([0]);
    expect(depthContexts(r1, { nextn: 'auto' }).map((c) => c.speculation?.draft ?? 0)).toEqual([0, 1, 2, 3]);
  });
});

describe('pricing', () => {
  it('a decode step verifies running x (1 + N) tokens and runs the draft N times; TPOT divides it over the tokens it emits', () => {
    const spec = withSpec(r1, 3);
    const plain = speculativeStepParts(r1, L8, 64, 1500);
    const parts = speculativeStepParts(spec, L8, 64, 1500);
    expect(plain.draftMs).toBe(0);
    expect(parts.verifyMs).toBeGreaterThan(plain.verifyMs); // 256 tokens through the model instead of 64
    expect(parts.draftMs).toBeCloseTo((3 * parts.verifyMs) / r1.model.numLayers, 9);
    expect(decodeTpotMs(spec, L8, 64, 1500)).toBeCloseTo((parts.verifyMs + parts.draftMs + parts.hostMs) / 2.445, 9);
  });
  it('the verify pass reads each sequence\'s KV once: memory-bound attention costs about one decode, compute-bound about 1 + N', () => {
    const q = 4;
    const attn = (ctx: EngineContext, layout: typeof L8, seqs: number, queries: number, kv: number): number =>
      stepCost(ctx, layout, { pfBatch: 0, pfSeq: 0, pfPrefix: 0, dcBatch: seqs, dcKv: kv, dcQuery: queries }).byOp.attention_decode!;
    // Llama-3.1-70B at tp 8 (8 query heads, one KV head per GPU): reading the cache bounds decode attention.
    const L70 = { tp: 8, pp: 1, dp: 1, moeTp: 1, moeEp: 1 };
    const one = attn(llama, L70, 64, 1, 8000);
    expect(attn(llama, L70, 64, q, 8000) / one).toBeLessThan(1.3);
    expect(attn(llama, L70, 64 * q, 1, 8000) / one).toBeGreaterThan(3); // as many independent sequences read q x the cache
    // DeepSeek-R1 with attention DP (128 heads per GPU): MLA's arithmetic bounds it, so the verify pass costs ~q x.
    const dp8 = { tp: 1, pp: 1, dp: 8, moeTp: 1, moeEp: 8 };
    const mla = attn(r1, dp8, 8 * 64, q, 8000) / attn(r1, dp8, 8 * 64, 1, 8000);
    expect(mla).toBeGreaterThan(2);
    expect(mla).toBeLessThanOrEqual(attn(r1, dp8, 8 * 64 * q, 1, 8000) / attn(r1, dp8, 8 * 64, 1, 8000) + 1e-9);
  });
  it('lowers TPOT of DeepSeek-R1 on B200 tp8 batch 64, holds the draft layer and its KV in memory, and says so', () => {
    const cfg = { ...L8, batchSize: 64, maxNumTokens: 8192 };
    const off = estimateAgg(r1, cfg, { breakdown: true }) as AggEstimate;
    const on = estimateAgg(withSpec(r1, 3), cfg, { breakdown: true }) as AggEstimate;
    expect(isRefusal(off) || isRefusal(on)).toBe(false);
    expect(on.metrics.tpotMs).toBeLessThan(off.metrics.tpotMs);
    // Never better than the tokens per step: the verify pass is heavier than a plain step.
    expect(off.metrics.tpotMs / on.metrics.tpotMs).toBeLessThan(2.445);
    expect(on.speculation).toMatchObject({ method: 'mtp', draft: 3 });
    expect(off.speculation).toBeUndefined();
    expect(on.breakdown?.speculative?.tokensPerStep).toBeCloseTo(2.445, 9);
    expect(on.breakdown?.speculative?.draftMs).toBeGreaterThan(0);
    const mem = (e: AggEstimate): MemoryPicture => e.memory;
    expect(mem(on).weightsGiB).toBeGreaterThan(mem(off).weightsGiB);
    expect(mem(on).kvBytesPerTokenPerGpu).toBeGreaterThan(mem(off).kvBytesPerTokenPerGpu);
    expect(mem(on).maxSequences).toBeLessThan(mem(off).maxSequences);
    // The draft layer runs over every prompt too.
    expect(on.ttftParts.prefill).toBeGreaterThan(off.ttftParts.prefill);
  });
  it('the decode pool of a disaggregated pair speculates as well', () => {
    const pool = { ...L8, batchSize: 64, maxNumTokens: 8192, workers: 1 };
    const cfg = { prefill: { ...pool, batchSize: 1 }, decode: pool };
    const off = estimateDisagg(r1, cfg);
    const on = estimateDisagg(withSpec(r1, 2), cfg);
    if (isRefusal(off) || isRefusal(on)) throw new Error('refused');
    expect(on.metrics.tpotMs).toBeLessThan(off.metrics.tpotMs);
    expect(on.speculation?.draft).toBe(2);
  });
  it('no engine runs speculative decoding with pipeline parallelism: refused with the reason', () => {
    const e = estimateAgg(withSpec(r1, 2), { ...L8, tp: 4, pp: 2, moeEp: 4, batchSize: 16, maxNumTokens: 8192 });
    expect(isRefusal(e) && e.reason).toMatch(/does not run speculative decoding \(MTP\) with pipeline parallelism/);
    expect(isRefusal(estimateAgg(r1, { ...L8, tp: 4, pp: 2, moeEp: 4, batchSize: 16, maxNumTokens: 8192 }))).toBe(false);
  });
});

describe('measured rows state their speculation in columns, never in provenance', () => {
  const inp: RowInputs = { model: r1.model, system: r1.system, backend: r1.backend, version: r1.version, perf: r1.perf };
  const row = {
    id: 'r', silicon_data_source: 'recipes/2026-01; silicon_concurrency=64', backend: 'trtllm', backend_version: '1.2.0rc5',
    model_path: 'deepseek-ai/DeepSeek-R1', system: 'b200_sxm', precision: 'fp8', mode: 'agg', isl: '1024', osl: '1024',
    batch_size: '64', tp_size: '8', pp_size: '1', attention_dp_size: '1', moe_tp_size: '1', moe_ep_size: '8',
  };
  const tpot = (r: Record<string, string>): number => {
    const e = estimateRow(r, inp);
    if (isRefusal(e)) throw new Error(e.reason);
    return e.metrics.tpotMs;
  };
  it('the same row priced with and without MTP', () => {
    const plain = tpot(row);
    const mtp = tpot({ ...row, nextn: '3', nextn_accept_rates: '0.85,0.5,0.4' });
    expect(mtp).toBeLessThan(plain);
    expect(tpot({ ...row, nextn: '0', nextn_accept_rates: '0.85,0.5,0.4' })).toBe(plain);
    expect(tpot({ ...row, nextn: '', nextn_accept_rates: '' })).toBe(plain);
    // Blank rates: the family's published defaults.
    expect(tpot({ ...row, nextn: '3' })).toBeCloseTo(mtp, 9);
    expect(tpot({ ...row, nextn: '3', nextn_accept_rates: '0.6,0.6,0.6' })).toBeGreaterThan(mtp);
  });
  it('changing silicon_data_source (planner config ids, recorded workers, engine) changes nothing', () => {
    for (const extra of [{}, { nextn: '2' }] as Array<Record<string, string>>) {
      const base = { ...row, ...extra };
      const want = tpot(base);
      for (const src of ['', 'db-dump/2026-04-27; config_id=733; silicon_concurrency=64', 'sglang recipe sweep; silicon_concurrency=64', 'trtllm-bench MTP nextn=3; silicon_concurrency=64']) {
        expect(tpot({ ...base, silicon_data_source: src })).toBe(want);
      }
    }
  });
  it('a row asking for MTP on a model without it is refused with the reason; a malformed cell exits 2 naming the column', async () => {
    const l = testCtx('meta-llama/Llama-3.1-70B');
    const e = estimateRow({ ...row, model_path: l.model.id, nextn: '2' }, { model: l.model, system: l.system, backend: l.backend, version: l.version, perf: l.perf });
    expect(isRefusal(e) && e.reason).toMatch(/nextn 2: meta-llama\/Llama-3.1-70B ships no MTP layers/);
    const csv = join(tmp, 'bad.csv');
    const header = Object.keys({ ...row, nextn: '', nextn_accept_rates: '' });
    writeFileSync(csv, `${header.join(',')}\n${header.map((h) => (h === 'nextn_accept_rates' ? '"0.9,1.5"' : h === 'nextn' ? '2' : (row as Record<string, string>)[h])).join(',')}\n`);
    const r = await runInProcess([registerEstimate], ['estimate', '--from-csv', csv]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/column "nextn_accept_rates": "0.9,1.5" is not blank or acceptance rates/);
  });
  it('estimate --from-csv reads the columns and writes them back with the predictions', async () => {
    const csv = join(tmp, 'rows.csv');
    const out = join(tmp, 'rows.out.csv');
    const header = [...Object.keys(row), 'nextn', 'nextn_accept_rates'];
    const line = (nextn: string, src: string) => header.map((h) => (h === 'nextn' ? nextn : h === 'nextn_accept_rates' ? '' : h === 'silicon_data_source' ? src : (row as Record<string, string>)[h])).join(',');
    writeFileSync(csv, [header.join(','), line('', 'a'), line('3', 'a'), line('3', 'config_id=1')].join('\n') + '\n');
    const r = await runInProcess([registerEstimate], ['estimate', '--from-csv', csv, '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const rows = parseCsv(readFileSync(out, 'utf8')).rows;
    const t = rows.map((x) => Number(x.predicted_tpot_ms));
    expect(t[1]).toBeLessThan(t[0]!);
    expect(t[2]).toBe(t[1]);
    expect(rows[1]!.nextn).toBe('3');
  });
});

describe('the flags', () => {
  const EST = ['estimate', '--hf-id', 'deepseek-ai/DeepSeek-R1', '--system', 'b200_sxm', '--backend', 'trtllm', '--tp', '8', '--moe-ep', '8', '--batch-size', '64'];
  it('estimate --nextn 3 lowers TPOT against --nextn 0 and says by how much the steps emit', async () => {
    const off = await runInProcess([registerEstimate], [...EST, '--nextn', '0', '--json']);
    const on = await runInProcess([registerEstimate], [...EST, '--nextn', '3', '--json']);
    expect(off.code, off.stderr).toBe(0);
    expect(on.code, on.stderr).toBe(0);
    const tOff = JSON.parse(off.stdout).estimate.metrics.tpotMs as number;
    const tOn = JSON.parse(on.stdout).estimate.metrics.tpotMs as number;
    expect(tOn).toBeLessThan(tOff);
    const text = await runInProcess([registerEstimate], [...EST, '--nextn', '3', '--breakdown']);
    expect(text.stdout).toMatch(/speculative decoding: MTP nextn 3 \(accept 0.85\/0.50\/0.40: 2.4\d tokens\/step, assumed\)/);
    expect(text.stdout).toMatch(/TPOT = step time \/ 2.4\d/);
    expect(text.stdout).toMatch(/acceptance rates assumed: DeepSeek-V3 report/);
    expect(text.stdout).toMatch(/speculative decode step \(running batch\): verify [\d.]+ \+ draft [\d.]+ \+ host [\d.]+ = [\d.]+ ms/);
  });
  it('bad values exit 2 with one line naming what is accepted', async () => {
    const plain = await runInProcess([registerEstimate], ['estimate', '--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h200_sxm', '--nextn', '2']);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toMatch(/--nextn 2: meta-llama\/Llama-3.1-70B ships no MTP layers/);
    for (const [flag, value, msg] of [
      ['--nextn', 'x', /accepted: 0 to 8/],
      ['--nextn', '9', /accepted: 0 to 8/],
      ['--nextn-accept-rates', '0.9,2', /numbers in \(0, 1\]/],
      ['--nextn', 'auto', /accepted by default only/],
    ] as const) {
      const r = await runInProcess([registerEstimate], [...EST, flag, value]);
      expect(r.code, `${flag} ${value}`).toBe(2);
      expect(r.stderr).toMatch(msg);
    }
  });
  it('default --nextn auto ranks MTP and plain layouts together and reports each candidate\'s setting', async () => {
    const r = await runInProcess([registerDefault], [
      'default', '--hf-id', 'deepseek-ai/DeepSeek-R1', '--system', 'b200_sxm', '--total-gpus', '8', '--backend', 'trtllm',
      '--nextn', 'auto', '--isl', '2000', '--osl', '500', '--ttft', '5000', '--tpot', '100', '--serving-mode', 'agg', '--top-n', '20', '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    const tags = new Set((doc.agg.top as Array<{ speculation?: { nextn: number } }>).map((c) => c.speculation?.nextn ?? 0));
    expect(tags.size).toBeGreaterThan(1);
    expect(doc.inputs.speculation).toMatch(/--nextn auto: draft depths 0, 1, 2, 3 searched \(MTP; acceptance assumed/);
    expect(r.stderr).toMatch(/--nextn auto/);
  });
});

describe('experiment files', () => {
  const entry = (extra: string) => `experiments:
  - name: r1
    mode: agg
    model: deepseek-ai/DeepSeek-R1
    system: b200_sxm
    backend: trtllm
    total_gpus: 8
    isl: 2000
    osl: 500
    ttft: 5000
    tpot: 100
${extra}`;
  it('nextn, nextn_accept_rates and speculative reach the search as the flags do', async () => {
    const file = join(tmp, 'exp.yaml');
    writeFileSync(file, entry('    nextn: 2\n    nextn_accept_rates: [0.9, 0.6]\n'));
    const [exp] = await readExperiments(file);
    expect(exp!.inputs.speculation).toEqual({ nextn: 2, acceptRates: [0.9, 0.6], method: undefined });
    writeFileSync(file, entry('    nextn: auto\n'));
    expect((await readExperiments(file))[0]!.inputs.speculation?.nextn).toBe('auto');
  });
  it('a depth beyond 8 or a rate above 1 is refused (exit 2)', async () => {
    const file = join(tmp, 'bad-exp.yaml');
    for (const bad of ['    nextn: 9\n', '    nextn_accept_rates: [0.9, 1.5]\n', '    speculative: medusa\n']) {
      writeFileSync(file, entry(bad));
      await expect(readExperiments(file), bad).rejects.toThrow(InputError);
    }
  });
  it('a run with --nextn writes it into exp_config.yaml, so the file reruns the same search', async () => {
    const out = join(tmp, 'res');
    const r = await runInProcess([registerDefault], [
      'default', '--hf-id', 'deepseek-ai/DeepSeek-R1', '--system', 'b200_sxm', '--total-gpus', '8', '--backend', 'trtllm', '--nextn', '2',
      '--isl', '2000', '--osl', '500', '--ttft', '5000', '--tpot', '100', '--serving-mode', 'agg', '--save-dir', out,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const dir = readdirSync(out)[0]!;
    const yaml = readFileSync(join(out, dir, 'agg', 'exp_config.yaml'), 'utf8');
    expect(yaml).toMatch(/nextn: 2\n/);
    expect(yaml).toMatch(/speculative: mtp\n/);
    expect(readFileSync(join(out, dir, 'agg', 'top1', 'agg_config.yaml'), 'utf8')).toMatch(/speculative_config:\n {2}decoding_type: MTP\n {2}num_nextn_predict_layers: 2\n/);
  }, 60_000);
});
