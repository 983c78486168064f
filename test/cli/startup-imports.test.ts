// `configure --version` and `configure systems` must start fast: the entry module may load only the CLI's
// plumbing statically, never the engine, the search, the perf tables or the output writers (each command loads
// its own module when run), and `systems` only what lists systems. Checked with esbuild's metafile.
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

async function staticInputsOf(entry: string): Promise<string[]> {
  const r = await build({
    entryPoints: [`${ROOT}/${entry}`], bundle: true, splitting: true, format: 'esm', platform: 'node', outdir: '/unused',
    write: false, metafile: true, logLevel: 'silent', external: ['@resvg/resvg-js', 'vega', 'vega-lite'],
  });
  const outputs = r.metafile.outputs;
  const entryOut = Object.keys(outputs).find((o) => outputs[o]!.entryPoint === entry)!;
  // Follow static imports only: dynamic ones (the commands) load on demand.
  const seen = new Set<string>();
  const walk = (o: string) => {
    if (seen.has(o)) return;
    seen.add(o);
    for (const imp of outputs[o]!.imports) if (imp.kind === 'import-statement' && outputs[imp.path]) walk(imp.path);
  };
  walk(entryOut);
  return [...seen].flatMap((o) => Object.keys(outputs[o]!.inputs));
}

describe('start-up imports', () => {
  it('the CLI entry loads no engine, search, perf or output module before a command is chosen', async () => {
    const inputs = await staticInputsOf('src/cli/main.ts');
    expect(inputs.some((i) => i.endsWith('src/cli/main.ts'))).toBe(true);
    expect(inputs.filter((i) => /src\/(engine|search\/(?!limits)|perf|output)\//.test(i))).toEqual([]);
  }, 60_000);
  it('`configure systems` loads neither the planner nor the schema library', async () => {
    const inputs = await staticInputsOf('src/cli/commands/systems.ts');
    expect(inputs.filter((i) => /src\/(engine|search|perf)\/|src\/output\/(?!table)|node_modules\/zod\//.test(i))).toEqual([]);
  }, 60_000);
});
