// `configure estimate` as a user sees it: output, exit codes, one-line errors, batch mode. Runs in-process.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { registerEstimate } from '../../src/cli/commands/estimate.js';
import { normalizeArgv } from '../../src/cli/common.js';

const tmp = mkdtempSync(join(tmpdir(), 'inferplan-estimate-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
afterEach(() => {
  process.exitCode = undefined;
  vi.restoreAllMocks();
});

async function configure(...args: string[]) {
  const program = new Command('configure').exitOverride();
  registerEstimate(program);
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((stdout += String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((stderr += String(s)), true));
  process.exitCode = undefined;
  try {
    await program.parseAsync(normalizeArgv(args), { from: 'user' });
  } catch (e) {
    // commander usage errors (exitOverride)
    return { code: 2, stdout, stderr: stderr + String((e as Error).message) };
  }
  const code = process.exitCode ?? 0;
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

const BASE = ['estimate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--backend', 'vllm', '--isl', '2000', '--osl', '200'];

describe('configure estimate', () => {
  it('prints metrics with bands, memory and the calibration line', async () => {
    const r = await configure(...BASE, '--tp', '2', '--batch-size', '16', '--breakdown');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/TTFT\s+\d+\.\d\s+\[\d/);
    expect(r.stdout).toMatch(/TPOT\s+\d+\.\d\d\s+\[/);
    expect(r.stdout).toMatch(/memory per GPU: .* KV cache/);
    expect(r.stdout).toMatch(/prefill step .*\n\s+\w+_gemm/);
    expect(r.stdout).toMatch(/calibrated on/);
  });
  it('--json prints one document; disagg prices the KV transfer', async () => {
    const r = await configure(...BASE, '--mode', 'disagg', '--prefill-tp', '2', '--decode-tp', '2', '--decode-batch-size', '32', '--decode-workers', '2', '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.estimate.mode).toBe('disagg');
    expect(doc.estimate.kvTransferMs).toBeGreaterThan(0);
    expect(doc.estimate.metrics.gpus).toBe(6);
    expect(doc.estimate.metrics.concurrency).toBe(64);
  });
  it('a layout that does not fit exits 4 with the reason on one line', async () => {
    const r = await configure('estimate', '--hf-id', 'meta-llama/Llama-3.1-405B', '--system', 'h100_sxm', '--tp', '1');
    expect(r.code).toBe(4);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/weights need .* GiB per GPU/);
  });
  it('bad numbers exit 2', async () => {
    const r = await configure(...BASE, '--tp', 'two');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--tp must be a positive integer/);
  });
  it('--from-csv appends predictions and refusal reasons to every row', async () => {
    const csv = join(tmp, 'rows.csv');
    const out = join(tmp, 'out.csv');
    writeFileSync(csv, [
      'id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_data_source',
      'a,vllm,,Qwen/Qwen3-32B,h200_sxm,fp8,agg,1024,128,fp8,fp8,8,2,1,1,2,1,x',
      'b,vllm,,Qwen/Qwen3-32B,no_such_gpu,fp8,agg,1024,128,fp8,fp8,8,2,1,1,2,1,x',
    ].join('\n') + '\n');
    const r = await configure('estimate', '--from-csv', csv, '--out', out);
    expect(r.code).toBe(0);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/predicted_ttft_ms,predicted_tpot_ms,predicted_tokens_per_s_per_gpu,predicted_request_latency_ms,refused_reason$/);
    expect(lines[1]).toMatch(/,\d+\.\d+,\d+\.\d+,\d+\.\d+,\d+\.\d+,$/);
    expect(lines[2]).toMatch(/unknown system: no_such_gpu$/);
  });
});
