// Placeholder until the 'recommend' command lands.
import type { Command } from 'commander';
import { runAction } from '../common.js';
import { InferplanError } from '../../util/errors.js';

export function registerRecommend(program: Command): void {
  program
    .command('recommend')
    .description('(not yet available)')
    .option('--json', 'machine-readable output')
    .allowUnknownOption()
    .action(async (opts) => runAction(opts, () => {
      throw new InferplanError('the recommend command is not available yet', 1);
    }));
}
