// Bundle the CLI into dist/cli/main.js and a few shared chunks (after tsc): one file per command path instead of
// about a hundred modules and their packages to resolve at start-up, which was most of a run's wall time.
// Native and rarely used heavy packages stay external (resvg's binary; vega for charts, loaded when one is drawn).
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

rmSync(new URL('../dist/cli/chunks', import.meta.url), { recursive: true, force: true });
await build({
  entryPoints: [new URL('../src/cli/main.ts', import.meta.url).pathname],
  outdir: new URL('../dist/cli', import.meta.url).pathname,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  external: ['@resvg/resvg-js', 'vega', 'vega-lite'],
  // Bundled CommonJS packages call require() for Node's built-ins.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  // Less source to scan at each start; identifiers stay, so stack traces of real bugs still read.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
