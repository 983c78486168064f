// Prints how long the results directory takes to build and write (not a test).
// Run: npx tsx test/output/measure.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderParetoChart } from '../../src/output/chart.js';
import { buildResultsTree, writeResultsDir } from '../../src/output/results-dir.js';
import { fixture } from './fixtures.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const { result, ctx } = fixture();
const opts = { reportText: 'report\n', json: {} };
let t = performance.now();
await renderParetoChart(result);
const first = performance.now() - t;
const chart: number[] = [];
const tree: number[] = [];
const write: number[] = [];
const dir = mkdtempSync(join(tmpdir(), 'inferplan-measure-'));
for (let i = 0; i < 7; i++) {
  t = performance.now();
  await renderParetoChart(result);
  chart.push(performance.now() - t);
  t = performance.now();
  const { files } = await buildResultsTree(result, ctx, opts);
  tree.push(performance.now() - t);
  t = performance.now();
  await writeResultsDir(dir, result, ctx, { ...opts, force: true });
  write.push(performance.now() - t);
  if (i === 0) console.log(`files per results directory: ${files.length}`);
}
rmSync(dir, { recursive: true, force: true });
console.log(`first chart render (imports vega, vega-lite, resvg): ${first.toFixed(0)} ms`);
console.log(`chart render, median of 7: ${median(chart).toFixed(0)} ms`);
console.log(`whole tree in memory (chart included), median of 7: ${median(tree).toFixed(0)} ms`);
console.log(`writeResultsDir (build + atomic write), median of 7: ${median(write).toFixed(0)} ms`);
