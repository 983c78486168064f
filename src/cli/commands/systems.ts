// Placeholder until the 'systems' command lands.
import type { Command } from 'commander';
import { runAction } from '../common.js';
import { InferplanError } from '../../util/errors.js';

export function registerSystems(program: Command): void {
  program
    .command('systems')
    .description('(not yet available)')
    .option('--json', 'machine-readable output')
    .allowUnknownOption()
    .action(async (opts) => runAction(opts, () => {
      throw new InferplanError('the systems command is not available yet', 1);
    }));
}
