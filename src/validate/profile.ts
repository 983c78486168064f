// The correction profile written by `configure calibrate` and applied with `--calibration FILE`.
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';
import { InputError } from '../util/errors.js';
import type { CorrectionProfile } from '../engine/types.js';

/**
 * The range a fitted profile may take: factors within 1/20 .. 20 of the model (the bounds `calibrate` fits
 * within; a profile beyond them says the model or the runs are wrong, not that the engine is 50x faster), and
 * at most a second of overhead per engine step.
 */
export const PROFILE_LIMITS = { minFactor: 1 / 20, maxFactor: 20, maxStepOverheadMs: 1000 } as const;

const factor = z.number().min(PROFILE_LIMITS.minFactor).max(PROFILE_LIMITS.maxFactor);

export const correctionProfileSchema = z
  .object({
    kind: z.literal('inferplan-correction-profile'),
    prefill_factor: factor,
    decode_factor: factor,
    step_overhead_ms: z.number().min(0).max(PROFILE_LIMITS.maxStepOverheadMs),
    model: z.string().optional(),
    system: z.string().optional(),
    backend: z.string().optional(),
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
    const key = String(issue.path[0] ?? '');
    const got = raw !== null && typeof raw === 'object' && key in raw ? ` (got ${String((raw as Record<string, unknown>)[key])})` : '';
    const range =
      key === 'prefill_factor' || key === 'decode_factor'
        ? `; factors must lie within ${PROFILE_LIMITS.minFactor} .. ${PROFILE_LIMITS.maxFactor}`
        : key === 'step_overhead_ms'
          ? `; step_overhead_ms must lie within 0 .. ${PROFILE_LIMITS.maxStepOverheadMs}`
          : '; expected keys kind: inferplan-correction-profile, prefill_factor, decode_factor, step_overhead_ms';
    throw new InputError(`--calibration ${path}: ${issue.path.join('.') || 'document'}: ${issue.message}${got}${range}`);
  }
  const p = parsed.data;
  const profile: CorrectionProfile = { prefillFactor: p.prefill_factor, decodeFactor: p.decode_factor, stepOverheadMs: p.step_overhead_ms, source: path };
  if (p.model || p.system || p.backend) profile.fittedFor = { model: p.model, system: p.system, backend: p.backend };
  return profile;
}

/** Where a fitted profile came from; written beside the factors so a profile explains itself. */
export interface ProfileProvenance {
  inferplanVersion: string;
  created: string;
  model: string;
  system: string;
  backend: string;
  backendVersion?: string;
  mode: 'agg' | 'disagg';
  plan?: string;
  fitted: string[];
  runs: Array<{ label: string; source: string; concurrency: number; isl: number; osl: number }>;
  errorBefore: { ttftMapePct: number; tpotMapePct: number; rmsLogError: number };
  errorAfter: { ttftMapePct: number; tpotMapePct: number; rmsLogError: number };
}

const round = (v: number, digits: number) => Number(v.toFixed(digits));

/** The YAML text of a correction profile (readable by `loadCorrectionProfile`). */
export function correctionProfileYaml(p: Omit<CorrectionProfile, 'source'>, prov: ProfileProvenance): string {
  const err = (e: ProfileProvenance['errorBefore']) => ({
    ttft_mape_pct: round(e.ttftMapePct, 2),
    tpot_mape_pct: round(e.tpotMapePct, 2),
    rms_log_error: round(e.rmsLogError, 5),
  });
  const doc = {
    kind: 'inferplan-correction-profile',
    prefill_factor: round(p.prefillFactor, 5),
    decode_factor: round(p.decodeFactor, 5),
    step_overhead_ms: round(p.stepOverheadMs, 4),
    fitted: prov.fitted,
    inferplan_version: prov.inferplanVersion,
    created: prov.created,
    model: prov.model,
    system: prov.system,
    backend: prov.backend,
    ...(prov.backendVersion ? { backend_version: prov.backendVersion } : {}),
    mode: prov.mode,
    ...(prov.plan ? { plan: prov.plan } : {}),
    error_before: err(prov.errorBefore),
    error_after: err(prov.errorAfter),
    runs: prov.runs.map((r) => ({ label: r.label, source: r.source, concurrency: r.concurrency, isl: r.isl, osl: r.osl })),
  };
  return '# Correction profile fitted by `configure calibrate`; apply with --calibration FILE.\n' + YAML.stringify(doc);
}

/**
 * Where a profile's provenance names another model, system or backend than the one it is applied to. `model`
 * and `system` may list several names of the same thing (the name given and the resolved one); any matches.
 */
export function profileMismatches(
  profile: CorrectionProfile,
  target: { model: string | string[]; system: string | string[]; backend: string | string[] },
): string[] {
  const out: string[] = [];
  for (const key of ['model', 'system', 'backend'] as const) {
    const v = profile.fittedFor?.[key];
    const names = ([] as string[]).concat(target[key]);
    if (v !== undefined && !names.some((n) => n.toLowerCase() === v.toLowerCase())) {
      out.push(`calibration ${profile.source} was fitted for ${key} ${v}, applied to ${names[0]}`);
    }
  }
  return out;
}
