import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { runInProcess } from './cli.js';
import { registerGenerate } from '../../src/cli/commands/generate.js';

const run = (args: string[]) => runInProcess([registerGenerate], args);

describe('configure generate (end to end)', () => {
  it('Llama-3.1-70B bf16 on H200: the weights (131 GiB) need exactly two GPUs', async () => {
    const r = await run(['generate', '--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h200_sxm', '--total-gpus', '8', '--isl', '4000', '--osl', '500', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.parallel).toBe('tp2pp1');
    expect(doc.replicas).toBe(4);
    expect(doc.gpusUsed).toBe(8);
    expect(doc.trials[0].parallel).toBe('tp1pp1');
    expect(doc.trials[0].rejected).toMatch(/weights/);
    expect(doc.memory.maxSequences).toBeGreaterThanOrEqual(16);
    // The prediction is made at a power of two the KV cache holds.
    expect(doc.batchSize).toBeLessThanOrEqual(doc.memory.maxSequences);
    expect(Math.log2(doc.batchSize) % 1).toBe(0);
    expect(doc.metrics.tokPerSPerGpu).toBeGreaterThan(0);
  });

  it('Qwen3-32B bf16 on H100: weights fit on one GPU but the KV room does not, so tp2', async () => {
    const r = await run(['generate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h100_sxm', '--isl', '4000', '--osl', '1000']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/tried\s+tp1pp1\s+1 GPU\s+KV cache holds \d+ sequences/);
    expect(r.stdout).toMatch(/chosen tp2pp1/);
    expect(r.stdout).toMatch(/deploy: tp2pp1 x 1 replica on 2 GPUs/);
  });

  it('--save-dir writes the full bundle of the one configuration, whose exp_config.yaml reproduces the inputs', async () => {
    const out = mkdtempSync(join(tmpdir(), 'inferplan-gen-'));
    const r = await run(['generate', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--total-gpus', '4', '--isl', '2000', '--osl', '200', '--save-dir', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    const dirs = readdirSync(out);
    expect(dirs).toHaveLength(1);
    expect(doc.savedTo).toBe(join(out, dirs[0]!));
    const top = join(out, dirs[0]!, 'agg', 'top1');
    for (const f of ['generator_config.yaml', 'k8s_deploy.yaml', 'run_0.sh']) expect(existsSync(join(top, f)), f).toBe(true);
    expect(existsSync(join(out, dirs[0]!, 'disagg'))).toBe(false);
    const exp = readFileSync(join(out, dirs[0]!, 'agg', 'exp_config.yaml'), 'utf8');
    expect(exp).toMatch(/total_gpus: 4/);
    expect(exp).toMatch(/isl: 2000/);
    // summary.json is the --json document (without timing).
    expect(JSON.parse(readFileSync(join(out, dirs[0]!, 'summary.json'), 'utf8')).parallel).toBe(doc.parallel);
  });

  it('--dynamo-version and --image choose the release and the image of the manifests', async () => {
    const out = mkdtempSync(join(tmpdir(), 'inferplan-gen-'));
    const img = 'registry.example.com/dynamo/vllm-runtime:custom';
    const args = ['generate', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--backend', 'vllm', '--backend-version', '0.19.0', '--total-gpus', '2', '--isl', '2000', '--osl', '200', '--save-dir', out];
    const r = await run([...args, '--dynamo-version', '1.4.0', '--image', img]);
    expect(r.code, r.stderr).toBe(0);
    const slug = join(out, readdirSync(out)[0]!);
    const dgd = YAML.parseAllDocuments(readFileSync(join(slug, 'agg', 'top1', 'k8s_deploy.yaml'), 'utf8')).map((d) => d.toJS()).find((d) => d.kind === 'DynamoGraphDeployment');
    expect(dgd.apiVersion).toBe('nvidia.com/v1beta1');
    expect(dgd.metadata.annotations['inferplan/dynamo-release']).toBe('1.4.0');
    expect(dgd.metadata.annotations['inferplan/image-match']).toMatch(/^given by the user \(--image\)/);
    expect(dgd.spec.components.map((c: any) => c.podTemplate.spec.containers[0].image)).toEqual([img, img]);
    expect(readFileSync(join(slug, 'agg', 'exp_config.yaml'), 'utf8')).toContain(`image: ${img}`);
    // Without either: the newest release whose image ships vLLM 0.19.0, as v1alpha1 (before 1.2.0).
    const plain = await run([...args, '--force']);
    expect(plain.code, plain.stderr).toBe(0);
    const text = readFileSync(join(slug, 'agg', 'top1', 'k8s_deploy.yaml'), 'utf8');
    expect(text).toContain('apiVersion: nvidia.com/v1alpha1');
    expect(text).toContain('image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1');
    expect(text).toContain('inferplan/image-match: exact (image ships vllm 0.19.0)');
  });

  it('rejects an unknown --dynamo-version or an empty --image with exit 2', async () => {
    const base = ['generate', '--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--backend-version', '0.19.0'];
    const bad = await run([...base, '--dynamo-version', '2.5']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--dynamo-version "2\.5" is not a Dynamo release we know; accepted: .*1\.4\.0/);
    expect((await run([...base, '--image', ' '])).code).toBe(2);
  });

  it('exits 3 when the budget is smaller than the smallest layout', async () => {
    const r = await run(['generate', '--hf-id', 'meta-llama/Llama-3.1-70B', '--system', 'h200_sxm', '--total-gpus', '1']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/no layout of up to 1 GPUs holds meta-llama\/Llama-3.1-70B/);
  });

  it('exits 2 on bad input and 4 on an unknown architecture', async () => {
    expect((await run(['generate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h9000'])).code).toBe(2);
    expect((await run(['generate', '--hf-id', 'Qwen/Qwen3-32B', '--system', 'h200_sxm', '--total-gpus', '0'])).code).toBe(2);
    const dir = mkdtempSync(join(tmpdir(), 'inferplan-arch-'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ architectures: ['FooForCausalLM'], hidden_size: 1024 }));
    const r = await run(['generate', '--hf-id', dir, '--system', 'h200_sxm']);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/FooForCausalLM is not supported; supported: .*LlamaForCausalLM/);
  });
});
