// Compile data/systems/*.yaml into dist/systems.json (after tsc), which start-up reads while the YAML is unchanged.
import { writeCompiledSystems } from '../dist/inputs/systems.js';
writeCompiledSystems();
