// Placeholder until the 'exp' command lands.
import type { Command } from 'commander';
import { runAction } from '../common.js';
import { InferplanError } from '../../util/errors.js';

export function registerExp(program: Command): void {
  program
    .command('exp')
    .description('(not yet available)')
    .option('--json', 'machine-readable output')
    .allowUnknownOption()
    .action(async (opts) => runAction(opts, () => {
      throw new InferplanError('the exp command is not available yet', 1);
    }));
}
