// Placeholder until the 'estimate' command lands.
import type { Command } from 'commander';
import { runAction } from '../common.js';
import { InferplanError } from '../../util/errors.js';

export function registerEstimate(program: Command): void {
  program
    .command('estimate')
    .description('(not yet available)')
    .option('--json', 'machine-readable output')
    .allowUnknownOption()
    .action(async (opts) => runAction(opts, () => {
      throw new InferplanError('the estimate command is not available yet', 1);
    }));
}
