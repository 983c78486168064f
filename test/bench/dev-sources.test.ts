// What the benchmark sets on dev rows from their source (bench/dev-sources.ts): InferenceX's sweeps are priced as
// that project's published configuration ran them; other rows keep the columns they record.
import { describe, expect, it } from 'vitest';
import { asRunsTheyRestate, sourceDeployment, sourceDepth, sourceServerArgs, withServedCheckpoint, withSourceKnowledge } from '../../bench/dev-sources.js';
import type { Row } from '../../src/engine/rows.js';
import type { ModelSpec } from '../../src/inputs/types.js';

const mtpModel = { mtpLayers: 1 } as ModelSpec;
const plainModel = { mtpLayers: 0 } as ModelSpec;

/** An InferenceX agg row of Qwen3.5-397B FP8 on B200 (SGLang 0.5.9), as the dev rows record one. */
function qwenAgg(image: string, tp: number, ep: number, conc = 16): Row {
  return {
    id: 'x', mode: 'agg', backend: 'sglang', backend_version: '0.5.9', model_path: 'Qwen/Qwen3.5-397B-A17B', system: 'b200_sxm', precision: 'fp8',
    isl: '1024', osl: '1024', batch_size: String(conc), tp_size: String(tp), pp_size: '1', attention_dp_size: '1', moe_tp_size: String(tp / ep), moe_ep_size: String(ep),
    silicon_data_source: `source_file=2026-03-25.csv; model=Qwen3.5-397B; silicon_concurrency=${conc}; measured=2026-03-24T10:00:00Z; wip=False; image=${image}`,
  };
}

/** The same sweep's GLM-5 FP8 row on `system`. */
function glmAgg(system: string): Row {
  const r: Row = { ...qwenAgg('lmsysorg/sglang:v0.5.9-cu130', 8, 1, 64), model_path: 'zai-org/GLM-5-FP8', system };
  return { ...r, silicon_data_source: r.silicon_data_source!.replace('model=Qwen3.5-397B', 'model=GLM-5') };
}

describe('InferenceX agg rows', () => {
  it('take the speculation their sweep configuration ran: the MTP sweep at its script depth, the plain sweep none', () => {
    expect(sourceDepth(qwenAgg('lmsysorg/sglang:v0.5.9-cu130', 4, 1))).toBe(3);
    expect(sourceDepth(qwenAgg('lmsysorg/sglang:v0.5.9-cu130-amd64', 8, 1))).toBe(0);
    const { row, basis } = withSourceKnowledge(qwenAgg('lmsysorg/sglang:v0.5.9-cu130', 4, 1), mtpModel);
    expect(basis).toBe('source configuration');
    expect(row.nextn).toBe('3');
    // No source records its acceptance: blank, priced at the family's published defaults.
    expect(row.nextn_accept_rates).toBe('');
  });

  it('are left alone where the source ran the same image, layout and load with and without MTP', () => {
    // DeepSeek-R1 FP8 on B200, SGLang 0.5.9: dsr1-fp8-b200-sglang and dsr1-fp8-b200-sglang-mtp share image and tp 8.
    const r: Row = { ...qwenAgg('lmsysorg/sglang:v0.5.9-cu130', 8, 1), model_path: 'deepseek-ai/DeepSeek-R1' };
    r.silicon_data_source = r.silicon_data_source!.replace('model=Qwen3.5-397B', 'model=DeepSeek-R1');
    expect(sourceDepth(r)).toBeUndefined();
    expect(withSourceKnowledge(r, mtpModel)).toEqual({ row: { ...r, scheduler_recv_interval: '30', gpu_memory_fraction: '0.82' }, basis: 'assumed' });
  });

  it('other sources and recorded columns are kept as they are', () => {
    const other = { ...qwenAgg('x', 4, 1), silicon_data_source: 'db-dump/2026-03-01; config_id=12; silicon_concurrency=16' };
    expect(withSourceKnowledge(other, mtpModel)).toEqual({ row: other, basis: 'assumed' });
    const recorded = { ...qwenAgg('lmsysorg/sglang:v0.5.9-cu130', 4, 1), nextn: '1', scheduler_recv_interval: '1', gpu_memory_fraction: '0.9' };
    expect(withSourceKnowledge(recorded, mtpModel)).toEqual({ row: recorded, basis: 'recorded' });
    // A model without MTP layers drafts nothing, whatever the sweep ran.
    expect(withSourceKnowledge(qwenAgg('lmsysorg/sglang:v0.5.9-cu130', 4, 1), plainModel).row.nextn).toBeUndefined();
  });
});

