// Fit the family-op models (linear and sparse attention, hyper-connections, quantization) of every system and
// write data/calibration/families/<system>.json; `npm run perf:fit` runs it too.
// Usage: npm run perf:fit-families [-- --ref DIR] [-- --system h200_sxm]
import { existsSync } from 'node:fs';
import { referencePath } from '../src/util/paths.js';
import { writeFamilyCalibrations } from '../src/perf/families-fit.js';

const args = process.argv.slice(2);
const argOf = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const refRoot = argOf('--ref') ?? referencePath('aic-silicon', 'kernels');
if (!existsSync(refRoot)) {
  console.error(`no reference tables under ${refRoot}`);
  process.exit(2);
}
const written = await writeFamilyCalibrations(refRoot, argOf('--system'), (line) => console.error(line));
console.log(`wrote ${written.length} family calibration files`);
