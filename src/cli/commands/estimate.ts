// `configure estimate`: predict one layout (agg or disagg) from flags, or a CSV of measured-run rows.
import { readFileSync } from 'node:fs';
import { progress } from '../../util/progress.js';
import { checkOutputPath, writeFileAtomic } from '../../util/files.js';
import { Command, Option } from 'commander';
import { stringify } from 'csv-stringify/sync';
import { gpuCount, log, positiveInt, printJson, runAction } from '../common.js';
import { addGlobalOptions, addModelSystemOptions, addSpeculationOptions, addWorkloadOptions, readCommonInputs, refuseAutoNextn, relaxModelSystem, slaConfidenceParser } from '../options.js';
import { valueAtConfidence } from '../../engine/bands.js';
import { loadEngineContext, resolveRowInputs } from '../context.js';
import { calibrationText } from '../../search/search.js';
import { bandBasisFor, basisLines, estimateAgg, estimateDisagg, isRefusal, profileOf, trtllmGenMoe } from '../../engine/index.js';
import { checkRowNumbers, estimateRow, parseCsv, PREDICTED_COLUMNS, predictedCells } from '../../engine/rows.js';
import { speculationLabel, tokensPerStep } from '../../engine/speculation.js';
import type { AggConfig, DisaggConfig, EngineContext, Estimate, MemoryPicture, MetricBands, PoolConfig, ServingMetrics, Speculation, TtftParts } from '../../engine/types.js';
import { InputError, UnsupportedError } from '../../util/errors.js';
import { csvSafeRecord, escapeControl } from '../../util/text.js';

type Opts = Record<string, unknown>;

export const LAYOUT_FLAGS = ['tp', 'pp', 'dp', 'moe-tp', 'moe-ep', 'batch-size', 'max-num-tokens'] as const;

/** A layout flag's parser: the parallel sizes count GPUs (at most one deployment's), the others are counts. */
export function layoutFlagParser(flag: string) {
  return /-(batch-size|max-num-tokens)$/.test(flag) ? positiveInt(flag) : gpuCount(flag);
}

function camel(s: string): string {
  return s.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
}

export function registerEstimate(program: Command): void {
  const cmd = program
    .command('estimate')
    .description('predict TTFT, TPOT and throughput of one serving layout (or of every row of a CSV)');
  addModelSystemOptions(cmd);
  // --hf-id / --system are required for single estimates only; the CSV rows carry their own.
  relaxModelSystem(cmd);
  addWorkloadOptions(cmd);
  addSpeculationOptions(cmd);
  cmd.addOption(new Option('--mode <mode>', 'agg or disagg').choices(['agg', 'disagg']).default('agg'));
  for (const f of LAYOUT_FLAGS) {
    cmd.option(`--${f} <n>`, `agg: ${f.replace(/-/g, ' ')}`, layoutFlagParser(`--${f}`));
    cmd.option(`--prefill-${f} <n>`, `disagg prefill pool: ${f.replace(/-/g, ' ')}`, layoutFlagParser(`--prefill-${f}`));
    cmd.option(`--decode-${f} <n>`, `disagg decode pool: ${f.replace(/-/g, ' ')}`, layoutFlagParser(`--decode-${f}`));
  }
  cmd
    .option('--prefill-workers <n>', 'disagg: prefill workers (default 1)', gpuCount('--prefill-workers'))
    .option('--decode-workers <n>', 'disagg: decode workers (default 1)', gpuCount('--decode-workers'))
    .option('--replicas <n>', 'identical replicas (disagg: xPyD units) the clients spread over (default 1)', gpuCount('--replicas'))
    .option('--concurrency <n>', 'clients in the closed loop over all replicas, as `default` reports it (default: batch size x replicas; disagg: decode batch x decode workers x replicas)', positiveInt('--concurrency'))
    .option('--decode-system <name>', 'disagg: system of the decode pool when it differs')
    .option('--breakdown', 'print where the mean TTFT goes and the time per op type of a prefill and a decode step')
    .option('--from-csv <file>', 'estimate every row of a CSV in the e2e reference format (a malformed number in a row exits 2)')
    .option('--out <file>', 'with --from-csv: write the rows with predictions here (default: stdout)')
    .option('--force', 'with --out: replace an existing file')
    .option('--sla-confidence <p>', 'also report TTFT and TPOT at this quantile of their error bands (CSV: ttft_ms_at_confidence, tpot_ms_at_confidence), as default judges targets with it', slaConfidenceParser);
  addGlobalOptions(cmd);
  cmd.action(async (opts: Opts) => runAction(opts, () => (opts.fromCsv ? fromCsv(opts) : single(opts))));
}

function num(o: Opts, key: string): number | undefined {
  return o[camel(key)] as number | undefined;
}