describe("InferenceX's SGLang launch scripts", () => {
  const recv = (r: Row) => sourceServerArgs(r)?.scheduler_recv_interval;
  it('take requests in every 10 steps below 16 clients and every 30 from 16 on B200, as the scripts set', () => {
    expect(recv(qwenAgg('lmsysorg/sglang:v0.5.9-cu130-amd64', 8, 1, 8))).toBe('10');
    expect(recv(qwenAgg('lmsysorg/sglang:v0.5.9-cu130-amd64', 8, 1, 16))).toBe('30');
    expect(withSourceKnowledge(qwenAgg('lmsysorg/sglang:v0.5.9-cu130-amd64', 8, 1, 64), plainModel).row.scheduler_recv_interval).toBe('30');
  });

  it('keep 10 at every load where the script does (Qwen3.5 FP8 on B300), and leave Hopper, GLM-5 and other sources alone', () => {
    expect(recv({ ...qwenAgg('lmsysorg/sglang:v0.5.10.post1-cu130', 4, 1, 64), system: 'b300_sxm' })).toBe('10');
    expect(recv({ ...qwenAgg('lmsysorg/sglang:v0.5.9-cu129-amd64', 8, 8, 64), system: 'h200_sxm' })).toBe('1');
    expect(recv(glmAgg('b200_sxm'))).toBe('1');
    expect(sourceServerArgs({ ...qwenAgg('x', 4, 1), silicon_data_source: 'db-dump/2026-03-01; config_id=12; silicon_concurrency=16' })).toBeUndefined();
  });

  it("GLM-5 and DeepSeek-R1 FP8 on H200 keep the checkpoint's KV cache (no --kv-cache-dtype); the others' fp8 is the rule's", () => {
    expect(sourceServerArgs(glmAgg('h200_sxm'))?.kv_cache_dtype).toBe('auto');
    expect(sourceServerArgs(glmAgg('b200_sxm'))?.kv_cache_dtype).toBeUndefined();
    expect(sourceServerArgs({ ...qwenAgg('lmsysorg/sglang:v0.5.9-cu129-amd64', 8, 8, 64), system: 'h200_sxm' })?.kv_cache_dtype).toBeUndefined();
    // A column the row states is kept.
    const stated = { ...glmAgg('h200_sxm'), kv_cache_dtype: 'fp8' };
    expect(withSourceKnowledge(stated, plainModel).row.kv_cache_dtype).toBe('fp8');
  });

  it("take the scripts' --mem-fraction-static on B200 and H200 (by date where a script changed it); B300 keeps the engine's default", () => {
    const fraction = (r: Row) => sourceServerArgs(r)?.gpu_memory_fraction;
    expect(fraction(glmAgg('h200_sxm'))).toBe('0.85');
    expect(fraction({ ...qwenAgg('lmsysorg/sglang:v0.5.9-cu129-amd64', 8, 8, 64), system: 'h200_sxm' })).toBe('0.8');
    expect(fraction(qwenAgg('lmsysorg/sglang:v0.5.9-cu130-amd64', 8, 1))).toBe('0.82');
    const glmFp4 = (day: string): Row => ({ ...glmAgg('b200_sxm'), precision: 'fp4', silicon_data_source: glmAgg('b200_sxm').silicon_data_source!.replace('2026-03-24', day) });
    expect(fraction(glmFp4('2026-03-29'))).toBe('0.8');
    expect(fraction(glmFp4('2026-04-09'))).toBe('0.9');
    expect(fraction({ ...qwenAgg('lmsysorg/sglang:v0.5.10.post1-cu130', 4, 1, 64), system: 'b300_sxm' })).toBeUndefined();
  });
});

