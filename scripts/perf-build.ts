// Write data/perf/ from the system specs and data/calibration/ coefficients. Deterministic: rerunning
// gives byte-identical files. A system without a calibration file is skipped (its tables would be the bare
// roofline), with a message.
// Usage: npm run perf:build [-- --system h200_sxm]   one system's folder only
//        npm run perf:build -- --csv OUT [--system S] the same tables as one CSV per op (the measured-table
//                                                     format) under OUT/<system>/<backend>/<version>/, for tools
//                                                     that read CSV (perf compare, spreadsheets); data/perf is left as is
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { listSystems } from '../src/inputs/systems.js';
import { dataPath } from '../src/util/paths.js';
import { csvFiles, filesOfDir, planDirs, synthesize } from '../src/perf/build.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = opt('--system');
const csvOut = opt('--csv');
const root = csvOut ? resolve(csvOut) : dataPath('perf');
mkdirSync(root, { recursive: true });
const systems = listSystems().filter((s) => !only || s.name === only);
if (only && systems.length === 0) throw new Error(`no system ${only} under data/systems`);
const calibrated = systems.filter((s) => existsSync(dataPath('calibration', `${s.name}.json`)));
for (const s of systems)
  if (!calibrated.includes(s)) console.error(`${s.name}: skipped, no data/calibration/${s.name}.json (run npm run perf:fit first)`);
let bytes = 0;
let dirs = 0;
let own = 0;
for (const sys of calibrated) {
  // Every file of the system is made before its old folder is removed, so a failure leaves the tables as they were.
  const files: Record<string, string | Buffer> = {};
  for (const d of planDirs(sys)) {
    if (csvOut && !d.tablesFrom) {
      const t = synthesize(sys, d.backend, d.version);
      const base = `${d.system}/${d.backend}/${d.version}`;
      files[`${base}/meta.yaml`] = t.meta;
      for (const [f, text] of Object.entries(csvFiles(t.tables))) files[`${base}/${f}`] = text;
    } else Object.assign(files, filesOfDir(sys, d));
    dirs++;
    if (!d.tablesFrom) own++;
    console.error(`${d.system} ${d.backend} ${d.version}: ${d.tablesFrom ? `borrows ${d.tablesFrom}` : 'tables'} (calibrated on ${d.plan.calibratedOn})`);
  }
  // Remove the previously generated folder of the system (README.md and other files at the root stay).
  if (!csvOut) rmSync(join(root, sys.name), { recursive: true, force: true });
  for (const [rel, content] of Object.entries(files)) {
    const p = join(root, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, content);
    bytes += typeof content === 'string' ? Buffer.byteLength(content) : content.length;
  }
}
console.log(`wrote ${dirs} table directories (${own} with files), ${(bytes / 1048576).toFixed(1)} MB under ${root}`);
