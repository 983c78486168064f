// The console report of `configure default`: effective parameters, results box, Pareto plot, top-N tables.
import Table from 'cli-table3';
import { speculationSuffix } from '../engine/speculation.js';
import { PLAIN_STYLE } from './table.js';
import { Chalk } from 'chalk';
import type { AggEstimate, Band, DisaggEstimate } from '../engine/types.js';
import { basisLines } from '../engine/bands.js';
import type { ModeResult, RankedCandidate, SearchResult } from '../search/types.js';
import type { NoFeasibleDetail } from '../search/explain.js';
import type { Recommendation, RecommendResult } from '../search/recommend.js';
import { bestOf, budgetScale, deploymentConcurrency, disaggParallelNames, replicasOf } from '../search/json.js';
import { gpusOf } from '../search/port.js';
import { asciiPareto } from './ascii-pareto.js';
import { num } from '../util/format.js';
import { escapeControl } from '../util/text.js';

export interface RenderOptions {
  color: boolean;
}

type Paint = (s: string) => string;
interface Palette {
  head: Paint;
  good: Paint;
  bad: Paint;
  dim: Paint;
  bold: Paint;
}

function palette(color: boolean): Palette {
  const c = new Chalk({ level: color ? 1 : 0 });
  return { head: c.cyan, good: c.green, bad: c.red, dim: c.dim, bold: c.bold };
}

const band = (b: Band): string => `[${num(b.low)} - ${num(b.high)}]`;

function concurrencyText(c: RankedCandidate): string {
  const r = replicasOf(c);
  const total = deploymentConcurrency(c);
  return `${total} (=${Math.round(total / r)}x${r})`;
}

export function renderParameters(result: SearchResult): string {
  const i = result.inputs;
  const w = i.workload;
  const sla = `ttft <= ${i.sla.ttftMs} ms, tpot <= ${i.sla.tpotMs} ms` +
    (i.sla.requestLatencyMs !== undefined ? `, request latency <= ${i.sla.requestLatencyMs} ms` : '');
  const system = i.decodeSystem ? `${i.system} (decode on ${i.decodeSystem})` : i.system;
  return [
    `model ${escapeControl(i.model)} | system ${system} | backend ${i.backend} ${i.version} | total GPUs ${i.totalGpus}`,
    `isl ${w.isl} | osl ${w.osl} | prefix ${w.prefix} | ${sla} | top-n ${i.topN}`,
  ].join('\n');
}

function searchedLine(result: SearchResult): string {
  const parts = [result.agg, result.disagg]
    .filter((m): m is ModeResult => m !== undefined)
    .map((m) => `${m.mode} ${m.evaluated} candidates (${m.feasible} meet the SLA)`);
  const total = (result.agg?.evaluated ?? 0) + (result.disagg?.evaluated ?? 0);
  const rate = total / Math.max(result.elapsedMs / 1000, 1e-6);
  return `evaluated ${parts.join(', ')}; search took ${result.elapsedMs.toFixed(0)} ms (${Math.round(rate)} candidates/s)`;
}

function describe(c: RankedCandidate): string {
  const r = replicasOf(c);
  if (c.estimate.mode === 'agg') {
    const cfg = (c.estimate as AggEstimate).config;
    return `agg ${c.parallel}${speculationSuffix(c.estimate.speculation)}, batch ${cfg.batchSize}, max-num-tokens ${cfg.maxNumTokens}, ${r} replica${r > 1 ? 's' : ''} x ${c.gpusUsed / r} GPUs`;
  }
  const d = (c.estimate as DisaggEstimate).config;
  const [pName, dName] = disaggParallelNames(c);
  return `disagg ${d.prefill.workers} x prefill ${pName} (bs ${d.prefill.batchSize}) + ${d.decode.workers} x decode ${dName}${speculationSuffix(c.estimate.speculation)} (bs ${d.decode.batchSize}), ${r} replica${r > 1 ? 's' : ''} x ${c.gpusUsed / r} GPUs`;
}