function aggConfig(o: Opts, ctx: EngineContext): AggConfig {
  const tp = num(o, 'tp') ?? 1;
  const dp = num(o, 'dp') ?? 1;
  const moeEp = num(o, 'moe-ep') ?? 1;
  return {
    tp, pp: num(o, 'pp') ?? 1, dp, moeEp, moeTp: num(o, 'moe-tp') ?? Math.max(1, (tp * dp) / moeEp),
    batchSize: num(o, 'batch-size') ?? 64,
    maxNumTokens: num(o, 'max-num-tokens') ?? profileOf(ctx).maxNumTokens,
  };
}

export function poolConfig(o: Opts, side: 'prefill' | 'decode', ctx: EngineContext, isl: number): PoolConfig {
  const g = (k: string) => num(o, `${side}-${k}`);
  const tp = g('tp') ?? 1;
  const dp = g('dp') ?? 1;
  const moeEp = g('moe-ep') ?? 1;
  const batch = g('batch-size') ?? (side === 'prefill' ? 1 : 64);
  const tokens = profileOf(ctx).maxNumTokens;
  return {
    tp, pp: g('pp') ?? 1, dp, moeEp, moeTp: g('moe-tp') ?? Math.max(1, (tp * dp) / moeEp),
    batchSize: batch, workers: num(o, `${side}-workers`) ?? 1,
    maxNumTokens: g('max-num-tokens') ?? (side === 'prefill' ? Math.max(tokens, batch * isl) : tokens),
  };
}

async function single(o: Opts): Promise<number> {
  if (!o.hfId) throw new InputError('--hf-id is required (or --from-csv FILE)');
  if (!o.system) throw new InputError('--system is required (or --from-csv FILE)');
  if (o.out !== undefined) throw new InputError('--out writes the rows of --from-csv FILE; add --from-csv, or drop --out to print the estimate');
  const inputs = readCommonInputs(o);
  refuseAutoNextn(inputs.speculation, 'estimate');
  const ctx = await loadEngineContext(inputs, { decodeSystem: o.decodeSystem as string | undefined });
  const conc = o.concurrency as number | undefined;
  const replicas = o.replicas as number | undefined;
  const breakdown = Boolean(o.breakdown);
  let est;
  if (o.mode === 'disagg') {
    const cfg: DisaggConfig = {
      prefill: poolConfig(o, 'prefill', ctx, inputs.isl),
      decode: poolConfig(o, 'decode', ctx, inputs.isl),
    };
    est = estimateDisagg(ctx, cfg, { concurrency: conc, replicas, breakdown });
  } else {
    est = estimateAgg(ctx, aggConfig(o, ctx), { concurrency: conc, replicas, breakdown });
  }
  const calibration = calibrationText(ctx);
  if (isRefusal(est)) {
    throw new UnsupportedError(`${est.constraint === 'memory' ? 'does not fit' : 'not runnable'}: ${est.reason}`, est);
  }
  const bandBasis = bandBasisFor(ctx, est.mode);
  const confidence = o.slaConfidence as number | undefined;
  const at = confidence !== undefined ? atConfidence(est, confidence) : undefined;
  if (o.json) {
    printJson({ model: ctx.model.id, system: ctx.system.name, backend: ctx.backend, version: ctx.version, workload: ctx.workload, calibration, estimate: est, bandBasis, ...(at && { atConfidence: at }) });
    return 0;
  }
  const workers = est.mode === 'agg' ? [[est.config, ctx.system] as const] : [[est.config.prefill, ctx.system] as const, [est.config.decode, ctx.decodeSystem ?? ctx.system] as const];
  const genMoe = ctx.model.moe !== undefined && workers.some(([l, sys]) => trtllmGenMoe(profileOf(ctx), ctx.moeDtype, sys, l));
  printEstimate(est, `${escapeControl(ctx.model.id)} on ${ctx.system.name}, ${ctx.backend} ${ctx.version}${genMoe ? ' (MoE on trtllm-gen)' : ''}, isl ${inputs.isl} osl ${inputs.osl}` +
    (inputs.prefix ? ` prefix ${inputs.prefix}` : ''), calibration, bandBasis);
  if (at) process.stdout.write(`at confidence ${at.confidence}: TTFT ${at.ttftMs.toFixed(1)} ms, TPOT ${at.tpotMs.toFixed(2)} ms (what --sla-confidence ${at.confidence} judges targets on)\n`);
  return 0;
}

/** TTFT and TPOT at a quantile of their bands (as `default --sla-confidence` judges targets). */
function atConfidence(est: Estimate, confidence: number): { confidence: number; ttftMs: number; tpotMs: number } {
  return {
    confidence,
    ttftMs: valueAtConfidence(est.metrics.ttftMs, est.bands.ttftMs, confidence),
    tpotMs: valueAtConfidence(est.metrics.tpotMs, est.bands.tpotMs, confidence),
  };
}

