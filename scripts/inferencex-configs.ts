// What the InferenceX sweeps among the dev rows ran, from that project's own published configuration: for each
// search-space entry, the checkpoint served, the speculative decoding (checkpoints with MTP layers) and, for
// disaggregated runs, the deployment (workers, tp, ep and attention DP of each pool), which the dev rows record only
// in part (the base model's name, no worker counts, attention DP folded into tp). bench/dev-sources.ts reads the
// file this writes to set those columns of the InferenceX rows (silicon_data_source "source_file=...; model=...;
// image=..."); docs/engine.md "Speculative decoding" says how.
//   npx tsx scripts/inferencex-configs.ts --repo DIR [--since 2025-10-01] [--until 2026-04-10]
// DIR is a git checkout of github.com/SemiAnalysisAI/InferenceX; every version of .github/configs/nvidia-master.yaml
// committed in the window is read (the dev rows were measured from 2025-10 to 2026-04). Writes
// bench/sources/inferencex.json: configuration facts (names, images, parallelism, load, depth), no measurements.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import type { AggEntry, Common, DisaggEntry, Pool } from '../bench/dev-sources.js';

const args = process.argv.slice(2);
const argOf = (name: string, fallback?: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const repo = argOf('--repo');
if (!repo) {
  console.error('usage: npx tsx scripts/inferencex-configs.ts --repo DIR (a checkout of SemiAnalysisAI/InferenceX)');
  process.exit(2);
}
const since = argOf('--since', '2025-10-01')!;
const until = argOf('--until', '2026-04-10')!;
const CONFIG = '.github/configs/nvidia-master.yaml';

/** Model prefixes of the configurations, as the sweeps' results name the model (`model=` in the rows). */
const MODELS: Record<string, string> = { dsr1: 'DeepSeek-R1', glm5: 'GLM-5', 'qwen3.5': 'Qwen3.5-397B', gptoss: 'GPT-OSS-120B' };
/** Runners (without "-multinode") as the dev rows name the system. */
const SYSTEMS: Record<string, string> = { b200: 'b200_sxm', b300: 'b300_sxm', gb200: 'gb200', gb300: 'gb300', h100: 'h100_sxm', h200: 'h200_sxm' };
const BACKENDS: Record<string, string> = { sglang: 'sglang', trt: 'trtllm', 'dynamo-sglang': 'sglang', 'dynamo-trt': 'trtllm' };

/**
 * Draft depth of a single-node entry with `spec-decoding: mtp`, as the sweep's launch scripts set it
 * (benchmarks/single_node/*_mtp.sh): TRT-LLM MTP=3, MTP=1 with attention DP; SGLang DeepSeek-R1
 * --speculative-num-steps 2, Qwen3.5 3.
 */
function aggMtpDepth(prefix: string, backend: string, dpAttn: boolean): number {
  if (backend === 'trtllm') return dpAttn ? 1 : 3;
  return prefix === 'dsr1' ? 2 : 3;
}

/** Draft depth of a disaggregated entry: its recipe file's "mtpN" (TRT-LLM), 0 without MTP, null when MTP names none. */
function disaggMtpDepth(spec: string | undefined, settings: string[]): number | null {
  const n = /mtp(\d)/.exec(settings.join(' '))?.[1];
  if (n !== undefined) return Number(n);
  return spec === 'mtp' ? null : 0;
}


interface RawPool { 'num-worker'?: number; tp?: number; ep?: number; 'dp-attn'?: boolean; 'additional-settings'?: string[] }
interface SearchSpace { tp?: number; ep?: number; 'dp-attn'?: boolean; 'conc-start'?: number; 'conc-end'?: number; 'conc-list'?: number[]; 'spec-decoding'?: string; prefill?: RawPool; decode?: RawPool }
interface Config { image: string; model: string; 'model-prefix': string; runner: string; precision: string; framework: string; multinode?: boolean; 'seq-len-configs'?: { isl: number; osl: number; 'search-space': SearchSpace[] }[] }

/** Keep an entry once, with the first and last day a configuration version listed it. */
function note<T extends Common>(m: Map<string, T>, e: Omit<T, 'listed'>, day: string): void {
  const key = JSON.stringify(e);
  const had = m.get(key);
  if (had) had.listed[1] = day;
  else m.set(key, { ...e, listed: [day, day] } as T);
}

const pool = (p: RawPool): Pool => ({ workers: p['num-worker'] ?? 1, tp: p.tp ?? 1, ep: p.ep ?? 1, dpAttn: p['dp-attn'] === true });

const git = (...a: string[]): string => execFileSync('git', ['-C', repo, ...a], { encoding: 'utf8', maxBuffer: 1 << 28 });
const commits = git('log', '--format=%H %cs', `--since=${since}`, `--until=${until}`, '--', CONFIG).trim().split('\n').filter(Boolean).map((l) => l.split(' '));
const agg = new Map<string, AggEntry>();
const disagg = new Map<string, DisaggEntry>();
for (const [hash, day] of [...commits].reverse()) {
  let doc: Record<string, Config>;
  try {
    doc = parse(git('show', `${hash}:${CONFIG}`)) as Record<string, Config>;
  } catch {
    continue; // a version that does not parse was fixed by the next commit
  }
  for (const [config, c] of Object.entries(doc)) {
    const model = MODELS[c?.['model-prefix']];
    const system = SYSTEMS[String(c?.runner).replace(/-multinode$/, '')];
    const backend = BACKENDS[c?.framework];
    if (!model || !system || !backend) continue;
    for (const sl of c['seq-len-configs'] ?? []) {
      const common: Omit<Common, 'listed'> = { config, image: c.image.replace('#', '/'), model, checkpoint: c.model, system, backend, precision: c.precision, isl: sl.isl, osl: sl.osl };
      for (const s of sl['search-space'] ?? []) {
        if (s.prefill && s.decode && s['conc-list']) {
          const settings = [...(s.prefill['additional-settings'] ?? []), ...(s.decode['additional-settings'] ?? [])];
          const e: Omit<DisaggEntry, 'listed'> = { ...common, conc: s['conc-list'], prefill: pool(s.prefill), decode: pool(s.decode), nextn: disaggMtpDepth(s['spec-decoding'], settings) };
          note(disagg, e, day!);
        } else if (!c.multinode) {
          const dpAttn = s['dp-attn'] === true;
          const concRange = s['conc-list'] === undefined;
          const e: Omit<AggEntry, 'listed'> = {
            ...common, tp: s.tp ?? 1, ep: s.ep ?? 1, dpAttn, conc: concRange ? [s['conc-start']!, s['conc-end']!] : s['conc-list']!, concRange,
            nextn: s['spec-decoding'] === 'mtp' ? aggMtpDepth(c['model-prefix'], backend, dpAttn) : 0,
          };
          note(agg, e, day!);
        }
      }
    }
  }
}
const sorted = <T extends Common>(m: Map<string, T>): T[] => [...m.values()].sort((a, b) => (a.config + a.image < b.config + b.image ? -1 : a.config + a.image > b.config + b.image ? 1 : 0));
const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'sources', 'inferencex.json');
mkdirSync(dirname(out), { recursive: true });
// One entry per line: the file is read by people checking what the benchmark assumed, and diffs stay small.
const lines = (xs: object[]): string => xs.map((e) => `  ${JSON.stringify(e)}`).join(',\n');
const head = {
  source: `github.com/SemiAnalysisAI/InferenceX ${CONFIG}, ${commits.length} versions committed ${since} to ${until} (newest ${commits[0]?.[0]?.slice(0, 9) ?? 'none'})`,
  generator: 'npx tsx scripts/inferencex-configs.ts --repo DIR',
};
const aggs = sorted(agg);
const disaggs = sorted(disagg);
writeFileSync(out, `${JSON.stringify(head, null, 1).slice(0, -2)},\n "agg": [\n${lines(aggs)}\n ],\n "disagg": [\n${lines(disaggs)}\n ]\n}\n`);
console.log(`wrote ${out}: ${aggs.length} agg and ${disaggs.length} disagg entries from ${commits.length} versions`);
