// Number formatting shared by the console reports and the files people read.

/** 3 significant-ish digits: 3785, 61.2, 7.41. */
export function num(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/** Rounded for files people read and diff; enough digits for any comparison we make. */
export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  const r = Math.round(x * f) / f;
  return Object.is(r, -0) ? 0 : r;
}

/**
 * Rows as aligned text columns, two spaces apart, trailing spaces trimmed. `right` picks the right-aligned
 * columns (numbers); `rule` draws dashes under the first row; `indent` prefixes every line.
 */
export function alignColumns(rows: string[][], opts: { right?: (col: number) => boolean; rule?: boolean; indent?: string } = {}): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const all = opts.rule ? [rows[0]!, widths.map((w) => '-'.repeat(w)), ...rows.slice(1)] : rows;
  const right = opts.right ?? (() => false);
  return all.map((r) => (opts.indent ?? '') + r.map((c, i) => (right(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd());
}
