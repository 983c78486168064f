// Pareto chart: a vega-lite spec, rendered to SVG by vega (no canvas) and to PNG by resvg with the font
// shipped in assets/fonts, so the picture is the same on every machine. vega and vega-lite are imported
// lazily: they are large and only needed when a results directory is written.
import { existsSync } from 'node:fs';
import { speculationSuffix } from '../engine/speculation.js';
import { join } from 'node:path';
import type { SearchResult, RankedCandidate, Mode } from '../search/types.js';
import { projectRoot } from '../util/paths.js';
import { round } from '../util/format.js';
import { escapeControl, stripNonXml } from '../util/text.js';

export const CHART_FONT_FAMILY = 'DejaVu Sans';

export function chartFontPath(): string {
  return join(projectRoot(), 'assets', 'fonts', 'DejaVuSans.ttf');
}

const WIDTH = 640;
const HEIGHT = 380;
const MODE_COLORS: Record<Mode, string> = { agg: '#1f77b4', disagg: '#d62728' };

interface Point {
  mode: Mode;
  tokens_per_s_per_user: number;
  tokens_per_s_per_gpu: number;
  parallel: string;
  meets_sla: string;
}

function point(mode: Mode, c: RankedCandidate): Point {
  return {
    mode,
    tokens_per_s_per_user: round(c.estimate.metrics.tokPerSPerUser, 2),
    tokens_per_s_per_gpu: round(c.clusterTokPerSPerGpu, 2),
    parallel: escapeControl(c.parallel + speculationSuffix(c.estimate.speculation)),
    meets_sla: c.meetsSla === false ? 'no' : 'yes',
  };
}

