// Bad input through the commands: exit 2 with one line that says what was wrong and what is accepted, no stack,
// nothing written, and no file of the user's replaced without --force.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { registerCalibrate } from '../../src/cli/commands/calibrate.js';
import { registerDefault } from '../../src/cli/commands/default.js';
import { registerDgdr } from '../../src/cli/commands/dgdr.js';
import { registerEstimate } from '../../src/cli/commands/estimate.js';
import { registerExp } from '../../src/cli/commands/exp.js';
import { registerGenerate } from '../../src/cli/commands/generate.js';
import { registerModels } from '../../src/cli/commands/models.js';
import { registerPlannerProfile } from '../../src/cli/commands/planner-profile.js';
import { registerRecommend } from '../../src/cli/commands/recommend.js';
import { registerSupport } from '../../src/cli/commands/support.js';
import { runCli, runInProcess, type CliRun } from '../modes/cli.js';

const ROOT = mkdtempSync(join(tmpdir(), 'inferplan-hostile-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));
let n = 0;
const fresh = () => {
  const d = join(ROOT, `case${n++}`);
  mkdirSync(d);
  return d;
};

const ALL = [registerDefault, registerEstimate, registerRecommend, registerGenerate, registerSupport, registerExp, registerModels, registerCalibrate, registerPlannerProfile, registerDgdr];
const run = (args: string[], registers: Array<(p: Command) => void> = ALL) => runInProcess(registers, args);
const M = ['--hf-id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm'];

/** Exit 2, one line on stderr naming `text`, no stack trace or internal error. */
function expectBadInput(r: CliRun, text: string | RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^configure: error: /);
  expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
  if (typeof text === 'string') expect(r.stderr).toContain(text);
  else expect(r.stderr).toMatch(text);
}

describe('usage errors through the real entry point', () => {
  it.each([
    [['default', '--system', 'h200_sxm', '--total-gpus', '2'], "required option '--hf-id <id>' not specified"],
    [['defualt'], "unknown command 'defualt' (Did you mean default?)"],
    [['estimate', ...M, '--mode', 'xx'], 'Allowed choices are agg, disagg.'],
  ])('%j is one line with the hint', (args, text) => {
    const r = runCli(args);
    expectBadInput(r, text);
    expect(r.stderr).toContain('(run with --help for usage)');
  });
});

describe('number flags', () => {
  it.each([
    [['estimate', ...M, '--tp', '1e30'], '--tp 1e30 is more than the 4096 GPUs'],
    [['estimate', ...M, '--replicas', '1e30'], '--replicas 1e30 is more than the 4096 GPUs'],
    [['estimate', ...M, '--batch-size', '1e30'], '--batch-size 1e30 is too large; accepted: a positive integer up to 10000000'],
    [['estimate', ...M, '--concurrency', '100000000'], '--concurrency 100000000 is too large'],
    [['estimate', ...M, '--max-num-tokens', '9007199254740993'], '--max-num-tokens 9007199254740993 is too large'],
    [['estimate', ...M, '--tp', '0x10'], '--tp must be a positive integer, got "0x10"'],
    [['default', ...M, '--total-gpus', '0x10'], '--total-gpus must be a positive integer, got "0x10"'],
    [['default', ...M, '--total-gpus', '2', '--isl', '0x10'], '--isl must be a positive integer, got "0x10"'],
    [['default', ...M, '--total-gpus', '2', '--ttft', '0x10'], '--ttft must be a positive number, got "0x10"'],
    [['default', ...M, '--total-gpus', '2', '--prefix', ''], '--prefix must be a non-negative integer, got ""'],
    [['default', ...M, '--total-gpus', '2', '--prefix', ' '], '--prefix must be a non-negative integer, got " "'],
    [['default', ...M, '--total-gpus', '2', '--top-n', '1e30'], '--top-n 1e30 is too large'],
    [['planner-profile', ...M, '--prefill-tp', '1', '--decode-tp', '1', '--out', 'never-written', '--prefill-points', '1e30'], '--prefill-points 1e30 is too large; accepted: a positive integer up to 1000'],
  ])('%j exits 2', async (args, text) => {
    expectBadInput(await run(args), text);
  });

  it('decimal spellings of a count still parse', async () => {
    const r = await run(['estimate', ...M, '--tp', '+1', '--batch-size', '8e0', '--isl', '1e3', '--osl', '100.0']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('isl 1000 osl 100');
  });

  it('a DGDR sweep granularity beyond the flags\' bound exits 2 before searching', async () => {
    const file = join(fresh(), 'dgdr.yaml');
    writeFileSync(file, [
      'apiVersion: nvidia.com/v1alpha1', 'kind: DynamoGraphDeploymentRequest', 'metadata:', '  name: q', 'spec:', '  model: Qwen/Qwen3-8B',
      '  backend: vllm', '  profilingConfig:', '    profilerImage: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.0', '    config:',
      '      sla: {isl: 3000, osl: 150, ttft: 2000, itl: 50}', '      hardware: {gpuType: h200_sxm}',
      '      sweep: {decodeInterpolationGranularity: 1000000000000000}', '',
    ].join('\n'));
    expectBadInput(await run(['dgdr', file]), 'sweep.decodeInterpolationGranularity 1000000000000000 is too large; accepted: 1 to 1000');
  });
});

describe('empty values', () => {
  it.each([
    [['default', ...M, '--total-gpus', '2', '--save-dir', ''], '--save-dir is empty'],
    [['generate', ...M, '--save-dir', ''], '--save-dir is empty'],
    [['default', ...M, '--total-gpus', '2', '--perf-data', ''], '--perf-data is empty; it takes <dir>'],
    [['default', ...M, '--total-gpus', '2', '--calibration', ''], '--calibration is empty; it takes <file>'],
    [['default', ...M, '--total-gpus', '2', '--backend-version', ' '], '--backend-version is empty; it takes <v>'],
    [['planner-profile', ...M, '--prefill-tp', '1', '--decode-tp', '1', '--out', ''], '--out is empty; it takes <dir>'],
    [['models', '--hf-id', ''], '--hf-id is empty; it takes <id>'],
    [['estimate', '--from-csv', 'rows.csv', '--out', ''], '--out is empty'],
  ])('%j exits 2 and writes nothing', async (args, text) => {
    const before = readdirSync(process.cwd()).sort();
    expectBadInput(await run(args), text);
    expect(readdirSync(process.cwd()).sort()).toEqual(before);
  });
});

describe('--save-dir that cannot be written is refused before the search', () => {
  it.each([
    ['an existing file', (d: string) => (writeFileSync(join(d, 'file'), 'mine'), join(d, 'file')), 'cannot write there (is a file, not a directory)'],
    ['a path under a file', (d: string) => (writeFileSync(join(d, 'file'), 'mine'), join(d, 'file', 'sub')), 'file is not a directory)'],
  ])('%s', async (_what, make, text) => {
    for (const args of [['default', ...M, '--total-gpus', '2'], ['recommend', ...M, '--target-concurrency', '8'], ['generate', ...M], ['exp', '--yaml', 'never-read.yaml']]) {
      const d = fresh();
      const save = make(d);
      expectBadInput(await run([...args, '--save-dir', save]), text);
      expect(readdirSync(d)).toEqual(['file']);
      expect(readFileSync(join(d, 'file'), 'utf8')).toBe('mine');
    }
  });

  it.skipIf(process.getuid?.() === 0)('a read-only directory exits 2 (EACCES), not an internal error', async () => {
    const d = fresh();
    const { chmodSync } = await import('node:fs');
    chmodSync(d, 0o555);
    for (const args of [['default', ...M, '--total-gpus', '2'], ['generate', ...M]]) expectBadInput(await run([...args, '--save-dir', d]), 'cannot write there (EACCES)');
    chmodSync(d, 0o755);
  });
});

describe('--out files', () => {
  const CSV = [
    'id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_data_source',
    'a,vllm,,Qwen/Qwen3-32B,h200_sxm,fp8,agg,1024,128,fp8,fp8,8,2,1,1,2,1,x',
  ].join('\n') + '\n';

  it('estimate --from-csv --out keeps an existing file without --force and replaces it with', async () => {
    const d = fresh();
    writeFileSync(join(d, 'rows.csv'), CSV);
    const out = join(d, 'mine.csv');
    writeFileSync(out, 'my notes');
    expectBadInput(await run(['estimate', '--from-csv', join(d, 'rows.csv'), '--out', out]), `--out ${out} already exists; pass --force to replace it`);
    expect(readFileSync(out, 'utf8')).toBe('my notes');
    const forced = await run(['estimate', '--from-csv', join(d, 'rows.csv'), '--out', out, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toMatch(/^id,backend,/);
    expect(readdirSync(d).sort()).toEqual(['mine.csv', 'rows.csv']);
  });

  it('estimate --out without --from-csv exits 2 instead of writing nothing silently', async () => {
    expectBadInput(await run(['estimate', ...M, '--out', join(fresh(), 'x.csv')]), '--out writes the rows of --from-csv FILE');
  });

  it.each([
    ['a directory', (d: string) => (mkdirSync(join(d, 'dir')), join(d, 'dir')), 'cannot write there (is a directory)'],
    ['a path under a file', (d: string) => (writeFileSync(join(d, 'file'), 'mine'), join(d, 'file', 'x.yaml')), 'is not a directory)'],
    ['an existing file', (d: string) => (writeFileSync(join(d, 'file'), 'mine'), join(d, 'file')), 'already exists; pass --force to replace it'],
    ['a missing directory', (d: string) => join(d, 'no', 'such', 'x.yaml'), 'does not exist)'],
  ])('calibrate --out onto %s exits 2 before the fit, leaving nothing behind', async (_what, make, text) => {
    const d = fresh();
    const out = make(d);
    const before = readdirSync(d).sort();
    expectBadInput(await run(['calibrate', ...M, '--tp', '1', '--out', out]), text);
    expect(readdirSync(d).sort()).toEqual(before);
    if (existsSync(join(d, 'file'))) expect(readFileSync(join(d, 'file'), 'utf8')).toBe('mine');
  });
});

describe('exp --save-dir', () => {
  const ONE = (name: string) => `  - {name: ${name}, mode: agg, model: Qwen/Qwen3-8B, system: h200_sxm, backend: vllm, total_gpus: 2, isl: 2000, osl: 200, ttft: 2000, tpot: 50, top_n: 1}\n`;

  it('writes no experiment when one folder already exists without --force', async () => {
    const d = fresh();
    const yaml = join(d, 'exps.yaml');
    writeFileSync(yaml, `experiments:\n${ONE('first')}${ONE('second')}`);
    const save = join(d, 'out');
    expect((await run(['exp', '--yaml', yaml, '--save-dir', save])).code).toBe(0);
    rmSync(join(save, 'first'), { recursive: true });
    const again = await run(['exp', '--yaml', yaml, '--save-dir', save]);
    expect(again.code, again.stderr).toBe(2);
    expect(again.stderr.trim().split('\n').filter((l) => l.startsWith('configure: error'))).toEqual([
      expect.stringMatching(/^configure: error: .*out\/second\/.* already exists; pass --force/),
    ]);
    expect(readdirSync(save)).toEqual(['second']);
  }, 60_000);
});

describe('speculation flags in support', () => {
  it.each([
    [['--nextn', '3', '--speculative', 'off'], '--nextn 3 asks for draft tokens but --speculative is off'],
    [['--nextn', '2'], '--nextn 2: Qwen/Qwen3-8B ships no MTP layers'],
  ])('%j is bad input (exit 2) as in the planning commands', async (extra, text) => {
    expectBadInput(await run(['support', ...M, ...extra]), text);
  });
});

describe('model config.json', () => {
  const LLAMA = { architectures: ['LlamaForCausalLM'], hidden_size: 4096, intermediate_size: 14336, num_hidden_layers: 32, num_attention_heads: 32, num_key_value_heads: 8, vocab_size: 128256, max_position_embeddings: 131072 };
  const dirWith = (text: string) => {
    const d = fresh();
    writeFileSync(join(d, 'config.json'), text);
    return d;
  };

  it.each([
    [{ hidden_size: 0 }, 'field "hidden_size" must be a positive integer, got 0'],
    [{ num_hidden_layers: 0 }, 'field "num_hidden_layers" must be a positive integer, got 0'],
    [{ num_key_value_heads: 0 }, 'field "num_key_value_heads" must be a positive integer, got 0'],
    [{ vocab_size: 0 }, 'field "vocab_size" must be a positive integer, got 0'],
    [{ intermediate_size: 0 }, 'field "intermediate_size" must be a positive integer, got 0'],
    [{ hidden_size: 1e30 }, 'field "hidden_size" must be a positive integer, got 1e+30'],
    [{ num_key_value_heads: 7 }, 'num_attention_heads (32) is not a multiple of num_key_value_heads (7)'],
  ])('%j exits 2 naming the field', async (change, text) => {
    expectBadInput(await run(['models', '--hf-id', dirWith(JSON.stringify({ ...LLAMA, ...change }))]), text);
  });

  it('NaN in a size is named as NaN, not null; NaN elsewhere still parses', async () => {
    const bad = dirWith(JSON.stringify(LLAMA).replace('"hidden_size":4096', '"hidden_size":NaN'));
    expectBadInput(await run(['models', '--hf-id', bad]), 'field "hidden_size" must be a positive integer, got NaN');
    const ok = await run(['models', '--hf-id', dirWith(JSON.stringify(LLAMA).replace('}', ',"time_step_limit":[0,Infinity],"x":NaN}'))]);
    expect(ok.code, ok.stderr).toBe(0);
  });
});