export function renderResultsBox(result: SearchResult, p: Palette): string {
  const best = bestOf(result);
  const t = new Table({ ...PLAIN_STYLE, colWidths: [20, 74], wordWrap: true });
  const i = result.inputs;
  t.push([p.bold('model'), escapeControl(i.model)]);
  t.push([p.bold('GPUs'), `${i.totalGpus} x ${i.system}`]);
  t.push([p.bold('verdict'), best ? p.good(result.verdict.text) : p.bad(result.verdict.text)]);
  if (best) {
    const m = best.estimate.metrics;
    const b = best.estimate.bands;
    const k = budgetScale(best);
    t.push([p.bold('best configuration'), describe(best)]);
    t.push([p.bold('throughput'), `${num(m.outputTokPerS * k)} tokens/s over ${best.gpusUsed} GPUs`]);
    t.push([p.bold('per GPU'), `${num(best.clusterTokPerSPerGpu)} tokens/s/gpu over the budget (${num(m.tokPerSPerGpu)} per GPU used) ${band(b.tokPerSPerGpu)}`]);
    t.push([p.bold('per user'), `${num(m.tokPerSPerUser)} tokens/s/user ${band(b.tokPerSPerUser)}`]);
    t.push([p.bold('request rate'), `${num(m.requestsPerS * k)} req/s at concurrency ${concurrencyText(best)}`]);
    t.push([p.bold('TTFT'), `${num(m.ttftMs)} ms ${band(b.ttftMs)}`]);
    t.push([p.bold('TPOT'), `${num(m.tpotMs)} ms ${band(b.tpotMs)}`]);
    t.push([p.bold('request latency'), `${num(m.requestLatencyMs)} ms ${band(b.requestLatencyMs)}`]);
    const basis = i.bandBasis?.[best.estimate.mode];
    if (basis) t.push([p.bold('bands from'), basisLines(basis).join('; ')]);
  }
  // What loosening a target would buy (the verdict's notes), when it buys anything.
  const gains = (result.verdict.notes ?? []).filter((n) => !n.endsWith('no gain'));
  if (gains.length) t.push([p.bold('if relaxed'), gains.join('\n')]);
  if (i.speculation) t.push([p.bold('speculative'), i.speculation]);
  t.push([p.bold('calibration'), i.calibratedOn]);
  return t.toString();
}

export function renderPareto(result: SearchResult): string {
  const series = [];
  if (result.agg) series.push({ label: 'agg', marker: 'o', points: result.agg.frontier });
  if (result.disagg) series.push({ label: 'disagg', marker: 'x', points: result.disagg.frontier });
  return asciiPareto(series, { xTarget: 1000 / result.inputs.sla.tpotMs });
}

const METRIC_HEAD = ['rank', 'tokens/s/gpu', 'tokens/s/user', 'TTFT ms', 'TPOT ms', 'req latency ms', 'concurrency', 'total GPUs', 'replicas', 'GPUs/replica'];

function metricCells(c: RankedCandidate, rank: number): string[] {
  const m = c.estimate.metrics;
  const r = replicasOf(c);
  return [
    String(rank),
    num(c.clusterTokPerSPerGpu),
    num(m.tokPerSPerUser),
    num(m.ttftMs),
    num(m.tpotMs),
    num(m.requestLatencyMs),
    concurrencyText(c),
    String(c.gpusUsed),
    String(r),
    String(c.gpusUsed / r),
  ];
}

export function renderAggTable(top: RankedCandidate[], p: Palette): string {
  const t = new Table({ ...PLAIN_STYLE, head: [...METRIC_HEAD, 'parallel', 'bs', 'max tokens'].map((h) => p.head(h)) });
  top.forEach((c, i) => {
    const cfg = (c.estimate as AggEstimate).config;
    t.push([...metricCells(c, i + 1), c.parallel + speculationSuffix(c.estimate.speculation), String(cfg.batchSize), String(cfg.maxNumTokens)]);
  });
  return t.toString();
}

export function renderDisaggTable(top: RankedCandidate[], p: Palette): string {
  const head = [...METRIC_HEAD, '(p)workers', '(p)parallel', '(p)bs', '(p)gpus', '(d)workers', '(d)parallel', '(d)bs', '(d)gpus', 'KV ms'];
  const t = new Table({ ...PLAIN_STYLE, head: head.map((h) => p.head(h)) });
  top.forEach((c, i) => {
    const e = c.estimate as DisaggEstimate;
    const [pName, dName] = disaggParallelNames(c);
    t.push([
      ...metricCells(c, i + 1),
      String(e.config.prefill.workers),
      pName ?? '',
      String(e.config.prefill.batchSize),
      String(gpusOf(e.config.prefill)),
      String(e.config.decode.workers),
      (dName ?? '') + speculationSuffix(e.speculation),
      String(e.config.decode.batchSize),
      String(gpusOf(e.config.decode)),
      num(e.kvTransferMs),
    ]);
  });
  return t.toString();
}

