// aiconfigurator v0.6 command lines, with the program name replaced by `configure`, run unchanged.
// The `default` case spawns the real entry point (src/cli/main.ts); the others run in process through the same
// normalizeArgv, so the `cli` word and the underscore flags are exercised either way.
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerExp } from '../../src/cli/commands/exp.js';
import { runCli, runInProcess } from './cli.js';

// In-process runs still go through normalizeArgv (the `cli` word and underscore flags).
const runExp = (args: string[]) => runInProcess([registerExp], args);

describe('aiconfigurator v0.6 command lines', () => {
  it('`cli default --hf_id ... --total_gpus ... --backend_version ... --save_dir ...` runs and saves', async () => {
    const out = mkdtempSync(join(tmpdir(), 'inferplan-compat-'));
    const r = runCli([
      'cli', 'default', '--hf_id', 'Qwen/Qwen3-8B', '--system', 'h200_sxm', '--total_gpus', '2', '--backend', 'vllm',
      '--backend_version', '0.12.0', '--isl', '2000', '--osl', '200', '--ttft', '1000', '--tpot', '20', '--save_dir', out,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const dirs = readdirSync(out).filter((d) => !d.startsWith('.'));
    expect(dirs).toHaveLength(1);
    const exp = join(out, dirs[0]!, 'agg', 'exp_config.yaml');
    expect(existsSync(exp)).toBe(true);
    // The experiment file `default` wrote runs unchanged in `exp` (aiconfigurator spelling of the flag).
    const again = await runExp(['cli', 'exp', '--yaml_path', exp]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/best overall: agg/);
  });

  it('`cli exp --yaml_path` runs an aiconfigurator experiment file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'inferplan-compat-'));
    const file = join(dir, 'exps.yaml');
    writeFileSync(
      file,
      `exps:
  - exp_agg
exp_agg:
  mode: "patch"
  serving_mode: "agg"
  model_name: "Qwen/Qwen3-8B"
  total_gpus: 2
  system_name: "h200_sxm"
  backend_name: "vllm"
  backend_version: "0.12.0"
  profiles: []
  isl: 2000
  osl: 200
  ttft: 2000.0
  tpot: 50
  config:
    worker_config:
      tp_list: [1, 2]
      pp_list: [1]
`,
    );
    const r = await runExp(['cli', 'exp', '--yaml_path', file]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^exp_agg\s+agg\s+Qwen\/Qwen3-8B\s+h200_sxm\s+vllm 0\.12\.0/m);
  });

  it('unknown flags are usage errors (exit 2), as in argparse', async () => {
    const r = await runExp(['cli', 'exp', '--yaml_path', 'x.yaml', '--no_such_flag']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown option '--no-such-flag'/);
  });
});
