// Making user-supplied text safe where it lands: CSV cells (formula injection), terminal text (control
// characters), file names and XML (the SVG chart).

/** A plain decimal number as text ("-12", "3.5", "-1e-3"): left as it is in a CSV. */
const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** First characters a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV cell, neutralised against formula injection: a string that starts with `=`, `+`, `-`, `@`, tab or
 * carriage return gets a leading single quote, as OWASP recommends, unless it is a plain number (a negative
 * error stays a number). Numbers, booleans and empty cells pass through.
 */
export function csvSafeCell<T>(v: T): T | string {
  if (typeof v !== 'string' || !FORMULA_START.test(v) || NUMBER_TEXT.test(v)) return v;
  return `'${v}`;
}

/** Every cell of a record through `csvSafeCell`. */
export function csvSafeRecord<T extends Record<string, unknown>>(rec: T): Record<keyof T, unknown> {
  return Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, csvSafeCell(v)])) as Record<keyof T, unknown>;
}

// C0 controls and DEL. Tab and newline are legitimate in multi-line text, never in a name.
const CONTROL = /[\u0000-\u001F\u007F]/g;
const CONTROL_BUT_TAB_NEWLINE = /[\u0000-\u0008\u000B-\u001F\u007F]/g;

const escapeChar = (c: string) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;

/**
 * A user-supplied name (model id, experiment name, run label) for a terminal or a text report: control
 * characters are shown escaped (`\x1b`), so they cannot move the cursor, recolour the terminal or fake lines.
 */
export function escapeControl(s: string): string {
  return s.replace(CONTROL, escapeChar);
}

/** Multi-line text: control characters escaped, tabs and newlines kept. */
export function escapeControlKeepLines(s: string): string {
  return s.replace(CONTROL_BUT_TAB_NEWLINE, escapeChar);
}

/** A name bound for a file or folder name: control characters removed. */
export function stripControl(s: string): string {
  return s.replace(CONTROL, '');
}

/**
 * A rendered XML document (the chart's SVG) with the characters XML 1.0 forbids removed: C0 controls other
 * than tab, newline and carriage return. A label that carried one would make the SVG unreadable to any parser.
 */
export function stripNonXml(xml: string): string {
  return xml.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g, '');
}

/** The most characters of a user's value an error message quotes. */
export const QUOTE_MAX = 80;

/**
 * A user's value quoted for an error message: JSON text (strings in double quotes), cut to QUOTE_MAX
 * characters with an ellipsis, so a huge scalar is not echoed whole.
 */
export function quote(v: unknown, max = QUOTE_MAX): string {
  let s: string;
  try {
    s = typeof v === 'string' ? JSON.stringify(v.length > max ? v.slice(0, max) : v) : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** A message with every double-quoted segment longer than QUOTE_MAX cut like `quote` does (values other code quoted). */
export function capQuoted(message: string, max = QUOTE_MAX): string {
  return message.replace(/"[^"\n]*"/g, (q) => (q.length > max ? `${q.slice(0, max - 1)}…` : q));
}
