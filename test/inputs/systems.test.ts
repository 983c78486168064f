import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listSystems, loadSystem, resolveEngine } from '../../src/inputs/systems.js';
import { InputError, UnsupportedError } from '../../src/util/errors.js';
import { BACKENDS } from '../../src/inputs/types.js';
import { referencePath } from '../../src/util/paths.js';

const REF = referencePath('aic-silicon');
if (!existsSync(REF)) console.log(`note: ${REF} absent; skipping the checks against measured data`);

describe('systems registry', () => {
  it('ships the six systems, each valid and with a default per backend', () => {
    const names = listSystems().map((s) => s.name);
    expect(names).toEqual(['a100_sxm', 'b200_sxm', 'gb200_sxm', 'h100_sxm', 'h200_sxm', 'l40s']);
    for (const s of listSystems()) {
      for (const b of BACKENDS) {
        const sup = s.backends[b];
        expect(sup, `${s.name} ${b}`).toBeDefined();
        expect(sup!.versions).toContain(sup!.default);
      }
    }
  });

  it('has the chip capabilities right: FP8 from Ada/Hopper on, FP4 only on Blackwell, NVL72 domain', () => {
    expect(loadSystem('a100_sxm').gpu.tflops.fp8).toBeUndefined();
    expect(loadSystem('l40s').gpu.tflops.fp8).toBeGreaterThan(0);
    expect(loadSystem('h100_sxm').gpu.tflops.nvfp4).toBeUndefined();
    expect(loadSystem('b200_sxm').gpu.tflops.nvfp4).toBe(9000);
    expect(loadSystem('gb200_sxm').gpusPerNode).toBe(72);
    expect(loadSystem('l40s').intraNodeLink).toBe('pcie');
    for (const s of listSystems()) {
      // dense fp8 is twice dense bf16 where present
      if (s.gpu.tflops.fp8) expect(s.gpu.tflops.fp8 / s.gpu.tflops.bfloat16!).toBeCloseTo(2, 1);
      expect(s.gpu.memBwGBs).toBeGreaterThan(500);
    }
  });

  it('looks names up case-insensitively and by alias', () => {
    expect(loadSystem('GB200').name).toBe('gb200_sxm');
    expect(loadSystem('H200-SXM').name).toBe('h200_sxm');
    expect(loadSystem(' h100_sxm ').name).toBe('h100_sxm');
  });

  it('rejects an unknown system with exit 2 and the accepted names', () => {
    let err: unknown;
    try {
      loadSystem('h300');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).exitCode).toBe(2);
    expect((err as Error).message).toMatch(/unknown system "h300"; accepted: a100_sxm, b200_sxm, gb200_sxm, h100_sxm, h200_sxm, l40s/);
  });

  it('returns copies, so callers cannot corrupt the registry', () => {
    loadSystem('h200_sxm').gpu.memGiB = 1;
    expect(loadSystem('h200_sxm').gpu.memGiB).toBeGreaterThan(100);
  });
});

describe('resolveEngine', () => {
  const h200 = loadSystem('h200_sxm');
  it('defaults to the Dynamo 0.9 versions', () => {
    expect(resolveEngine(h200, 'vllm')).toEqual({ backend: 'vllm', version: '0.12.0' });
    expect(resolveEngine(h200, 'sglang').version).toBe('0.5.6.post2');
    expect(resolveEngine(h200, 'trtllm').version).toBe('1.2.0rc5');
    expect(resolveEngine(loadSystem('a100_sxm'), 'trtllm').version).toBe('1.0.0');
    expect(resolveEngine(loadSystem('l40s'), 'sglang').version).toBe('0.5.5.post3');
    expect(resolveEngine(loadSystem('gb200'), 'trtllm').version).toBe('1.2.0rc5');
  });
  it('accepts a listed version, with or without a leading v', () => {
    expect(resolveEngine(h200, 'vllm', '0.19.0').version).toBe('0.19.0');
    expect(resolveEngine(h200, 'vllm', 'v0.14.0').version).toBe('0.14.0');
  });
  it('rejects an unsupported version with exit 4 and the supported list', () => {
    expect(() => resolveEngine(h200, 'vllm', '0.3.0')).toThrow(UnsupportedError);
    expect(() => resolveEngine(h200, 'trtllm', '9.9')).toThrow(
      'trtllm version "9.9" is not supported on h200_sxm; supported: 0.8.1.post1, 1.0.0rc3, 1.1.0rc2.post2, 1.2.0rc5 (default 1.2.0rc5)',
    );
    try {
      resolveEngine(h200, 'trtllm', '9.9');
    } catch (e) {
      expect((e as UnsupportedError).exitCode).toBe(4);
    }
    expect.assertions(3);
  });
  it('rejects a backend the system lacks', () => {
    const noSglang = { ...h200, backends: { vllm: h200.backends.vllm } };
    expect(() => resolveEngine(noSglang, 'sglang')).toThrow(/backend "sglang" is not supported on h200_sxm; supported: vllm/);
  });
  it('lists the versions Dynamo 0.9 users name', () => {
    const has = (sys: string, b: 'vllm' | 'sglang' | 'trtllm', v: string) => expect(loadSystem(sys).backends[b]!.versions, `${sys} ${b}`).toContain(v);
    for (const s of ['h100_sxm', 'h200_sxm']) has(s, 'vllm', '0.12.0');
    for (const s of ['b200_sxm', 'h100_sxm', 'h200_sxm']) has(s, 'sglang', '0.5.6.post2');
    has('l40s', 'sglang', '0.5.5.post3');
    for (const s of ['a100_sxm', 'l40s']) has(s, 'trtllm', '1.0.0');
    for (const s of ['b200_sxm', 'gb200_sxm']) for (const v of ['1.0.0rc6', '1.2.0rc5']) has(s, 'trtllm', v);
    for (const s of ['h100_sxm', 'h200_sxm']) for (const v of ['1.0.0rc3', '1.2.0rc5']) has(s, 'trtllm', v);
  });
});

