import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCompiledSystems } from '../../src/inputs/systems.js';
import { writeCompiledModels } from '../../src/inputs/registry.js';
import { readCompiled } from '../../src/util/compiled-data.js';

describe("the build's JSON copies of data/systems and data/models", () => {
  const dir = mkdtempSync(join(tmpdir(), 'compiled-'));
  for (const [folder, write] of [['systems', writeCompiledSystems], ['models', writeCompiledModels]] as const) {
    it(`data/${folder}: the copy reads back as parsed (nothing JSON cannot hold) and is ignored once a file changes`, () => {
      const file = join(dir, `${folder}.json`);
      const written = write(file);
      expect(written.length).toBeGreaterThan(5);
      expect(readCompiled(folder, file)).toEqual(written);
      const stale = JSON.parse(readFileSync(file, 'utf8')) as { sources: Record<string, string> };
      const first = Object.keys(stale.sources)[0]!;
      stale.sources[first] = '1:1';
      writeFileSync(file, JSON.stringify(stale));
      expect(readCompiled(folder, file)).toBeUndefined();
      expect(readCompiled(folder, join(dir, 'missing.json'))).toBeUndefined();
    });
  }
});
