// Bundled models: data/models/*.yaml in our own normalized schema (ModelSpec fields in camelCase, plus aliases and
// publishedParamsB). An entry may `extends` another entry's id and restate only what differs (quantized variants).
import { readdirSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { readCompiled, writeCompiled } from '../util/compiled-data.js';
import { dataPath } from '../util/paths.js';
import { DTYPES, type Dtype, type ModelSpec } from './types.js';
import { layersFromPattern, nemotronBlockLayers, toRuns, type LayerOf } from './layers.js';

const dtype = z.enum(DTYPES);
const int = z.number().int().nonnegative();
const pos = z.number().int().positive();

const attentionShape = z.strictObject({ numHeads: pos, numKvHeads: pos, headDim: pos, vHeadDim: pos.optional(), kEqV: z.literal(true).optional() });

const entrySchema = z.strictObject({
  id: z.string().regex(/^[\w.-]+\/[\w.-]+$/, 'expected ORG/NAME'),
  extends: z.string().optional(),
  aliases: z.array(z.string().min(1)).optional(),
  publishedParamsB: z.number().positive().optional(),
  family: z.string().min(1).optional(),
  architecture: z.string().min(1).optional(),
  numLayers: pos.optional(),
  hiddenSize: pos.optional(),
  numHeads: pos.optional(),
  numKvHeads: pos.optional(),
  headDim: pos.optional(),
  intermediateSize: int.optional(),
  vocabSize: pos.optional(),
  tiedEmbeddings: z.boolean().optional(),
  maxPositionEmbeddings: pos.optional(),
  /** `pattern` repeats over the layers: S = sliding-window layer, F = full attention (gpt-oss: "SF"). */
  slidingWindow: z.strictObject({ window: pos, pattern: z.string().regex(/^[SF]+$/) }).optional(),
  moe: z
    .strictObject({
      numExperts: pos,
      topK: pos,
      expertIntermediateSize: pos,
      sharedExperts: int,
      sharedIntermediateSize: int,
      firstDenseLayers: int,
      layerStep: pos.optional(),
      latentSize: pos.optional(),
    })
    .optional(),
  mla: z
    .strictObject({ qLoraRank: int, kvLoraRank: pos, qkNopeHeadDim: pos, qkRopeHeadDim: pos, vHeadDim: pos })
    .optional(),
  mtpLayers: int.optional(),
  languageModelOnly: z.boolean().optional(),
  qkNorm: z.enum(['per_head', 'across_heads']).optional(),
  layerOverrides: z
    .array(
      z.strictObject({
        layer: int,
        attention: z.enum(['full', 'none', 'linear']).optional(),
        numKvHeads: pos.optional(),
        intermediateSize: int.optional(),
        ffn: z.enum(['full', 'none', 'linear']).optional(),
      }),
    )
    .optional(),
  quant: z.strictObject({ scheme: z.string().min(1), gemmDtype: dtype, moeDtype: dtype }).optional(),
  kvDtype: dtype.optional(),
  /**
   * The layer mix of a hybrid or sparse model, one letter per layer, repeated over the layers (LAYER_LETTERS:
   * Qwen3.5 "GGGF"); `blockPattern` is Nemotron-H's hybrid_override_pattern (M mamba, * attention, E MoE, - MLP).
   */
  layerPattern: z.string().regex(/^[FGMKDXNWCH]+$/).optional(),
  blockPattern: z.string().regex(/^[M*E-]+$/).optional(),
  /** DeepSeek-V4: the sliding window beside each compressed KV (layerPattern W / C / H). */
  compressedWindow: pos.optional(),
  gdn: z.strictObject({ numKeyHeads: pos, numValueHeads: pos, keyHeadDim: pos, valueHeadDim: pos, convKernel: pos, stateBytes: pos }).optional(),
  mamba2: z.strictObject({ numHeads: pos, headDim: pos, stateSize: pos, groups: pos, convKernel: pos, chunkSize: pos, stateBytes: pos }).optional(),
  kda: z.strictObject({ numHeads: pos, headDim: pos, convKernel: pos, stateBytes: pos }).optional(),
  indexer: z.strictObject({ topK: pos, numHeads: pos, headDim: pos, blockSize: pos.optional() }).optional(),
  compressed: z.strictObject({ hcMult: pos, oLoraRank: pos, oGroups: pos, hashLayers: int, qLoraRank: pos.optional(), sinkhornIters: pos.optional() }).optional(),
  attentionShapes: z.strictObject({ full: attentionShape.optional(), sliding: attentionShape.optional() }).optional(),
  attentionOutputGate: z.boolean().optional(),
  ungatedMlp: z.boolean().optional(),
});
type Entry = z.infer<typeof entrySchema>;

const fileSchema = z.strictObject({ models: z.array(entrySchema).min(1) });

const REQUIRED = [
  'family', 'architecture', 'numLayers', 'hiddenSize', 'numHeads', 'numKvHeads', 'headDim', 'intermediateSize',
  'vocabSize', 'tiedEmbeddings', 'maxPositionEmbeddings', 'quant', 'kvDtype',
] as const;

function toSpec(e: Entry, file: string): ModelSpec {
  for (const k of REQUIRED) if (e[k] === undefined) throw new Error(`data/models/${file}: ${e.id}: missing ${k}`);
  const numLayers = e.numLayers!;
  const spec: ModelSpec = {
    id: e.id,
    family: e.family!,
    architecture: e.architecture!,
    numLayers,
    hiddenSize: e.hiddenSize!,
    numHeads: e.numHeads!,
    numKvHeads: e.numKvHeads!,
    headDim: e.headDim!,
    intermediateSize: e.intermediateSize!,
    vocabSize: e.vocabSize!,
    tiedEmbeddings: e.tiedEmbeddings!,
    maxPositionEmbeddings: e.maxPositionEmbeddings!,
    quant: { ...e.quant! },
    kvDtype: e.kvDtype!,
    source: 'bundled',
  };
  if (e.slidingWindow) {
    const p = e.slidingWindow.pattern;
    spec.slidingWindow = { window: e.slidingWindow.window, layers: Array.from({ length: numLayers }, (_, i) => p[i % p.length] === 'S') };
  }
  if (e.moe) spec.moe = { ...e.moe };
  if (e.mla) spec.mla = { ...e.mla };
  if (e.mtpLayers) spec.mtpLayers = e.mtpLayers;
  if (e.languageModelOnly) spec.languageModelOnly = true;
  if (e.qkNorm) spec.qkNorm = e.qkNorm;
  if (e.layerOverrides) {
    const bad = e.layerOverrides.find((o) => o.layer >= numLayers);
    if (bad) throw new Error(`data/models/${file}: ${e.id}: layer override ${bad.layer} beyond ${numLayers} layers`);
    spec.layerOverrides = e.layerOverrides.map((o) => ({ ...o }));
  }
  addLayerMix(spec, e, file);
  for (const k of ['gdn', 'mamba2', 'kda', 'indexer', 'compressed'] as const) if (e[k]) Object.assign(spec, { [k]: { ...e[k] } });
  if (e.attentionShapes) spec.attentionShapes = structuredClone(e.attentionShapes);
  if (e.attentionOutputGate) spec.attentionOutputGate = true;
  if (e.ungatedMlp) spec.ungatedMlp = true;
  if (e.publishedParamsB !== undefined) spec.publishedParamsB = e.publishedParamsB;
  if (e.aliases?.length) spec.aliases = [...e.aliases];
  return spec;
}

/** The layer mix of a hybrid entry (layerPattern or Nemotron-H's blockPattern, whose blocks also set layer overrides). */
function addLayerMix(spec: ModelSpec, e: Entry, file: string): void {
  let layers: LayerOf[] | undefined;
  if (e.blockPattern) {
    if (e.blockPattern.length !== spec.numLayers) throw new Error(`data/models/${file}: ${e.id}: blockPattern has ${e.blockPattern.length} blocks for ${spec.numLayers} layers`);
    const parsed = nemotronBlockLayers([...e.blockPattern]);
    if ('unknown' in parsed) throw new Error(`data/models/${file}: ${e.id}: unknown block ${parsed.unknown}`);
    layers = parsed.layers;
    spec.layerOverrides = parsed.overrides;
  } else if (e.layerPattern) layers = layersFromPattern(e.layerPattern, spec.numLayers, e.compressedWindow);
  if (layers?.some((l) => l.kind !== 'full' && l.kind !== 'sliding')) spec.layerMix = toRuns(layers);
}

let cache: ModelSpec[] | undefined;

const modelFiles = (): string[] => readdirSync(dataPath('models')).filter((f) => f.endsWith('.yaml')).sort();

/** Load and validate every bundled model (cached). Broken bundled data is an internal error, not user input. */
export function loadRegistry(): ModelSpec[] {
  cache ??= readCompiled<ModelSpec[]>('models') ?? loadFiles(modelFiles());
  return cache;
}

/** Compile data/models into the build's copy (or `file`); returns what it wrote. */
export function writeCompiledModels(file?: string): ModelSpec[] {
  return writeCompiled('models', loadFiles(modelFiles()), file);
}

/** The specs of some of the data/models files (their `extends` resolved within them). */
function loadFiles(files: string[]): ModelSpec[] {
  const dir = dataPath('models');
  const entries: { e: Entry; file: string }[] = [];
  for (const file of files) {
    const parsed = fileSchema.safeParse(parseYaml(readFileSync(`${dir}/${file}`, 'utf8')));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(`data/models/${file}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
    }
    for (const e of parsed.data.models) entries.push({ e, file });
  }
  const byId = new Map(entries.map((x) => [x.e.id, x]));
  const resolved = new Map<string, Entry>();
  const resolve = (id: string, seen: string[]): Entry => {
    const done = resolved.get(id);
    if (done) return done;
    const x = byId.get(id);
    if (!x) throw new Error(`data/models: "${seen.at(-1)}" extends unknown model "${id}"`);
    if (seen.includes(id)) throw new Error(`data/models: extends cycle at ${id}`);
    // Aliases and published size belong to the entry itself, never inherited.
    const { aliases: _a, publishedParamsB: _p, id: _i, extends: _x, ...parent } = x.e.extends ? resolve(x.e.extends, [...seen, id]) : ({ id } as Entry);
    const merged = { ...parent, ...x.e } as Entry;
    resolved.set(id, merged);
    return merged;
  };
  const specs = entries.map(({ e, file }) => toSpec(resolve(e.id, []), file));
  const names = new Map<string, string>();
  for (const s of specs) {
    for (const n of [s.id, ...(s.aliases ?? [])]) {
      const k = n.toLowerCase();
      const prev = names.get(k);
      if (prev) throw new Error(`data/models: "${n}" names both ${prev} and ${s.id}`);
      names.set(k, s.id);
    }
  }
  return specs;
}

/**
 * A bundled model by its exact id or alias from the files whose text names it, without parsing the others (the
 * YAML of every family costs more start-up time than the rest of a run's set-up); undefined when none does.
 */
function findInNamingFiles(k: string): ModelSpec | undefined {
  if (quickHits.has(k)) return quickHits.get(k);
  const dir = dataPath('models');
  fileTexts ??= new Map(modelFiles().map((f) => [f, readFileSync(`${dir}/${f}`, 'utf8')]));
  const text = fileTexts;
  const files = new Set([...text.keys()].filter((f) => text.get(f)!.toLowerCase().includes(k)));
  if (!files.size) return undefined;
  // With the files that define what these extend (an entry may extend one of another family's file).
  for (let grown = true; grown; ) {
    grown = false;
    for (const f of [...files])
      for (const [, id] of text.get(f)!.matchAll(/^\s*extends:\s*(\S+)/gm))
        for (const [g, t] of text)
          if (!files.has(g) && t.includes(`id: ${id}`)) (files.add(g), (grown = true));
  }
  let hit: ModelSpec | undefined;
  try {
    hit = loadFiles([...files].sort()).find((s) => s.id.toLowerCase() === k || (s.aliases ?? []).some((a) => a.toLowerCase() === k));
  } catch {
    hit = undefined; // files that do not load on their own: the full registry answers (and reports)
  }
  quickHits.set(k, hit);
  return hit;
}

/** The data/models files' text and the quick lookups made from them, read once a process. */
let fileTexts: Map<string, string> | undefined;
const quickHits = new Map<string, ModelSpec | undefined>();

/**
 * A bundled model by id or alias (case-insensitive), or undefined. A bare name without the organisation
 * ("Qwen3-32B") matches when exactly one bundled id or alias ends with it.
 */
export function findBundled(name: string): ModelSpec | undefined {
  const k = name.trim().toLowerCase();
  cache ??= readCompiled<ModelSpec[]>('models');
  if (!cache && k.includes('/')) {
    const quick = findInNamingFiles(k);
    if (quick) return quick;
  }
  const all = loadRegistry();
  const exact = all.find((s) => s.id.toLowerCase() === k || (s.aliases ?? []).some((a) => a.toLowerCase() === k));
  if (exact || k.includes('/')) return exact;
  const bare = all.filter((s) => [s.id, ...(s.aliases ?? [])].some((n) => n.toLowerCase().split('/')[1] === k));
  return bare.length === 1 ? bare[0] : undefined;
}

/**
 * Organisations that moved on the Hub, old name (lower case) to new. The Hub redirects the old ids; the measured
 * runs and older scripts still use them.
 * - THUDM -> zai-org: Zhipu AI moved its GLM repositories (THUDM/GLM-4-9B-0414 is now zai-org/GLM-4-9B-0414).
 * - zhipuai -> zai-org: the spelling of the end-to-end measurements (zhipuai/GLM-5 is zai-org/GLM-5).
 */
const MOVED_ORGS: Readonly<Record<string, string>> = {
  thudm: 'zai-org',
  zhipuai: 'zai-org',
};

/** The current id of a model whose organisation moved (`zhipuai/GLM-5` -> `zai-org/GLM-5`); other names unchanged. */
export function renamedId(name: string): string {
  const m = /^([\w.-]+)\/([\w.-]+)$/.exec(name.trim());
  const org = m ? MOVED_ORGS[m[1]!.toLowerCase()] : undefined;
  return m && org ? `${org}/${m[2]}` : name;
}
