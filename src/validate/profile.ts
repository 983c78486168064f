// The correction profile written by `configure calibrate` and applied with `--calibration FILE`.
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';
import { InputError } from '../util/errors.js';
import type { CorrectionProfile } from '../engine/types.js';

export const correctionProfileSchema = z
  .object({
    kind: z.literal('inferplan-correction-profile'),
    prefill_factor: z.number().positive(),
    decode_factor: z.number().positive(),
    step_overhead_ms: z.number().min(0),
  })
  .passthrough();

export function loadCorrectionProfile(path: string): CorrectionProfile {
  let raw: unknown;
  try {
    raw = YAML.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new InputError(`--calibration ${path}: cannot read a YAML profile (${(e as Error).message.split('\n')[0]})`);
  }
  const parsed = correctionProfileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError(
      `--calibration ${path}: ${issue.path.join('.') || 'document'}: ${issue.message}; expected keys kind: inferplan-correction-profile, prefill_factor, decode_factor, step_overhead_ms`,
    );
  }
  const p = parsed.data;
  return { prefillFactor: p.prefill_factor, decodeFactor: p.decode_factor, stepOverheadMs: p.step_overhead_ms, source: path };
}
