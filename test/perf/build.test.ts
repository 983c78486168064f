import { describe, expect, it } from 'vitest';
import { readFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { listSystems, loadSystem } from '../../src/inputs/systems.js';
import { filesOfDir, planDirs } from '../../src/perf/build.js';
import { peaksOf } from '../../src/perf/sol.js';
import { OP_SPECS, parseCsv, type OpName } from '../../src/perf/tables.js';
import { dataPath } from '../../src/util/paths.js';
import { parse as parseYaml } from 'yaml';

const root = dataPath('perf');

describe('bundled tables', () => {
  it('rebuild byte-identically (a sample: one calibrated directory per backend family, and every meta.yaml of one system)', () => {
    const sample: [string, string, string][] = [['h200_sxm', 'vllm', '0.19.0'], ['a100_sxm', 'trtllm', '1.0.0']];
    for (const [s, b, v] of sample) {
      const sys = loadSystem(s);
      const d = planDirs(sys).find((x) => x.backend === b && x.version === v)!;
      const files = filesOfDir(sys, d);
      for (const [rel, text] of Object.entries(files)) expect(readFileSync(join(root, rel), 'utf8'), rel).toBe(text);
    }
    const b200 = loadSystem('b200_sxm');
    for (const d of planDirs(b200).filter((x) => x.tablesFrom)) {
      const files = filesOfDir(b200, d);
      for (const [rel, text] of Object.entries(files)) expect(readFileSync(join(root, rel), 'utf8'), rel).toBe(text);
    }
  });

  it('cover every supported (system, backend, version), borrowed ones pointing at a sibling with files', () => {
    for (const sys of listSystems())
      for (const [backend, support] of Object.entries(sys.backends))
        for (const version of support!.versions) {
          const dir = join(root, sys.name, backend, version);
          const meta = parseYaml(readFileSync(join(dir, 'meta.yaml'), 'utf8')) as { calibrated_on: string; borrowed: boolean; tables_from?: string };
          expect(meta.calibrated_on, dir).toMatch(/^(vllm|sglang|trtllm) \S+$/);
          const filesDir = meta.tables_from ? join(root, sys.name, backend, meta.tables_from) : dir;
          expect(existsSync(join(filesDir, 'gemm.csv')), filesDir).toBe(true);
          if (meta.tables_from) expect(meta.borrowed).toBe(true);
        }
  });

  it('stay small: every file under 2 MB, everything under 40 MB', () => {
    let total = 0;
    const walk = (d: string): void => {
      for (const f of readdirSync(d)) {
        const p = join(d, f);
        const st = statSync(p);
        if (st.isDirectory()) walk(p);
        else {
          expect(st.size, p).toBeLessThan(2 * 1024 * 1024);
          total += st.size;
        }
      }
    };
    walk(root);
    expect(total).toBeLessThan(40 * 1024 * 1024);
    for (const f of readdirSync(dataPath('calibration'))) expect(statSync(dataPath('calibration', f)).size, f).toBeLessThanOrEqual(200 * 1024);
  });

  it('never beat the speed of light (every row of every table of one system)', () => {
    for (const s of ['gb200_sxm']) {
      const sys = loadSystem(s);
      const p = peaksOf(sys);
      const dirs = planDirs(sys).filter((d) => !d.tablesFrom);
      for (const d of dirs) {
        const dir = join(root, s, d.backend, d.version);
        for (const op of Object.keys(OP_SPECS) as OpName[]) {
          const spec = OP_SPECS[op];
          const rows = parseCsv(spec, readFileSync(join(dir, spec.file), 'utf8'), spec.file);
          for (const r of rows) {
            const sol = spec.sol(p, r);
            // 5 significant digits in the files.
            if ((r.latency_ms as number) < sol * (1 - 1e-4)) throw new Error(`${dir}/${spec.file}: ${JSON.stringify(r)} below SOL ${sol}`);
          }
        }
      }
    }
  });
});
