// Placeholder until the 'perf' command lands.
import type { Command } from 'commander';
import { runAction } from '../common.js';
import { InferplanError } from '../../util/errors.js';

export function registerPerf(program: Command): void {
  program
    .command('perf')
    .description('(not yet available)')
    .option('--json', 'machine-readable output')
    .allowUnknownOption()
    .action(async (opts) => runAction(opts, () => {
      throw new InferplanError('the perf command is not available yet', 1);
    }));
}
