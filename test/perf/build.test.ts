import { describe, expect, it } from 'vitest';
import { readFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { listSystems, loadSystem } from '../../src/inputs/systems.js';
import { filesOfDir, planDirs } from '../../src/perf/build.js';
import { peaksOf } from '../../src/perf/sol.js';
import { OP_NAMES, PACKED_FILE, readPacked } from '../../src/perf/tables.js';
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
      for (const [rel, content] of Object.entries(files)) expect(readFileSync(join(root, rel)).equals(Buffer.from(content)), rel).toBe(true);
    }
    const b200 = loadSystem('b200_sxm');
    for (const d of planDirs(b200).filter((x) => x.tablesFrom)) {
      const files = filesOfDir(b200, d);
      for (const [rel, content] of Object.entries(files)) expect(readFileSync(join(root, rel)).equals(Buffer.from(content)), rel).toBe(true);
    }
  });

  it('cover every supported (system, backend, version) of every calibrated system, borrowed ones pointing at a sibling with files', () => {
    // perf:build skips a system until perf:fit has written its coefficients.
    const calibrated = listSystems().filter((s) => existsSync(dataPath('calibration', `${s.name}.json`)));
    expect(calibrated.length).toBeGreaterThan(0);
    for (const sys of calibrated)
      for (const [backend, support] of Object.entries(sys.backends))
        for (const version of support!.versions) {
          const dir = join(root, sys.name, backend, version);
          const meta = parseYaml(readFileSync(join(dir, 'meta.yaml'), 'utf8')) as { calibrated_on: string; borrowed: boolean; tables_from?: string };
          expect(meta.calibrated_on, dir).toMatch(/^(vllm|sglang|trtllm) \S+$/);
          const filesDir = meta.tables_from ? join(root, sys.name, backend, meta.tables_from) : dir;
          expect(existsSync(join(filesDir, PACKED_FILE)), filesDir).toBe(true);
          if (meta.tables_from) expect(meta.borrowed).toBe(true);
        }
  });

  // Budget: a directory with its own tables packs to about 0.17 MB (h200_sxm: 0.16 MB; 45k cells at 3 bytes, plus
  // keys and axes). 8 systems x 3 engines x ~3 own calibrations each (~72 directories, the releases planned) come
  // to about 12 MB; the budget leaves room for new op families and finer grids (x1.5) on top.
  it('stay small: every file under 1 MB, everything under 20 MB', () => {
    let total = 0;
    const walk = (d: string): void => {
      for (const f of readdirSync(d)) {
        const p = join(d, f);
        const st = statSync(p);
        if (st.isDirectory()) walk(p);
        else {
          expect(st.size, p).toBeLessThan(1024 * 1024);
          total += st.size;
        }
      }
    };
    walk(root);
    expect(total).toBeLessThan(20 * 1024 * 1024);
  });

  // Coefficients only: 4-95 KB per calibrated engine release (its op groups' fitted surfaces), and a system has up
  // to nine releases with measurements of their own (B200: 468 KB); 640 KB leaves room for the new op families.
  it('are built from small coefficient files (each under 640 KB)', () => {
    for (const f of readdirSync(dataPath('calibration'))) expect(statSync(dataPath('calibration', f)).size, f).toBeLessThanOrEqual(640 * 1024);
  });

  it('never beat the speed of light (every row of every table of one system)', () => {
    for (const s of ['gb200_sxm']) {
      const sys = loadSystem(s);
      const p = peaksOf(sys);
      const dirs = planDirs(sys).filter((d) => !d.tablesFrom);
      for (const d of dirs) {
        const file = join(root, s, d.backend, d.version, PACKED_FILE);
        const packed = readPacked(readFileSync(file), file);
        for (const op of OP_NAMES) {
          const t = packed.get(op)!;
          for (let i = 0; i < t.keys.length; i++)
            for (const r of t.rowsOf(i)) {
              const sol = t.spec.sol(p, r);
              // 5 significant digits in the files.
              if ((r.latency_ms as number) < sol * (1 - 1e-4)) throw new Error(`${file} ${op}: ${JSON.stringify(r)} below SOL ${sol}`);
            }
        }
      }
    }
  });
});