describe('InferenceX rows name the base model; their sweep served a checkpoint', () => {
  it('a row takes the one bundled checkpoint its sweep served, and keeps its model where that is not bundled or not named', () => {
    const glm = (system: string, tag: string): Row => ({ ...glmAgg(system), model_path: 'zai-org/GLM-5', silicon_data_source: glmAgg(system).silicon_data_source!.replace('v0.5.9-cu130', tag) });
    expect(withServedCheckpoint(glm('h200_sxm', 'glm5-hopper')).model_path).toBe('zai-org/GLM-5-FP8');
    const fp4 = { ...glm('b200_sxm', 'nightly-dev-cu13-20260328-a27651d5'), precision: 'fp4' };
    expect(withServedCheckpoint(fp4).model_path).toBe('nvidia/GLM-5-NVFP4');
    // Qwen/Qwen3.5-397B-A17B-FP8 is not bundled: the base model prices it.
    expect(withServedCheckpoint(qwenAgg('lmsysorg/sglang:v0.5.9-cu129-amd64', 8, 1)).model_path).toBe('Qwen/Qwen3.5-397B-A17B');
    // An image no configuration listed, and a row of another source, are left as they are.
    const unknown = glm('h200_sxm', 'v9.9.9');
    expect(withServedCheckpoint(unknown)).toBe(unknown);
    const other = { ...unknown, silicon_data_source: 'db-dump/2026-03-01; silicon_concurrency=16' };
    expect(withServedCheckpoint(other)).toBe(other);
  });
});

describe('InferenceX disagg rows', () => {
  /** DeepSeek-R1 FP8 on B200 through Dynamo with TRT-LLM at 8 clients, recorded with one worker per pool and no attention DP. */
  const row: Row = {
    id: 'y', mode: 'disagg', backend: 'trtllm', backend_version: '', model_path: 'deepseek-ai/DeepSeek-R1', system: 'b200_sxm', precision: 'fp8', isl: '1024', osl: '1024',
    prefill_tp_size: '8', prefill_pp_size: '1', prefill_attention_dp_size: '1', prefill_moe_tp_size: '1', prefill_moe_ep_size: '8',
    decode_tp_size: '8', decode_pp_size: '1', decode_attention_dp_size: '1', decode_moe_tp_size: '1', decode_moe_ep_size: '8',
    silicon_data_source: 'source_file=2026-03-25.csv; model=DeepSeek-R1; silicon_concurrency=8; measured=2026-03-01T00:00:00Z; wip=False; image=nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2',
  };

  it('take the deployment and draft depth of the configuration entry they ran', () => {
    const d = sourceDeployment(row);
    expect(d).toBeDefined();
    const { row: priced, basis } = withSourceKnowledge(row, mtpModel);
    expect(basis).toBe('source configuration');
    // Workers and attention DP come from the configuration; each pool keeps its GPUs per worker.
    expect(Number(priced.decode_num_workers)).toBe(d!.decode.workers);
    expect(Number(priced.decode_tp_size) * Number(priced.decode_attention_dp_size)).toBe(8);
    expect(Number(priced.decode_moe_tp_size) * Number(priced.decode_moe_ep_size)).toBe(8);
    expect(priced.nextn).toBe(String(d!.nextn));
  });

  it('a load the configuration never ran is left to the rule for its source', () => {
    const other = { ...row, silicon_data_source: row.silicon_data_source!.replace('silicon_concurrency=8', 'silicon_concurrency=7') };
    expect(sourceDeployment(other)).toBeUndefined();
  });
});

describe('rows restating an InferenceX run', () => {
  it('are priced as the run they restate (its columns, their own id); other rows keep theirs', () => {
    const run: Row = { ...qwenAgg('lmsysorg/sglang:v0.5.9-cu130', 4, 1, 8), id: 'ix', silicon_ttft_ms: '382.7746130307787', silicon_tpot_ms: '8.300320722924896' };
    const copy: Row = { ...qwenAgg('', 4, 1, 8), id: 'gap', backend_version: 'nightly-dev', silicon_data_source: 'source_file=gap.csv; silicon_concurrency=8', silicon_ttft_ms: '382.77', silicon_tpot_ms: '8.30' };
    const other: Row = { ...copy, id: 'other', silicon_tpot_ms: '8.41' };
    const { rows, restated } = asRunsTheyRestate([copy, run, other]);
    expect(restated).toBe(1);
    expect(rows[0]).toEqual({ ...run, id: 'gap' });
    expect(rows.slice(1)).toEqual([run, other]);
  });
});