/** The vega-lite spec: one frontier line per mode, each mode's best marked, the chosen point starred, the TPOT target as a rule. */
export function buildParetoSpec(result: SearchResult): Record<string, unknown> {
  const { inputs } = result;
  // User-supplied names are drawn as text: control characters shown escaped (vega escapes & < > itself).
  const model = escapeControl(inputs.model);
  const modes = (['agg', 'disagg'] as const).filter((m) => result[m] !== undefined);
  const frontier: Point[] = [];
  const best: Array<Point & { label: string }> = [];
  for (const m of modes) {
    const r = result[m]!;
    const pts = r.frontier.map((c) => point(m, c)).sort((a, b) => a.tokens_per_s_per_user - b.tokens_per_s_per_user);
    frontier.push(...pts);
    if (r.top.length > 0) {
      const p = point(m, r.top[0]);
      const chosen = result.verdict.winner === m;
      best.push({ ...p, label: `${chosen ? '\u25C6 selected' : '\u25C6 best'} ${m}: ${p.parallel}, ${Math.round(p.tokens_per_s_per_gpu)} tok/s/gpu at ${p.tokens_per_s_per_user.toFixed(1)} tok/s/user` });
    }
  }
  const slaX = round(1000 / inputs.sla.tpotMs, 2);
  const allX = [...frontier, ...best].map((p) => p.tokens_per_s_per_user);
  const allY = [...frontier, ...best].map((p) => p.tokens_per_s_per_gpu);
  const xMax = Math.max(slaX, ...allX, 1) * 1.15;
  const yMax = Math.max(...allY, 1) * 1.15;
  const x = {
    field: 'tokens_per_s_per_user',
    type: 'quantitative',
    title: 'tokens/s/user (output tokens per second per request)',
    scale: { domain: [0, round(xMax, 0)], nice: false },
  };
  const y = {
    field: 'tokens_per_s_per_gpu',
    type: 'quantitative',
    title: `tokens/s/gpu (output, over all ${inputs.totalGpus} GPUs)`,
    scale: { domain: [0, round(yMax, 0)], nice: false },
  };
  const color = {
    field: 'mode',
    type: 'nominal',
    title: 'mode',
    scale: { domain: modes, range: modes.map((m) => MODE_COLORS[m]) },
  };
  const selected = best.filter((b) => b.label.includes('selected'));
  const layers: Record<string, unknown>[] = [
    {
      data: { values: [{ x: slaX, label: `TPOT target ${inputs.sla.tpotMs} ms: at least ${slaX} tok/s/user (right of this line)` }] },
      layer: [
        { mark: { type: 'rule', color: '#555', strokeDash: [6, 4] }, encoding: { x: { field: 'x', type: 'quantitative' } } },
        {
          mark: { type: 'text', align: 'left', baseline: 'top', dx: 4, dy: 4, color: '#555', fontSize: 10 },
          encoding: { x: { field: 'x', type: 'quantitative' }, y: { value: 0 }, text: { field: 'label' } },
        },
      ],
    },
    {
      data: { values: frontier },
      layer: [
        { mark: { type: 'line', strokeWidth: 2 }, encoding: { x, y, color, order: { field: 'tokens_per_s_per_user', type: 'quantitative' } } },
        {
          // Frontier points that break a target are drawn hollow.
          mark: { type: 'point', size: 45, strokeWidth: 1.5 },
          encoding: {
            x,
            y,
            color,
            fill: { condition: { test: "datum.meets_sla === 'yes'", field: 'mode', type: 'nominal', scale: color.scale }, value: 'white' },
            fillOpacity: { value: 1 },
          },
        },
      ],
    },
    {
      data: { values: best },
      layer: [
        { mark: { type: 'point', shape: 'diamond', size: 160, filled: true, stroke: '#000', strokeWidth: 1 }, encoding: { x, y, color } },
      ],
    },
    // Labels of the marked points sit in the empty bottom-left corner (below any frontier), so they never overlap.
    ...best.map((b, i) => ({
      data: { values: [b] },
      mark: {
        type: 'text',
        align: 'left',
        baseline: 'bottom',
        fontSize: 11,
        fontWeight: b.label.includes('selected') ? 'bold' : 'normal',
        color: MODE_COLORS[b.mode],
      },
      encoding: { x: { value: 8 }, y: { value: HEIGHT - 8 - 16 * (best.length - 1 - i) }, text: { field: 'label' } },
    })),
  ];
  if (selected.length > 0) {
    layers.push({
      data: { values: selected },
      mark: { type: 'point', shape: 'circle', size: 420, filled: false, color: '#e6a100', strokeWidth: 2.5 },
      encoding: { x, y },
    });
  }
  const sla = `TTFT <= ${inputs.sla.ttftMs} ms, TPOT <= ${inputs.sla.tpotMs} ms${inputs.sla.requestLatencyMs !== undefined ? `, latency <= ${inputs.sla.requestLatencyMs} ms` : ''}`;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `${model}: Pareto frontier`,
      // Short lines: without a canvas vega over-estimates text width and would widen the picture.
      subtitle: [
        `${inputs.totalGpus}x ${inputs.system}, ${inputs.backend} ${inputs.version}, isl ${inputs.workload.isl}, osl ${inputs.workload.osl}`,
        `SLA ${sla}; ${escapeControl(result.verdict.text)}`,
        'diamond: best of each mode; ring: selected; hollow point: breaks an SLA target',
      ],
      anchor: 'start',
    },
    width: WIDTH,
    height: HEIGHT,
    background: 'white',
    config: { font: `${CHART_FONT_FAMILY}, sans-serif`, view: { stroke: '#ddd' }, legend: { orient: 'bottom-right' } },
    layer: layers,
  };
}

/** Spec, SVG and PNG (2x) of the frontier chart. */
export async function renderParetoChart(result: SearchResult): Promise<{ spec: object; svg: string; png: Buffer }> {
  const spec = buildParetoSpec(result);
  const [vega, vl, resvg] = await Promise.all([import('vega'), import('vega-lite'), import('@resvg/resvg-js')]);
  const compiled = vl.compile(spec as never).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  // Last line of defence: nothing XML forbids reaches the SVG (resvg and browsers reject the whole file).
  const svg = stripNonXml(await view.toSVG());
  view.finalize();
  const png = new resvg.Resvg(svg, {
    background: 'white',
    fitTo: { mode: 'zoom', value: 2 },
    // The shipped font makes the PNG identical everywhere; system fonts only if the file was left out of an install.
    font: existsSync(chartFontPath())
      ? { loadSystemFonts: false, fontFiles: [chartFontPath()], defaultFontFamily: CHART_FONT_FAMILY, sansSerifFamily: CHART_FONT_FAMILY }
      : { loadSystemFonts: true, defaultFontFamily: CHART_FONT_FAMILY, sansSerifFamily: CHART_FONT_FAMILY },
  })
    .render()
    .asPng();
  return { spec, svg, png: Buffer.from(png) };
}
