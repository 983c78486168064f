// Placeholder until the 'calibrate' command lands.
import type { Command } from 'commander';
import { runAction } from '../common.js';
import { InferplanError } from '../../util/errors.js';

export function registerCalibrate(program: Command): void {
  program
    .command('calibrate')
    .description('(not yet available)')
    .option('--json', 'machine-readable output')
    .allowUnknownOption()
    .action(async (opts) => runAction(opts, () => {
      throw new InferplanError('the calibrate command is not available yet', 1);
    }));
}
