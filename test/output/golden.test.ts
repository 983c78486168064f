// Golden files: the top-1 bundle for each backend x mode x Dynamo release: the 0.9 and 1.x lines (v1alpha1
// manifests) and release 1.4.0 (v1beta1).
// Regenerate after an intended change with: UPDATE_GOLDEN=1 npx vitest run test/output/golden.test.ts
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildGeneratorConfig } from '../../src/output/generator-config.js';
import { buildDeployManifest, buildEngineConfigs } from '../../src/output/k8s.js';
import { buildBenchScript, buildRunScripts } from '../../src/output/scripts.js';
import { fixture } from './fixtures.js';

const GOLDEN = join(import.meta.dirname, 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

describe('golden bundles', () => {
  for (const backend of ['vllm', 'sglang', 'trtllm'] as const) {
    for (const mode of ['agg', 'disagg'] as const) {
      for (const dynamoVersion of ['0.9', '1.x', '1.4.0'] as const) {
        const name = `${backend}_${mode}_dynamo${dynamoVersion}`;
        it(name, () => {
          const { result, ctx } = fixture({ backend });
          const p = { inputs: result.inputs, ctx, candidate: result[mode]!.top[0], dynamoVersion };
          const files: Record<string, string> = {
            'generator_config.yaml': buildGeneratorConfig(p),
            'k8s_deploy.yaml': buildDeployManifest(p),
            'bench.sh': buildBenchScript(p),
          };
          for (const s of buildRunScripts(p)) files[s.name] = s.content;
          for (const e of buildEngineConfigs(p)) files[e.name] = e.content;
          const dir = join(GOLDEN, name);
          if (UPDATE) {
            mkdirSync(dir, { recursive: true });
            for (const [f, c] of Object.entries(files)) writeFileSync(join(dir, f), c);
          }
          expect(existsSync(dir), `${dir} missing; run with UPDATE_GOLDEN=1`).toBe(true);
          expect(readdirSync(dir).sort()).toEqual(Object.keys(files).sort());
          for (const [f, c] of Object.entries(files)) expect(c, `${name}/${f}`).toBe(readFileSync(join(dir, f), 'utf8'));
        });
      }
    }
  }
});