/** What the speculative setting does to TPOT, and where its acceptance rates come from. */
function speculationLines(s: Speculation): string[] {
  const perStep = tokensPerStep(s.acceptRates);
  return [
    `speculative decoding: ${speculationLabel(s)}`,
    `  each decode step verifies ${1 + s.draft} tokens per sequence and emits ${perStep.toFixed(2)} on average (1 + a1 + a1 a2 + ...): TPOT = step time / ${perStep.toFixed(2)}`,
    `  acceptance rates ${s.assumed ? 'assumed' : 'given'}${s.assumed ? `: ${s.source}` : ''}`,
  ];
}

function fmtBand(v: number, b: { low: number; high: number }, digits: number): string {
  return `${v.toFixed(digits)}  [${b.low.toFixed(digits)} .. ${b.high.toFixed(digits)}]`;
}

/** The parts of TTFT in the order a request meets them. */
const TTFT_PART_LABELS: Record<keyof TtftParts, string> = {
  request: 'request path',
  slotQueue: 'waiting for a slot',
  balance: 'attention-DP balancing',
  stepInFlight: 'step in flight',
  engineQueue: 'engine queue',
  burst: 'burst of prompts',
  prefill: 'prefill',
  kvTransfer: 'KV transfer',
  handout: 'first-token hand-out',
};

function printEstimate(est: Estimate, title: string, calibration: string, basis: ReturnType<typeof bandBasisFor>): void {
  const m: ServingMetrics = est.metrics;
  const b: MetricBands = est.bands;
  const lines: string[] = [];
  lines.push(title);
  if (est.mode === 'agg') {
    const c = est.config;
    lines.push(`mode agg: tp ${c.tp} pp ${c.pp} dp ${c.dp} moe_tp ${c.moeTp} moe_ep ${c.moeEp}, batch ${c.batchSize}, max-num-tokens ${c.maxNumTokens}, replicas ${est.replicas}`);
  } else {
    const p = est.config.prefill;
    const d = est.config.decode;
    lines.push(`mode disagg: ${p.workers} prefill x (tp ${p.tp} pp ${p.pp} dp ${p.dp}, batch ${p.batchSize}) + ${d.workers} decode x (tp ${d.tp} pp ${d.pp} dp ${d.dp}, batch ${d.batchSize}), replicas ${est.replicas}`);
  }
  if (est.speculation) lines.push(...speculationLines(est.speculation));
  lines.push(`concurrency ${m.concurrency} on ${m.gpus} GPUs   (band: 80% of measured runs left out of its fit fall inside)`);
  lines.push(`  TTFT             ${fmtBand(m.ttftMs, b.ttftMs, 1)} ms`);
  lines.push(`  TPOT             ${fmtBand(m.tpotMs, b.tpotMs, 2)} ms`);
  lines.push(`  request latency  ${fmtBand(m.requestLatencyMs, b.requestLatencyMs, 0)} ms`);
  lines.push(`  tokens/s/GPU     ${fmtBand(m.tokPerSPerGpu, b.tokPerSPerGpu, 1)}`);
  lines.push(`  tokens/s/user    ${fmtBand(m.tokPerSPerUser, b.tokPerSPerUser, 1)}`);
  lines.push(`  output tokens/s  ${m.outputTokPerS.toFixed(1)}   requests/s ${m.requestsPerS.toFixed(3)}`);
  // Where the bands come from: the finest group of measured runs with enough of them.
  basisLines(basis).forEach((line, i) => lines.push(`${i === 0 ? '  bands from       ' : ' '.repeat(19)}${line}`));
  if (est.mode === 'disagg') lines.push(`  KV transfer      ${est.kvTransferMs.toFixed(2)} ms per request`);
  const mems: [string, MemoryPicture][] = est.mode === 'agg' ? [['memory per GPU', est.memory]] : [['prefill memory per GPU', est.memory.prefill], ['decode memory per GPU', est.memory.decode]];
  for (const [label, mem] of mems) {
    lines.push(`${label}: ${mem.capacityGiB.toFixed(1)} GiB = weights ${mem.weightsGiB.toFixed(1)} + activations ${mem.activationGiB.toFixed(1)} + runtime ${mem.reserveGiB.toFixed(1)} + KV cache ${mem.kvCacheGiB.toFixed(1)} (+ unused)`);
    lines.push(`  KV ${Math.round(mem.kvBytesPerTokenPerGpu)} bytes/token/GPU, ${mem.kvTokens} tokens, up to ${mem.maxSequences} sequences of isl+osl`);
  }
  const sp = est.breakdown?.speculative;
  if (sp) {
    const step = sp.verifyMs + sp.draftMs + sp.hostMs;
    lines.push(`speculative decode step (running batch): verify ${sp.verifyMs.toFixed(2)} + draft ${sp.draftMs.toFixed(2)} + host ${sp.hostMs.toFixed(2)} = ${step.toFixed(2)} ms, ` +
      `${sp.tokensPerStep.toFixed(2)} tokens per sequence: ${(step / sp.tokensPerStep).toFixed(2)} ms per token`);
  }
  if (est.breakdown) {
    const parts = Object.entries(TTFT_PART_LABELS)
      .map(([key, label]) => [label, est.ttftParts[key as keyof TtftParts]] as const)
      .filter(([, v]) => v > 0.005)
      .map(([label, v]) => `${label} ${v.toFixed(1)}`);
    lines.push(`TTFT ${m.ttftMs.toFixed(1)} ms = ${parts.join(' + ')}`);
    for (const phase of ['prefill', 'decode'] as const) {
      const t = est.breakdown[phase];
      const total = Object.values(t).reduce((a, v) => a + v, 0);
      lines.push(`${phase} step (${phase === 'prefill' ? 'one prompt' : 'running batch'}): ${total.toFixed(2)} ms`);
      for (const [k, v] of Object.entries(t).sort((a, c) => c[1] - a[1])) {
        lines.push(`  ${k.padEnd(18)} ${v.toFixed(3).padStart(10)} ms  ${((100 * v) / total).toFixed(1).padStart(5)}%`);
      }
    }
  }
  lines.push(calibration);
  process.stdout.write(lines.join('\n') + '\n');
}

