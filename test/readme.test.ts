// The README's example outputs are the real ones: regenerate them and compare (scripts/readme-examples.ts).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXAMPLES, README, commandLine, normalize, regions, renderAll } from '../scripts/readme-examples.js';

const FIX = 'README.md example output is stale: run `npm run docs:examples`';

describe('README.md examples', () => {
  it('placeholders hide what varies between runs', () => {
    const line = 'evaluated agg 324 candidates; search took 207 ms (26452 candidates/s)';
    expect(normalize(line)).toBe('evaluated agg 324 candidates; search took <ms> ms (<rate> candidates/s)');
    expect(normalize('written 2026-12-04 to /tmp/x/out  ', ['/tmp/x'])).toBe('written <date> to ./out');
  });

  it('stays a page for users: under 300 lines (history belongs in docs/)', () => {
    expect(readFileSync(README, 'utf8').trimEnd().split('\n').length).toBeLessThan(300);
  });

  it('every example is in README.md, and every README example is current', { timeout: 180_000 }, async () => {
    const text = readFileSync(README, 'utf8');
    const rendered = await renderAll(text);
    const found = regions(text);
    for (const ex of EXAMPLES) {
      expect(found.get(ex.name), `${FIX} (example "${ex.name}")`).toContain(commandLine(ex));
      expect(found.get(ex.name), `${FIX} (example "${ex.name}")`).toBe(rendered.get(ex.name));
    }
  });
});
