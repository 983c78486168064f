// Write data/perf/ from the system specs and data/calibration/ coefficients. Deterministic: rerunning
// gives byte-identical files. Usage: npm run perf:build [-- --system h200_sxm] (one system's folder only)
import { mkdirSync, rmSync, writeFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { listSystems } from '../src/inputs/systems.js';
import { dataPath } from '../src/util/paths.js';
import { filesOfDir, planDirs } from '../src/perf/build.js';

const args = process.argv.slice(2);
const only = args.includes('--system') ? args[args.indexOf('--system') + 1] : undefined;
const root = dataPath('perf');
mkdirSync(root, { recursive: true });
// Remove previously generated system folders (README.md and other files at the root stay).
for (const d of readdirSync(root))
  if (statSync(join(root, d)).isDirectory() && (!only || d === only)) rmSync(join(root, d), { recursive: true, force: true });
let bytes = 0;
let dirs = 0;
let own = 0;
for (const sys of listSystems()) {
  if (only && sys.name !== only) continue;
  for (const d of planDirs(sys)) {
    const files = filesOfDir(sys, d);
    for (const [rel, text] of Object.entries(files)) {
      const p = join(root, rel);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, text);
      bytes += Buffer.byteLength(text);
    }
    dirs++;
    if (!d.tablesFrom) own++;
    console.error(`${d.system} ${d.backend} ${d.version}: ${d.tablesFrom ? `borrows ${d.tablesFrom}` : 'tables'} (calibrated on ${d.plan.calibratedOn})`);
  }
}
console.log(`wrote ${dirs} table directories (${own} with files), ${(bytes / 1048576).toFixed(1)} MB under data/perf`);
