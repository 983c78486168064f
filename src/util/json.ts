// Parsed JSON is `unknown` until checked; these narrow it.
export type JsonObject = Record<string, unknown>;

/** A plain JSON object (not null, not an array). */
export function isObj(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
