import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { redactUrlsIn } from '../postgres/redactedUrl.js';
import { registerAccountCommands, registerKeyCommands } from './accountCommands.js';
import { registerAdminKeyCommands } from './adminKeyCommands.js';
import { registerAskCommand } from './askCommand.js';
import { registerBackupCommand } from './backupCommand.js';
import { registerBatchCommands } from './batchCommands.js';
import { exitStatusHelp } from './exitStatuses.js';
import { registerMigrateCommand } from './migrateCommand.js';
import { registerModelsCommand } from './modelsCommand.js';
import { CliError, type Output, processOutput } from './output.js';
import { registerReplayCommand } from './replayCommand.js';
import { registerRequestCommands } from './requestCommands.js';
import { registerServeCommand } from './serveCommand.js';
import { registerUsageCommand } from './usageCommand.js';
import { registerWebhookCommands } from './webhookCommands.js';

/** The version in the checkout's package.json: the nearest one above this file (it runs from src/ or dist/src/). */
const packageVersion = (): string => {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dirname(dir) !== dir; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
};

// Each command's modules (zod, effect, lmdb, the server, the client) are loaded by its action, not here: building
// the program costs only commander, so `--help`, `--version` and every command start at once.
export const buildProgram = (output: Output = processOutput): Command => {
  const program = new Command('airs')
    .description('Asynchronous AI Request Service')
    .version(packageVersion(), '-V, --version', 'print the version of airs')
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => process.stdout.write(text),
      writeErr: (text) => output.err(text.trimEnd()),
    });
  registerServeCommand(program, output);
  registerAccountCommands(program, output);
  registerKeyCommands(program, output);
  registerAdminKeyCommands(program, output);
  registerReplayCommand(program, output);
  registerRequestCommands(program, output);
  registerBatchCommands(program, output);
  registerWebhookCommands(program, output);
  registerBackupCommand(program, output);
  registerMigrateCommand(program, output);
  registerAskCommand(program, output);
  registerModelsCommand(program, output);
  registerUsageCommand(program, output);
  program.addHelpText('after', exitStatusHelp());
  return program;
};

/** Runs the CLI; returns the exit status. Every failure is one line on stderr. */
export const runCli = async (argv: readonly string[], output: Output = processOutput): Promise<number> => {
  const program = buildProgram(output);
  try {
    await program.parseAsync(argv as string[], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof CliError) {
      // No message: what went wrong was said already (by a server process that `serve --processes` started).
      if (error.message !== '') output.err(`airs: ${error.message}`);
      return error.exitCode;
    }
    // A data directory this version cannot use or read is the operator's setting to fix, like a bad config file.
    if (error instanceof Error && ['UnknownLayout', 'DataDirUnusable', 'DataFileDamaged'].includes(error.name)) {
      const message =
        error.name === 'DataDirUnusable' ? (await import('./context.js')).dataDirUnusableMessage(error) : error.message;
      output.err(`airs: ${message}`);
      return 2;
    }
    // A database URL in it (a client's message may quote one) is shown without its secrets (contract 18).
    output.err(`airs: unexpected failure: ${redactUrlsIn(error instanceof Error ? error.message : String(error))}`);
    return 1;
  }
};
