// Placeholder until the 'default' command lands.
import type { Command } from 'commander';
import { runAction } from '../common.js';
import { InferplanError } from '../../util/errors.js';

export function registerDefault(program: Command): void {
  program
    .command('default')
    .description('(not yet available)')
    .option('--json', 'machine-readable output')
    .allowUnknownOption()
    .action(async (opts) => runAction(opts, () => {
      throw new InferplanError('the default command is not available yet', 1);
    }));
}