function modeSection(m: ModeResult | undefined, title: string, p: Palette, render: (top: RankedCandidate[], p: Palette) => string): string[] {
  if (!m) return [];
  if (m.top.length === 0) return [p.bold(title), p.bad(`no ${m.mode} configuration meets the SLA (${m.evaluated} evaluated)`), ''];
  return [p.bold(title), render(m.top, p), ''];
}

/** The whole console report. */
export function renderReport(result: SearchResult, opts: RenderOptions): string {
  const p = palette(opts.color);
  const out: string[] = [];
  out.push(p.bold('Parameters'));
  out.push(renderParameters(result));
  out.push(p.dim(searchedLine(result)));
  out.push('');
  out.push(renderResultsBox(result, p));
  out.push('');
  out.push(p.bold('Pareto frontier (cluster tokens/s/gpu vs tokens/s/user)'));
  out.push(renderPareto(result));
  out.push('');
  out.push(...modeSection(result.agg, `Top ${result.inputs.topN} aggregated configurations`, p, renderAggTable));
  out.push(...modeSection(result.disagg, `Top ${result.inputs.topN} disaggregated configurations`, p, renderDisaggTable));
  return out.join('\n').replace(/\n+$/, '') + '\n';
}

/** The explanation printed when nothing meets the SLA. */
export function renderNoFeasible(detail: NoFeasibleDetail, opts: RenderOptions = { color: false }): string {
  const p = palette(opts.color);
  const out: string[] = [];
  const sla = `ttft <= ${detail.sla.ttftMs} ms, tpot <= ${detail.sla.tpotMs} ms` +
    (detail.sla.requestLatencyMs !== undefined ? `, request latency <= ${detail.sla.requestLatencyMs} ms` : '');
  out.push(p.bad(p.bold(`No configuration on ${detail.totalGpus} GPUs meets ${sla}.`)));
  const reasons = ['memory', 'engine', 'ttft', 'tpot', 'request_latency'] as const;
  const t = new Table({ ...PLAIN_STYLE, head: ['mode', 'evaluated', 'rate-matched only', ...reasons.map((r) => `removed: ${r}`)].map((h) => p.head(h)) });
  for (const m of detail.modes) t.push([m.mode, String(m.evaluated), String(m.screened), ...reasons.map((r) => String(m.removed[r]))]);
  out.push(t.toString());
  out.push(p.dim('memory/engine: refused before pricing; a priced candidate that breaks several targets counts under each;\nrate-matched only: disagg worker splits scored from pool capacities, of which the best are priced.'));
  const misses = detail.modes.flatMap((m) => m.nearMisses.map((n) => ({ mode: m.mode, ...n })));
  if (misses.length > 0) {
    out.push('');
    out.push(p.bold('Nearest misses'));
    const n = new Table({ ...PLAIN_STYLE, head: ['mode', 'parallel', 'broke', 'detail'].map((h) => p.head(h)), colWidths: [8, 34, 17, 60], wordWrap: true });
    for (const m of misses) n.push([m.mode, m.parallel, m.broke, m.detail]);
    out.push(n.toString());
  }
  return out.join('\n') + '\n';
}

// ---- recommend ----

function targetText(t: RecommendResult['target']): string {
  return t.kind === 'rate' ? `${num(t.requestsPerS)} req/s` : `${t.clients} concurrent clients`;
}

function recRow(r: Recommendation, rank: number): string[] {
  const c = r.candidate;
  const m = c.estimate.metrics;
  const e = c.estimate;
  const bs = e.mode === 'agg'
    ? String((e as AggEstimate).config.batchSize)
    : `${(e as DisaggEstimate).config.prefill.workers}P(bs ${(e as DisaggEstimate).config.prefill.batchSize}) + ${(e as DisaggEstimate).config.decode.workers}D(bs ${(e as DisaggEstimate).config.decode.batchSize})`;
  return [
    String(rank),
    String(r.gpus),
    String(r.replicas),
    String(r.unitGpus),
    r.parallel,
    bs,
    num(r.unitRequestsPerS * r.replicas),
    `${Math.round(r.share * 100)}%`,
    num(m.tokPerSPerGpu),
    num(m.tokPerSPerUser),
    num(m.ttftMs),
    num(m.tpotMs),
  ];
}

