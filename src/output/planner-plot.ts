// PNG plots of the planner profiles, for people to check the curves before handing them over: prefill TTFT and
// tokens/s/GPU against input length; decode ITL and tokens/s/GPU against KV usage, one line per context length.
// Rendered like the Pareto chart (vega-lite -> SVG -> resvg with the shipped font), so reruns are identical.
import { existsSync } from 'node:fs';
import { CHART_FONT_FAMILY, chartFontPath } from './chart.js';
import { stripNonXml } from '../util/text.js';
import type { PlannerProfile } from './planner-profile.js';

const PANEL = { width: 360, height: 260 };

function panel(title: string, y: string, yTitle: string, x: string, xTitle: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...PANEL,
    title,
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: x, type: 'quantitative', title: xTitle },
      y: { field: y, type: 'quantitative', title: yTitle },
      ...extra,
    },
  };
}

/** Prefill: TTFT (ms) and tokens/s/GPU against input length. */
export function prefillPlotSpec(p: PlannerProfile, title: string): Record<string, unknown> {
  const values = p.prefill.prefill_isl.map((isl, i) => ({ isl, ttft: p.prefill.prefill_ttft[i], thpt: p.prefill.prefill_thpt_per_gpu[i] }));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `${title}: prefill, one request (${p.prefillGpus} GPU${p.prefillGpus === 1 ? '' : 's'} per worker)`,
    background: 'white',
    data: { values },
    config: { font: `${CHART_FONT_FAMILY}, sans-serif` },
    hconcat: [
      panel('TTFT', 'ttft', 'TTFT (ms)', 'isl', 'input length (tokens)'),
      panel('throughput', 'thpt', 'tokens/s/GPU', 'isl', 'input length (tokens)'),
    ],
  };
}

/** Decode: ITL (ms) and tokens/s/GPU against KV usage, one line per context length. */
export function decodePlotSpec(p: PlannerProfile, title: string): Record<string, unknown> {
  const d = p.decode;
  const values = d.x_kv_usage.map((x, i) => ({ kv: x, context: d.y_context_length[i], itl: d.z_itl[i], thpt: d.z_thpt_per_gpu[i] }));
  const color = { color: { field: 'context', type: 'ordinal', title: 'context (tokens)' } };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `${title}: decode (${p.decodeGpus} GPU${p.decodeGpus === 1 ? '' : 's'} per worker, KV capacity ${d.max_kv_tokens} tokens)`,
    background: 'white',
    data: { values },
    config: { font: `${CHART_FONT_FAMILY}, sans-serif` },
    hconcat: [
      panel('ITL', 'itl', 'ITL (ms)', 'kv', 'KV-cache usage (fraction)', color),
      panel('throughput', 'thpt', 'tokens/s/GPU', 'kv', 'KV-cache usage (fraction)', color),
    ],
  };
}

/** A vega-lite spec as PNG (2x). */
export async function renderPng(spec: Record<string, unknown>): Promise<Buffer> {
  const [vega, vl, resvg] = await Promise.all([import('vega'), import('vega-lite'), import('@resvg/resvg-js')]);
  const view = new vega.View(vega.parse(vl.compile(spec as never).spec), { renderer: 'none' });
  const svg = stripNonXml(await view.toSVG());
  view.finalize();
  const font = existsSync(chartFontPath())
    ? { loadSystemFonts: false, fontFiles: [chartFontPath()], defaultFontFamily: CHART_FONT_FAMILY, sansSerifFamily: CHART_FONT_FAMILY }
    : { loadSystemFonts: true, defaultFontFamily: CHART_FONT_FAMILY, sansSerifFamily: CHART_FONT_FAMILY };
  return Buffer.from(new resvg.Resvg(svg, { background: 'white', fitTo: { mode: 'zoom', value: 2 }, font }).render().asPng());
}
