import { Command, CommanderError } from 'commander';
import { registerAccountCommands, registerKeyCommands } from './accountCommands.js';
import { registerAskCommand } from './askCommand.js';
import { CliError, type Output, processOutput } from './output.js';
import { registerReplayCommand } from './replayCommand.js';
import { registerServeCommand } from './serveCommand.js';

export const buildProgram = (output: Output = processOutput): Command => {
  const program = new Command('airs')
    .description('Asynchronous AI Request Service')
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => process.stdout.write(text),
      writeErr: (text) => output.err(text.trimEnd()),
    });
  registerServeCommand(program, output);
  registerAccountCommands(program, output);
  registerKeyCommands(program, output);
  registerReplayCommand(program, output);
  registerAskCommand(program, output);
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
      output.err(`airs: ${error.message}`);
      return error.exitCode;
    }
    // A data directory this version cannot use or read is the operator's setting to fix, like a bad config file.
    if (error instanceof Error && ['UnknownLayout', 'DataDirUnusable', 'DataFileDamaged'].includes(error.name)) {
      output.err(`airs: ${error.message}`);
      return 2;
    }
    output.err(`airs: unexpected failure: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
};