function recTable(rows: Recommendation[], p: Palette): string {
  const head = ['rank', 'GPUs', 'replicas', 'GPUs/replica', 'parallel', 'bs / workers', 'req/s served', 'of target', 'tokens/s/gpu', 'tokens/s/user', 'TTFT ms', 'TPOT ms'];
  const t = new Table({ ...PLAIN_STYLE, head: head.map((h) => p.head(h)) });
  rows.forEach((r, i) => t.push(recRow(r, i + 1)));
  return t.toString();
}

/** The console report of `configure recommend`. */
export function renderRecommend(result: RecommendResult, opts: RenderOptions): string {
  const p = palette(opts.color);
  const s = result.search;
  const i = s.inputs;
  const out: string[] = [];
  out.push(p.bold('Parameters'));
  const sla = `ttft <= ${i.sla.ttftMs} ms, tpot <= ${i.sla.tpotMs} ms` + (i.sla.requestLatencyMs !== undefined ? `, request latency <= ${i.sla.requestLatencyMs} ms` : '');
  out.push(`model ${escapeControl(i.model)} | system ${i.system} | backend ${i.backend} ${i.version} | target ${targetText(result.target)}${result.maxGpus ? ` | max GPUs ${result.maxGpus}` : ''}`);
  out.push(`isl ${i.workload.isl} | osl ${i.workload.osl} | prefix ${i.workload.prefix} | ${sla}`);
  const evaluated = (s.agg?.evaluated ?? 0) + (s.disagg?.evaluated ?? 0);
  out.push(p.dim(`evaluated ${evaluated} candidate replica units of up to ${result.unitBudget} GPUs; search took ${result.elapsedMs.toFixed(0)} ms`));
  out.push('');
  const box = new Table({ ...PLAIN_STYLE, colWidths: [20, 74], wordWrap: true });
  const b = result.best;
  box.push([p.bold('target'), targetText(result.target)]);
  if (b) {
    const met = b.share >= 1 - 1e-9;
    box.push([p.bold('GPUs needed'), (met ? p.good : p.bad)(`${b.gpus} x ${i.system}${met ? '' : ` (only ${Math.round(b.share * 100)}% of the target within --max-gpus ${result.maxGpus})`}`)]);
    box.push([p.bold('layout'), `${b.mode} ${b.parallel}, ${b.replicas} replica${b.replicas > 1 ? 's' : ''} x ${b.unitGpus} GPUs`]);
    const m = b.candidate.estimate.metrics;
    const bands = b.candidate.estimate.bands;
    box.push([p.bold('serves'), `${num(b.unitRequestsPerS * b.replicas)} req/s, ${Math.round(b.unitConcurrency * b.replicas)} clients (${Math.round(b.share * 100)}% of the target)`]);
    box.push([p.bold('per GPU'), `${num(m.tokPerSPerGpu)} tokens/s/gpu ${band(bands.tokPerSPerGpu)}`]);
    box.push([p.bold('per user'), `${num(m.tokPerSPerUser)} tokens/s/user ${band(bands.tokPerSPerUser)}`]);
    box.push([p.bold('TTFT'), `${num(m.ttftMs)} ms ${band(bands.ttftMs)}`]);
    box.push([p.bold('TPOT'), `${num(m.tpotMs)} ms ${band(bands.tpotMs)}`]);
  }
  if (i.speculation) box.push([p.bold('speculative'), i.speculation]);
  box.push([p.bold('calibration'), i.calibratedOn]);
  out.push(box.toString());
  out.push('');
  for (const [title, rows] of [['aggregated', result.agg], ['disaggregated', result.disagg]] as const) {
    out.push(p.bold(`Fewest GPUs, ${title}`));
    out.push(rows.length ? recTable(rows, p) : p.bad(`no ${title} configuration meets the SLA`));
    out.push('');
  }
  return out.join('\n').replace(/\n+$/, '') + '\n';
}
