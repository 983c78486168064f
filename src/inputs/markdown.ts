// Markdown tables of the bundled systems and models (README text is generated from the data, and tested).
import { layerMixSummary } from './layers.js';
import { countParams } from './params.js';
import { BACKENDS, type ModelSpec, type SystemSpec } from './types.js';

const row = (cells: (string | number)[]): string => `| ${cells.join(' | ')} |`;

export function systemsMarkdown(systems: SystemSpec[]): string {
  const lines = [
    row(['system', 'GPU', 'HBM GiB', 'HBM GB/s', 'dense TFLOPS bf16 / fp8 / fp4', 'GPUs per NVLink domain', 'scale-up GB/s', 'scale-out GB/s', 'vLLM', 'SGLang', 'TRT-LLM']),
    row(Array.from({ length: 11 }, () => '---')),
  ];
  for (const s of systems) {
    const t = s.gpu.tflops;
    const versions = BACKENDS.map((b) => {
      const sup = s.backends[b];
      return sup ? sup.versions.map((v) => (v === sup.default ? `**${v}**` : v)).join(', ') : '-';
    });
    lines.push(
      row([
        s.name + (s.aliases.length ? ` (${s.aliases.join(', ')})` : ''),
        s.gpu.name,
        s.gpu.memGiB,
        s.gpu.memBwGBs,
        [t.bfloat16 ?? '-', t.fp8 ?? '-', t.nvfp4 ?? '-'].join(' / '),
        s.gpusPerNode,
        `${s.intraNodeBwGBs} (${s.intraNodeLink === 'nvlink' ? 'NVLink' : 'PCIe'})`,
        s.interNodeBwGBs,
        ...versions,
      ]),
    );
  }
  return lines.join('\n');
}

export function modelsMarkdown(models: ModelSpec[]): string {
  const lines = [row(['id', 'family', 'params B (published)', 'layers', 'layer mix', 'hidden', 'heads / kv', 'experts', 'weights', 'KV cache', 'also resolves']), row(Array.from({ length: 11 }, () => '---'))];
  for (const m of models) {
    const experts = m.moe ? `${m.moe.numExperts}${m.moe.sharedExperts ? `+${m.moe.sharedExperts}` : ''} top-${m.moe.topK}` : '-';
    const weights = m.quant.gemmDtype === m.quant.moeDtype ? m.quant.gemmDtype : `${m.quant.gemmDtype}, experts ${m.quant.moeDtype}`;
    lines.push(
      row([
        m.id,
        m.family,
        `${(countParams(m) / 1e9).toFixed(2)} (${m.publishedParamsB ?? '?'})`,
        m.numLayers,
        layerMixSummary(m),
        m.hiddenSize,
        m.mla ? `${m.numHeads} (MLA)` : `${m.numHeads} / ${m.numKvHeads}`,
        experts,
        weights,
        m.kvDtype,
        (m.aliases ?? []).join(', ') || '-',
      ]),
    );
  }
  return lines.join('\n');
}