/**
 * What the reference data holds that the project does not support yet, each entry naming the issue that
 * removes it ("<system>" for a whole system, "<system> <backend> <version>" for a release). The test prints
 * the list, fails on an entry that is supported after all (so the list only shrinks), and fails on anything
 * unsupported that is not listed.
 */
const NOT_YET_SUPPORTED: Record<string, string> = Object.fromEntries(
  [
    'b300_sxm', 'gb300',
    ...['b200_sxm', 'gb200_sxm', 'h100_sxm', 'h200_sxm'].flatMap((s) =>
      ['sglang 0.5.10', 'sglang 0.5.14', 'sglang 0.5.16', 'trtllm 1.3.0rc20', 'trtllm 1.3.0rc23', 'vllm 0.24.0'].map((r) => `${s} ${r}`)),
    'l40s sglang 0.5.14', 'l40s trtllm 1.3.0rc20', 'l40s trtllm 1.3.0rc23', 'l40s vllm 0.24.0',
  ].map((k) => [k, 'issue 33 (releases)']),
);

describe.skipIf(!existsSync(REF))('systems against the measured data', () => {
  const sysName = (dir: string) => (dir === 'gb200' ? 'gb200_sxm' : dir);
  it('covers every engine version the kernel tables were measured with, but for the listed ones', () => {
    const kernels = join(REF, 'kernels');
    const known = new Set(listSystems().map((s) => s.name));
    const unsupported = new Set<string>();
    for (const sys of readdirSync(kernels)) {
      for (const op of readdirSync(join(kernels, sys))) {
        for (const backend of readdirSync(join(kernels, sys, op))) {
          if (!(BACKENDS as readonly string[]).includes(backend)) continue; // nccl
          for (const v of readdirSync(join(kernels, sys, op, backend))) {
            const name = sysName(sys);
            if (!known.has(name)) unsupported.add(name);
            else if (!loadSystem(name).backends[backend as 'vllm']?.versions.includes(v)) unsupported.add(`${name} ${backend} ${v}`);
          }
        }
      }
    }
    const listed = Object.keys(NOT_YET_SUPPORTED);
    if (listed.length) console.log(`not yet supported (${listed.length}):\n${listed.map((k) => `  ${k}: ${NOT_YET_SUPPORTED[k]}`).join('\n')}`);
    expect([...unsupported].filter((k) => !(k in NOT_YET_SUPPORTED)), 'unsupported and not listed').toEqual([]);
    expect(listed.filter((k) => !unsupported.has(k)), 'listed but supported now: remove from the list').toEqual([]);
  });
  it('covers the released engine versions of the end-to-end measurements on our systems', () => {
    // The file has no quoted fields (checked: every line has the header's column count).
    const [header, ...lines] = readFileSync(join(REF, 'e2e/dev.csv'), 'utf8').trim().split('\n');
    const cols = header!.split(',');
    const rows = lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], v])) as Record<string, string>);
    const ours = new Set(listSystems().map((s) => s.name));
    for (const r of rows) {
      const sys = sysName(r.system!);
      const v = r.backend_version!;
      if (!ours.has(sys) || !/^\d+\.\d+/.test(v)) continue; // B300/GB300, blank, nightly and custom tags
      expect(loadSystem(sys).backends[r.backend as 'vllm']!.versions, `${sys} ${r.backend}`).toContain(v);
    }
  });
});
