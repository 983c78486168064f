// Output hygiene: CSV cells neutralised against formula injection (numbers kept as numbers), control characters
// in user-supplied names escaped in text, removed from file names, and harmless in the SVG chart.
import { describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { buildCandidatesCsv } from '../../src/output/csv.js';
import { renderParetoChart } from '../../src/output/chart.js';
import { renderParameters } from '../../src/output/console.js';
import { resultsSlug, safeSegment } from '../../src/output/naming.js';
import { csvSafeCell, escapeControl, stripControl, stripNonXml } from '../../src/util/text.js';
import { fixture } from './fixtures.js';

const NASTY = 'evil/\u0007<b>&"\u001b[31m\u0000x\r\n=1';

describe('csvSafeCell', () => {
  it.each(['=1+1', '+cmd', '-cmd', '@SUM(A1)', '\tx', '\rx', '=HYPERLINK("http://x")'])('neutralises %j', (v) => {
    expect(csvSafeCell(v)).toBe(`'${v}`);
  });
  it.each(['-3', '-0.5', '+4', '-1e-3', 'abc', '', 'a=b'])('leaves %j alone', (v) => {
    expect(csvSafeCell(v)).toBe(v);
  });
  it('leaves numbers, booleans and absent cells alone', () => {
    expect(csvSafeCell(-3)).toBe(-3);
    expect(csvSafeCell(true)).toBe(true);
    expect(csvSafeCell(undefined)).toBeUndefined();
  });
});

describe('candidate CSVs', () => {
  it('a formula-looking model id is written quoted with a leading apostrophe; numbers stay numbers', () => {
    const { result, ctx } = fixture();
    const inputs = { ...result.inputs, model: '=cmd|"/c calc"!A1' };
    const csv = buildCandidatesCsv('agg', result.agg!.top, inputs, ctx);
    const rows = parse(csv, { columns: true }) as Record<string, string>[];
    expect(rows[0].model).toBe(`'=cmd|"/c calc"!A1`);
    expect(Number(rows[0].ttft)).toBeGreaterThan(0);
    for (const r of rows) for (const v of Object.values(r)) expect(v).not.toMatch(/^[=+@\t\r]/);
  });
});

describe('control characters in names', () => {
  it('are escaped in text output', () => {
    expect(escapeControl('a\u001b[31mb\u0007\u007f')).toBe('a\\x1b[31mb\\x07\\x7f');
    const { result } = fixture();
    const text = renderParameters({ ...result, inputs: { ...result.inputs, model: NASTY } });
    expect(text).not.toMatch(/[\u0000\u0007\u001b\r]/);
    expect(text).toContain('evil/\\x07<b>&"\\x1b[31m\\x00x\\x0d\\x0a=1');
    // One line per parameter line: a CR or LF in a name cannot fake a line.
    expect(text.split('\n')).toHaveLength(2);
  });

  it('are removed from file and folder names', () => {
    expect(stripControl('a\u0000b\u001fc\u007f\td\n')).toBe('abcd');
    expect(safeSegment(NASTY)).toBe('evil--b31mx1');
    const { result } = fixture();
    expect(resultsSlug({ ...result.inputs, model: NASTY })).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it('the chart renders (SVG and PNG) with XML-special and control characters in the model id', async () => {
    const { result } = fixture();
    const nasty = { ...result, inputs: { ...result.inputs, model: NASTY } };
    const { svg, png } = await renderParetoChart(nasty);
    expect(png.length).toBeGreaterThan(1000);
    expect(svg).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/);
    expect(svg).toContain('evil/\\x07&lt;b&gt;&amp;');
    expect(stripNonXml('a\u0001b\tc\n')).toBe('ab\tc\n');
  }, 60_000);
});
