// Bad input is exit 2 with one line naming the file or key, quoting at most a short prefix of a bad value, and
// leaving nothing half-written behind.
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerEstimate } from '../../src/cli/commands/estimate.js';
import { registerExp } from '../../src/cli/commands/exp.js';
import { parseCsv } from '../../src/engine/rows.js';
import { checkRowNumbers } from '../../src/engine/rows.js';
import { InputError } from '../../src/util/errors.js';
import { quote } from '../../src/util/text.js';
import { runInProcess } from '../modes/cli.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'inferplan-bad-'));

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
${extra}`;

function expectOneLine(stderr: string): void {
  expect(stderr.trim().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/internal error|\n\s+at /);
}

describe('exp files', () => {
  it('a YAML alias bomb exits 2 naming the file', async () => {
    const dir = tmp();
    const p = join(dir, 'bomb.yaml');
    const levels = 'abcdefghi'.split('');
    writeFileSync(p, [`${levels[0]}: &${levels[0]} ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]`,
      ...levels.slice(1).map((c, i) => `${c}: &${c} [${Array(9).fill(`*${levels[i]}`).join(', ')}]`)].join('\n') + '\n');
    const r = await runInProcess([registerExp], ['exp', '--yaml', p]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${p}: Excessive alias count`);
    expectOneLine(r.stderr);
  });

  it('a huge bad value is quoted by a short prefix only', async () => {
    const dir = tmp();
    const huge = 'x'.repeat(1_000_000);
    const p = join(dir, 'huge.yaml');
    // An implicit YAML key is at most 1024 characters; a value may be any length.
    writeFileSync(p, ONE(`    ${huge.slice(0, 1000)}: 1\n`));
    const r = await runInProcess([registerExp], ['exp', '--yaml', p]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown key "experiments.0.xxxx');
    expect(r.stderr).toContain('…');
    expect(r.stderr.length).toBeLessThan(1000);
    const a = join(dir, 'aic.yaml');
    writeFileSync(a, `exps: [a]\na:\n  serving_mode: agg\n  model_path: Qwen/Qwen3-8B\n  total_gpus: 8\n  system_name: h200_sxm\n  config:\n    worker_config:\n      gemm_quant_mode: ${huge}\n`);
    const r2 = await runInProcess([registerExp], ['exp', '--yaml', a]);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toContain('"xxxx');
    expect(r2.stderr.length).toBeLessThan(1000);
  });

  it('a huge model name is quoted by a short prefix only', async () => {
    const p = join(tmp(), 'model.yaml');
    writeFileSync(p, ONE().replace('model: Qwen/Qwen3-8B', `model: ${'q'.repeat(100_000)}`));
    const r = await runInProcess([registerExp], ['exp', '--yaml', p]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('model "qqqq');
    expect(r.stderr.length).toBeLessThan(1000);
    expectOneLine(r.stderr);
  });

  it('quote() caps a value at 80 characters with an ellipsis', () => {
    expect(quote('short')).toBe('"short"');
    expect(quote('y'.repeat(500))).toHaveLength(80);
    expect(quote('y'.repeat(500)).endsWith('…')).toBe(true);
    expect(quote(12.5)).toBe('12.5');
  });

  it('a huge bad number in a CSV row is quoted by a short prefix only', () => {
    const { rows } = parseCsv(`isl,osl\n${'9'.repeat(100)}z,10\n`);
    let err: unknown;
    try {
      checkRowNumbers(rows[0]!, 'rows.csv line 2');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message.length).toBeLessThan(200);
  });
});

describe('estimate --from-csv --out', () => {
  const CSV = [
    'id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_data_source',
    'a,vllm,,Qwen/Qwen3-32B,h200_sxm,fp8,agg,1024,128,fp8,fp8,8,2,1,1,2,1,x',
  ].join('\n') + '\n';

  it('into a missing directory exits 2 and leaves no temporary file', async () => {
    const dir = tmp();
    const csv = join(dir, 'rows.csv');
    writeFileSync(csv, CSV);
    const out = join(dir, 'no', 'such', 'out.csv');
    const r = await runInProcess([registerEstimate], ['estimate', '--from-csv', csv, '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--out ${out}: cannot write there`);
    expectOneLine(r.stderr);
    expect(readdirSync(dir)).toEqual(['rows.csv']);
  });

  it('onto a directory exits 2 and leaves no temporary file', async () => {
    const dir = tmp();
    const csv = join(dir, 'rows.csv');
    writeFileSync(csv, CSV);
    const out = join(dir, 'outdir');
    mkdirSync(out);
    const r = await runInProcess([registerEstimate], ['estimate', '--from-csv', csv, '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is a directory');
    expectOneLine(r.stderr);
    expect(readdirSync(dir).sort()).toEqual(['outdir', 'rows.csv']);
    expect(readdirSync(out)).toEqual([]);
  });
});
