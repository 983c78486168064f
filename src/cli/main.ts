#!/usr/bin/env node
// Entry point: thin commander wiring. Each command lives in ./commands/<name>.ts and registers itself.
import { Command, CommanderError } from 'commander';
import { createRequire } from 'node:module';
import { normalizeArgv } from './common.js';
import { ExitCode } from '../util/errors.js';
import { registerModels } from './commands/models.js';
import { registerSystems } from './commands/systems.js';
import { registerDefault } from './commands/default.js';
import { registerEstimate } from './commands/estimate.js';
import { registerRecommend } from './commands/recommend.js';
import { registerExp } from './commands/exp.js';
import { registerGenerate } from './commands/generate.js';
import { registerSupport } from './commands/support.js';
import { registerValidate } from './commands/validate.js';
import { registerCalibrate } from './commands/calibrate.js';
import { registerPerf } from './commands/perf.js';

const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };

export function buildProgram(): Command {
  const program = new Command('configure')
    .description('inferplan: plan LLM serving deployments (vLLM, SGLang, TensorRT-LLM; aggregated and disaggregated) offline')
    .version(pkg.version, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  program.configureOutput({
    writeErr: (s) => process.stderr.write(s),
    outputError: (s, write) => write(s.startsWith('error:') ? `configure: ${s}` : s),
  });
  for (const register of [
    registerDefault,
    registerEstimate,
    registerRecommend,
    registerExp,
    registerGenerate,
    registerSupport,
    registerValidate,
    registerCalibrate,
    registerPerf,
    registerModels,
    registerSystems,
  ]) {
    register(program);
  }
  // Usage errors in subcommands exit 2 too.
  for (const cmd of program.commands) cmd.exitOverride();
  return program;
}

async function main(): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(normalizeArgv(process.argv.slice(2)), { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version are not errors.
      const benign = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
      process.exitCode = benign.includes(err.code) ? ExitCode.ok : ExitCode.badInput;
      return;
    }
    // Errors thrown by option parsers (InputError) arrive here.
    const { InferplanError } = await import('../util/errors.js');
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    process.stderr.write(`configure: error: ${msg}\n`);
    process.exitCode = err instanceof InferplanError ? err.exitCode : ExitCode.internal;
  }
}

await main();
