import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listSystems, loadSystem, recordedEngine, resolveEngine } from '../../src/inputs/systems.js';
import { engineRelease } from '../../src/inputs/dynamo-runtime.js';
import { compareVersions } from '../../src/util/versions.js';
import { InputError, UnsupportedError } from '../../src/util/errors.js';
import { BACKENDS } from '../../src/inputs/types.js';
import { dataPath, referencePath } from '../../src/util/paths.js';
import { REF_FILE_OP } from '../../src/perf/reference.js';
import { systemSchema } from '../../src/inputs/system-schema.js';
import { parse as parseYaml } from 'yaml';

const REF = referencePath('aic-silicon');
if (!existsSync(REF)) console.log(`note: ${REF} absent; skipping the checks against measured data`);

describe('systems registry', () => {
  it('every bundled system file matches the schema (checked here, not at each start-up)', () => {
    const files = readdirSync(dataPath('systems')).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const parsed = systemSchema.safeParse(parseYaml(readFileSync(dataPath('systems', f), 'utf8')));
      expect(parsed.success ? '' : `${f}: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`).toBe('');
    }
  });
  it('the schema rejects a broken system file', () => {
    const good = parseYaml(readFileSync(dataPath('systems', 'h200_sxm.yaml'), 'utf8')) as Record<string, unknown>;
    expect(systemSchema.safeParse(good).success).toBe(true);
    expect(systemSchema.safeParse({ ...good, gpusPerNode: 0 }).success).toBe(false);
    expect(systemSchema.safeParse({ ...good, extra: 1 }).success).toBe(false);
  });
  it('ships the eight systems, each valid and with a default per backend', () => {
    const names = listSystems().map((s) => s.name);
    expect(names).toEqual(['a100_sxm', 'b200_sxm', 'b300_sxm', 'gb200_sxm', 'gb300', 'h100_sxm', 'h200_sxm', 'l40s']);
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
    expect(loadSystem('gb300').gpusPerNode).toBe(72);
    // Blackwell Ultra: more dense FP4 than Blackwell, INT8 tensor throughput mostly gone, 288 GB of HBM3e
    for (const [ultra, base] of [['b300_sxm', 'b200_sxm'], ['gb300', 'gb200_sxm']] as const) {
      expect(loadSystem(ultra).gpu.tflops.nvfp4!).toBeGreaterThan(loadSystem(base).gpu.tflops.nvfp4!);
      expect(loadSystem(ultra).gpu.tflops.int8!).toBeLessThan(loadSystem(base).gpu.tflops.int8! / 10);
      expect(loadSystem(ultra).gpu.memGiB).toBeGreaterThan(260);
    }
    expect(loadSystem('l40s').intraNodeLink).toBe('pcie');
    for (const s of listSystems()) {
      // dense fp8 is twice dense bf16 where present
      if (s.gpu.tflops.fp8) expect(s.gpu.tflops.fp8 / s.gpu.tflops.bfloat16!).toBeCloseTo(2, 1);
      expect(s.gpu.memBwGBs).toBeGreaterThan(500);
    }
  });

  it('looks names up case-insensitively and by alias', () => {
    expect(loadSystem('GB200').name).toBe('gb200_sxm');
    expect(loadSystem('gb300_sxm').name).toBe('gb300');
    expect(loadSystem('B300').name).toBe('b300_sxm');
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
    expect((err as Error).message).toMatch(/unknown system "h300"; accepted: a100_sxm, b200_sxm, b300_sxm, gb200_sxm, gb300, h100_sxm, h200_sxm, l40s/);
  });

  it('returns copies, so callers cannot corrupt the registry', () => {
    loadSystem('h200_sxm').gpu.memGiB = 1;
    expect(loadSystem('h200_sxm').gpu.memGiB).toBeGreaterThan(100);
  });
});

