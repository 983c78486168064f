#!/usr/bin/env node
// Entry point: thin commander wiring. Each command lives in ./commands/<name>.ts and registers itself.
// Only the module of the command being run is imported, so start-up stays fast; help imports them all.
import { Command, CommanderError } from 'commander';
import { createRequire } from 'node:module';
import { normalizeArgv } from './argv.js';
import { ExitCode, InferplanError } from '../util/errors.js';

type Register = (program: Command) => void;

/** Command name -> loader of its register function, in the order `--help` lists them. */
const COMMANDS: Record<string, () => Promise<Register>> = {
  default: async () => (await import('./commands/default.js')).registerDefault,
  estimate: async () => (await import('./commands/estimate.js')).registerEstimate,
  recommend: async () => (await import('./commands/recommend.js')).registerRecommend,
  exp: async () => (await import('./commands/exp.js')).registerExp,
  generate: async () => (await import('./commands/generate.js')).registerGenerate,
  support: async () => (await import('./commands/support.js')).registerSupport,
  validate: async () => (await import('./commands/validate.js')).registerValidate,
  calibrate: async () => (await import('./commands/calibrate.js')).registerCalibrate,
  perf: async () => (await import('./commands/perf.js')).registerPerf,
  models: async () => (await import('./commands/models.js')).registerModels,
  systems: async () => (await import('./commands/systems.js')).registerSystems,
  'planner-profile': async () => (await import('./commands/planner-profile.js')).registerPlannerProfile,
  dgdr: async () => (await import('./commands/dgdr.js')).registerDgdr,
};

const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };

/** Build the program with the named commands (all of them when `only` is undefined). */
export async function buildProgram(only?: string): Promise<Command> {
  const program = new Command('configure')
    .description('inferplan: plan LLM serving deployments (vLLM, SGLang, TensorRT-LLM; aggregated and disaggregated) offline')
    .version(pkg.version, '-V, --version')
    .exitOverride();
  program.configureOutput({
    writeErr: (s) => process.stderr.write(s),
    // A usage error is one line (commander puts its "Did you mean" on a second one), with the hint where help is.
    outputError: (s, write) => write(s.startsWith('error:') ? `configure: ${s.trim().replace(/\s*\n\s*/g, ' ')} (run with --help for usage)\n` : s),
  });
  // `--version` needs no command; help (and an unknown command's message) lists them all.
  const versionOnly = only === '-V' || only === '--version';
  const names = only !== undefined && only in COMMANDS ? [only] : versionOnly ? [] : Object.keys(COMMANDS);
  const registers = await Promise.all(names.map((n) => COMMANDS[n]()));
  for (const register of registers) register(program);
  // Usage errors in subcommands exit 2 too.
  for (const cmd of program.commands) cmd.exitOverride();
  return program;
}

/**
 * A reader that stops early (`configure default ... | head`) closes the pipe: stop quietly, as Unix tools do.
 * Any other failure to write (a full disk, a closed terminal) is where the user sent the output: one line, exit 2.
 */
function exitOnWriteFailure(stream: NodeJS.WriteStream, name: string): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? ExitCode.ok);
    try {
      if (stream !== process.stderr) process.stderr.write(`configure: error: cannot write to ${name}: ${err.code ?? err.message}\n`);
    } finally {
      process.exit(ExitCode.badInput);
    }
  });
}

async function main(): Promise<void> {
  exitOnWriteFailure(process.stdout, 'standard output');
  exitOnWriteFailure(process.stderr, 'standard error');
  const args = normalizeArgv(process.argv.slice(2));
  try {
    const program = await buildProgram(args[0]);
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version are not errors.
      const benign = ['commander.helpDisplayed', 'commander.version', 'commander.help'];
      process.exitCode = benign.includes(err.code) ? ExitCode.ok : ExitCode.badInput;
      return;
    }
    // Errors thrown by option parsers (InputError) arrive here.
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    process.stderr.write(`configure: error: ${msg}\n`);
    process.exitCode = err instanceof InferplanError ? err.exitCode : ExitCode.internal;
  }
}

await main();
