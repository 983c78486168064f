// Placeholder until the 'models' command lands.
import type { Command } from 'commander';
import { runAction } from '../common.js';
import { InferplanError } from '../../util/errors.js';

export function registerModels(program: Command): void {
  program
    .command('models')
    .description('(not yet available)')
    .option('--json', 'machine-readable output')
    .allowUnknownOption()
    .action(async (opts) => runAction(opts, () => {
      throw new InferplanError('the models command is not available yet', 1);
    }));
}