describe('resolveEngine', () => {
  const h200 = loadSystem('h200_sxm');
  it('defaults to the newest release calibrated on its own GEMM, attention and MoE measurements', () => {
    for (const sys of listSystems()) {
      const cal = JSON.parse(readFileSync(dataPath('calibration', `${sys.name}.json`), 'utf8')) as { sources: Record<string, Record<string, unknown>> };
      for (const b of BACKENDS) {
        const own = sys.backends[b]!.versions.filter((v) => ['gemm', 'context_attention', 'generation_attention', 'moe'].every((op) => cal.sources[`${b}/${v}`]?.[op]));
        expect(own.length, `${sys.name} ${b}`).toBeGreaterThan(0);
        expect(resolveEngine(sys, b).version, `${sys.name} ${b}`).toBe(own.sort(compareVersions).at(-1));
      }
    }
    expect(resolveEngine(h200, 'vllm')).toEqual({ backend: 'vllm', version: '0.24.0' });
    expect(resolveEngine(loadSystem('gb300'), 'trtllm').version).toBe('1.3.0rc20');
    expect(resolveEngine(loadSystem('a100_sxm'), 'trtllm').version).toBe('1.0.0');
  });
  it('accepts a listed version, with or without a leading v', () => {
    expect(resolveEngine(h200, 'vllm', '0.19.0').version).toBe('0.19.0');
    expect(resolveEngine(h200, 'vllm', 'v0.14.0').version).toBe('0.14.0');
  });
  it('rejects an unsupported version with exit 4 and the supported list', () => {
    expect(() => resolveEngine(h200, 'vllm', '0.3.0')).toThrow(UnsupportedError);
    expect(() => resolveEngine(h200, 'trtllm', '9.9')).toThrow(
      'trtllm version "9.9" is not supported on h200_sxm; supported: 1.0.0rc3, 1.1.0rc2.post2, 1.2.0rc5, 1.2.0rc6.post1, 1.3.0rc20, 1.3.0rc23 (default 1.3.0rc20)',
    );
    try {
      resolveEngine(h200, 'trtllm', '9.9');
    } catch (e) {
      expect((e as UnsupportedError).exitCode).toBe(4);
    }
    expect.assertions(3);
  });
  it('lists engine releases only: a Dynamo image tag is refused with the release its image ships', () => {
    for (const s of listSystems()) for (const b of BACKENDS) for (const v of s.backends[b]!.versions) expect(engineRelease(b, v), `${s.name} ${b} ${v}`).toBe(v);
    expect(() => resolveEngine(h200, 'trtllm', '0.8.1')).toThrow(/"0.8.1" is a Dynamo runtime image tag, whose image ships trtllm 1.2.0rc6.post1/);
  });
  it('rejects a backend the system lacks', () => {
    const noSglang = { ...h200, backends: { vllm: h200.backends.vllm } };
    expect(() => resolveEngine(noSglang, 'sglang')).toThrow(/backend "sglang" is not supported on h200_sxm; supported: vllm/);
  });
});

describe('recordedEngine', () => {
  const b200 = loadSystem('b200_sxm');
  it('keeps a listed release, maps an image tag to what its image ships, else takes the nearest release or the default', () => {
    expect(recordedEngine(b200, 'vllm', '0.19.0')).toEqual({ backend: 'vllm', version: '0.19.0', as: 'listed' });
    expect(recordedEngine(b200, 'trtllm', '0.8.1')).toMatchObject({ version: '1.2.0rc6.post1', as: 'listed' });
    expect(recordedEngine(b200, 'vllm', '0.20.1')).toMatchObject({ version: '0.19.0', as: 'nearest' }); // newest before it
    expect(recordedEngine(b200, 'vllm', '0.10.0')).toMatchObject({ version: '0.15.1', as: 'nearest' }); // none before: oldest
    expect(recordedEngine(b200, 'vllm', '')).toMatchObject({ version: '0.24.0', as: 'default' });
    expect(recordedEngine(b200, 'sglang', 'nightly-dev')).toMatchObject({ version: '0.5.14', as: 'default' });
  });
});

describe.skipIf(!existsSync(REF))('systems against the measured data', () => {
  const sysName = (dir: string) => (dir === 'gb200' ? 'gb200_sxm' : dir);
  it('lists every system and engine release the kernel tables were measured with, calibrated on its own rows', () => {
    const kernels = join(REF, 'kernels');
    for (const sys of readdirSync(kernels)) {
      const spec = loadSystem(sysName(sys));
      const cal = JSON.parse(readFileSync(dataPath('calibration', `${spec.name}.json`), 'utf8')) as { sources: Record<string, unknown> };
      for (const op of readdirSync(join(kernels, sys))) {
        for (const backend of readdirSync(join(kernels, sys, op))) {
          if (!(BACKENDS as readonly string[]).includes(backend)) continue; // nccl
          for (const v of readdirSync(join(kernels, sys, op, backend))) {
            expect(spec.backends[backend as 'vllm']!.versions, `${sys} ${backend}`).toContain(v);
            // Tables the op model is fitted on (the new op families' tables, e.g. DeepSeek-V4's MoE module, are not yet).
            const fitted = readdirSync(join(kernels, sys, op, backend, v)).filter((f) => REF_FILE_OP[f]);
            if (fitted.length) expect(cal.sources[`${backend}/${v}`], `${sys} ${op} ${backend} ${v}: ${fitted.join(', ')}`).toBeDefined();
          }
        }
      }
    }
  });
  it('runs every end-to-end measurement on our systems as the engine release it recorded', () => {
    // The file has no quoted fields (checked: every line has the header's column count).
    const [header, ...lines] = readFileSync(join(REF, 'e2e/dev.csv'), 'utf8').trim().split('\n');
    const cols = header!.split(',');
    const rows = lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], v])) as Record<string, string>);
    // Image tags of Dynamo releases before 0.6 and a TRT-LLM dev build, whose engine release is not on record.
    const unknownRelease = new Set(['gb200_sxm trtllm 0.5.1-rc0.pre3', 'gb200_sxm sglang 0.5.1-rc0.pre1', 'gb200_sxm trtllm 1.1.0-dev.2']);
    for (const r of rows) {
      const sys = loadSystem(sysName(r.system!));
      const v = r.backend_version!;
      if (!/^\d+\.\d+/.test(v) || unknownRelease.has(`${sys.name} ${r.backend} ${v}`)) continue; // blank, nightly and custom tags
      expect(recordedEngine(sys, r.backend as 'vllm', v).as, `${sys.name} ${r.backend} ${v}`).toBe('listed');
    }
  });
});
