// A hybrid checkpoint (gated-delta-net layers) from a local config.json: `configure models` shows its layer mix,
// estimate prices its linear-attention layers with their own op, default plans it, and an engine release that
// cannot serve the family refuses it naming the rule. Runs in-process.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerDefault } from '../../src/cli/commands/default.js';
import { registerEstimate } from '../../src/cli/commands/estimate.js';
import { registerModels } from '../../src/cli/commands/models.js';
import { registerSupport } from '../../src/cli/commands/support.js';
import { normalizeArgv } from '../../src/cli/common.js';

const tmp = mkdtempSync(join(tmpdir(), 'inferplan-hybrid-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const dir = join(tmp, 'Qwen3.5-like');

let saved: { offline?: string; cache?: string };
beforeEach(() => {
  saved = { offline: process.env.HF_HUB_OFFLINE, cache: process.env.HF_HUB_CACHE };
  process.env.HF_HUB_OFFLINE = '1';
  process.env.HF_HUB_CACHE = join(tmp, 'no-cache');
});
afterEach(() => {
  for (const [k, v] of [['HF_HUB_OFFLINE', saved.offline], ['HF_HUB_CACHE', saved.cache]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  process.exitCode = undefined;
  vi.restoreAllMocks();
});

// A small Qwen3.5-MoE-shaped language model: 12 layers, three gated-delta-net layers to each full-attention layer.
const layers = 12;
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'config.json'), JSON.stringify({
  architectures: ['Qwen3_5MoeForConditionalGeneration'],
  text_config: {
    hidden_size: 2048, num_hidden_layers: layers, num_attention_heads: 16, num_key_value_heads: 2, head_dim: 256, vocab_size: 151936,
    max_position_embeddings: 262144, layer_types: Array.from({ length: layers }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention')),
    linear_num_key_heads: 16, linear_num_value_heads: 32, linear_key_head_dim: 128, linear_value_head_dim: 128, linear_conv_kernel_dim: 4,
    num_experts: 128, num_experts_per_tok: 8, moe_intermediate_size: 512, shared_expert_intermediate_size: 512, dtype: 'bfloat16',
  },
}));

async function configure(...args: string[]) {
  const program = new Command('configure').exitOverride();
  for (const register of [registerEstimate, registerDefault, registerSupport, registerModels]) register(program);
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((stdout += String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((stderr += String(s)), true));
  process.exitCode = undefined;
  await program.parseAsync(normalizeArgv(args), { from: 'user' });
  const code = process.exitCode ?? 0;
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

const COMMON = ['--hf-id', dir, '--system', 'h200_sxm', '--isl', '2000', '--osl', '200'];

describe('a hybrid linear-attention model', () => {
  it('models shows its layer mix', async () => {
    const r = await configure('models', '--hf-id', dir, '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { models: { layerMixSummary: string; layerMix: unknown; gdn: unknown }[] };
    expect(doc.models[0]!.layerMixSummary).toBe('9 GDN + 3 full');
    expect(doc.models[0]!.gdn).toMatchObject({ numValueHeads: 32, keyHeadDim: 128 });
  });
  it('estimate prices its gated-delta-net layers with the linear-attention op, in prefill and in decode', async () => {
    const r = await configure('estimate', ...COMMON, '--backend', 'sglang', '--tp', '2', '--batch-size', '8', '--breakdown', '--json');
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { estimate: { breakdown: { prefill: Record<string, number>; decode: Record<string, number> } } };
    const b = doc.estimate.breakdown;
    expect(b.prefill.linear_attn_prefill).toBeGreaterThan(0);
    expect(b.decode.linear_attn_decode).toBeGreaterThan(0);
    expect(b.decode.attention_decode).toBeGreaterThan(0); // the 3 full-attention layers
  });
  it('default plans it', async () => {
    const r = await configure('default', ...COMMON, '--backend', 'sglang', '--total-gpus', '2', '--ttft', '2000', '--tpot', '50');
    expect(r.code, r.stderr).toBe(0);
  });
  it('a vLLM release before the family was served refuses it, naming the rule', async () => {
    const r = await configure('estimate', ...COMMON, '--backend', 'vllm', '--backend-version', '0.14.0', '--tp', '2', '--batch-size', '8');
    expect(r.code).not.toBe(0);
    expect(r.stderr + r.stdout).toContain('vLLM 0.15 rejects the Qwen3.5 architectures');
  });
});
