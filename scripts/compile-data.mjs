// Compile data/systems and data/models (YAML) into dist/systems.json and dist/models.json after tsc: start-up
// reads these while the YAML is unchanged (src/util/compiled-data.ts).
import { writeCompiledSystems } from '../dist/inputs/systems.js';
import { writeCompiledModels } from '../dist/inputs/registry.js';
writeCompiledSystems();
writeCompiledModels();