// ---- batch mode ------------------------------------------------------------------------------

async function fromCsv(o: Opts): Promise<number> {
  const file = o.fromCsv as string;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError(`--from-csv ${file}: cannot read (${(e as Error).message.split('\n')[0]})`);
  }
  let parsed;
  try {
    parsed = parseCsv(text);
  } catch (e) {
    throw new InputError(`--from-csv ${file}: ${(e as Error).message}`);
  }
  const { header, rows, lines } = parsed;
  // A place the output cannot go is reported before any row is priced.
  if (o.out !== undefined) checkOutputPath('--out', o.out as string, { force: o.force === true });
  for (const col of ['model_path', 'system', 'backend', 'mode', 'isl', 'osl']) {
    if (!header.includes(col)) throw new InputError(`--from-csv ${file}: missing column "${col}"; expected the e2e reference format`);
  }
  // Every row is checked before any is priced, so a malformed number stops the batch before anything is written.
  rows.forEach((row, i) => checkRowNumbers(row, `--from-csv ${file} line ${lines[i]}`));
  const outRows: Record<string, string>[] = [];
  const confidence = o.slaConfidence as number | undefined;
  let refused = 0;
  const shown = progress(`estimating ${file}`, rows.length, { json: o.json === true });
  try {
    for (const [i, row] of rows.entries()) {
      shown.tick(i);
      const inp = await resolveRowInputs(row, o.perfData as string | undefined);
      const e = 'refused' in inp ? inp : estimateRow(row, inp);
      const cells = predictedCells(e);
      if (cells.refused_reason) refused++;
      const atCells = confidence === undefined ? {} : confidenceCells(e, confidence);
      // The input's own cells are written back too: neutralised, as every CSV the tool writes.
      outRows.push(csvSafeRecord({ ...row, ...cells, ...atCells }) as Record<string, string>);
    }
  } finally {
    shown.end();
  }
  const columns = [...header, ...PREDICTED_COLUMNS, ...(confidence === undefined ? [] : CONFIDENCE_COLUMNS)];
  const csv = stringify(outRows, { header: true, columns });
  if (o.out) {
    writeFileAtomic('--out', o.out as string, csv, { force: o.force === true });
    log(`wrote ${rows.length} rows (${refused} refused) to ${o.out as string}`);
  } else process.stdout.write(csv);
  return 0;
}

const CONFIDENCE_COLUMNS = ['ttft_ms_at_confidence', 'tpot_ms_at_confidence'] as const;

/** A row's TTFT and TPOT at the confidence (blank when refused). */
function confidenceCells(e: Estimate | { refused: true }, confidence: number): Record<(typeof CONFIDENCE_COLUMNS)[number], string> {
  if ('refused' in e && e.refused) return { ttft_ms_at_confidence: '', tpot_ms_at_confidence: '' };
  const at = atConfidence(e as Estimate, confidence);
  return { ttft_ms_at_confidence: at.ttftMs.toFixed(3), tpot_ms_at_confidence: at.tpotMs.toFixed(4) };
}
