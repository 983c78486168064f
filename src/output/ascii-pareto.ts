// A terminal scatter plot of the Pareto frontiers: x = tokens/s/user, y = cluster tokens/s/gpu.
import type { RankedCandidate } from '../search/types.js';

export interface PlotSeries {
  label: string;
  marker: string;
  points: RankedCandidate[];
}

const fmtTick = (v: number): string => (v >= 10000 ? `${(v / 1000).toFixed(0)}k` : v >= 100 ? v.toFixed(0) : v.toFixed(1));

/**
 * Render series on a width x height character grid. Points meeting the SLA use the series marker, the others
 * a dot; `xTarget` (the TPOT target as tokens/s/user) is drawn as a dashed vertical line.
 */
export function asciiPareto(series: PlotSeries[], opts: { width?: number; height?: number; xTarget?: number } = {}): string {
  const width = opts.width ?? 60;
  const height = opts.height ?? 14;
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return '(no points to plot)';
  const xs = all.map((p) => p.estimate.metrics.tokPerSPerUser);
  const ys = all.map((p) => p.clusterTokPerSPerGpu);
  let xMax = Math.max(...xs, opts.xTarget ?? 0) * 1.05;
  let yMax = Math.max(...ys) * 1.05;
  if (!(xMax > 0)) xMax = 1;
  if (!(yMax > 0)) yMax = 1;
  const grid: string[][] = Array.from({ length: height }, () => Array.from({ length: width }, () => ' '));
  const col = (x: number) => Math.min(width - 1, Math.max(0, Math.round((x / xMax) * (width - 1))));
  const row = (y: number) => Math.min(height - 1, Math.max(0, height - 1 - Math.round((y / yMax) * (height - 1))));
  if (opts.xTarget !== undefined && opts.xTarget > 0) {
    const c = col(opts.xTarget);
    for (let r = 0; r < height; r++) if (r % 2 === 0) grid[r][c] = ':';
  }
  for (const s of series) {
    for (const p of s.points) {
      const r = row(p.clusterTokPerSPerGpu);
      const c = col(p.estimate.metrics.tokPerSPerUser);
      const mark = p.meetsSla === false ? '.' : s.marker;
      const cur = grid[r][c];
      // Where two series share a cell, show '#'; SLA-meeting markers win over dots.
      if (cur === ' ' || cur === ':' || cur === '.') grid[r][c] = mark;
      else if (cur !== mark && mark !== '.') grid[r][c] = '#';
    }
  }
  const yLabelW = Math.max(fmtTick(yMax).length, fmtTick(0).length);
  const lines: string[] = [];
  for (let r = 0; r < height; r++) {
    const yVal = ((height - 1 - r) / (height - 1)) * yMax;
    const label = r === 0 || r === height - 1 || r === Math.floor((height - 1) / 2) ? fmtTick(yVal) : '';
    lines.push(`${label.padStart(yLabelW)} |${grid[r].join('')}`);
  }
  lines.push(`${' '.repeat(yLabelW)} +${'-'.repeat(width)}`);
  const left = fmtTick(0);
  const mid = fmtTick(xMax / 2);
  const right = fmtTick(xMax);
  const axis = left.padEnd(Math.floor(width / 2) - Math.floor(mid.length / 2)) + mid;
  lines.push(`${' '.repeat(yLabelW + 2)}${axis.padEnd(width - right.length)}${right}`);
  lines.push(`${' '.repeat(yLabelW + 2)}x: tokens/s/user   y: tokens/s/gpu (cluster)`);
  const legend = series.map((s) => `${s.marker} ${s.label}`).join('   ');
  const extra = `   . misses the SLA${opts.xTarget ? '   : TPOT target' : ''}${series.length > 1 ? '   # both' : ''}`;
  lines.push(`${' '.repeat(yLabelW + 2)}${legend}${extra}`);
  return lines.join('\n');
}
