import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelsMarkdown, systemsMarkdown } from '../../src/inputs/markdown.js';
import { listBundledModels } from '../../src/inputs/models.js';
import { listSystems } from '../../src/inputs/systems.js';

const DOC = readFileSync(join(import.meta.dirname, '../../docs/inputs.md'), 'utf8');

describe('docs/inputs.md is generated from the data', () => {
  it('systems table (configure systems --markdown)', () => {
    expect(DOC).toContain(systemsMarkdown(listSystems()));
  });
  it('models table (configure models --markdown)', () => {
    expect(DOC).toContain(modelsMarkdown(listBundledModels()));
  });
});
