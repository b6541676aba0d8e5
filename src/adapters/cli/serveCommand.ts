import type { Command } from 'commander';
import { type ServeOptions, serveConfigOrFail, withStoreOptions } from './context.js';
import type { Output } from './output.js';

/**
 * `airs serve`: one server process, or (`--processes N`, config `processes`) a primary that runs N of them on one port
 * and one store. Several `airs serve` may also run on one data directory, on other ports: the store decides every
 * change against what all of them committed, and nothing that must hold across them is kept in a process.
 */
export const registerServeCommand = (program: Command, output: Output) => {
  withStoreOptions(program.command('serve'))
    .description(
      'run the server; prints the URL it listens on (each setting: flag, else environment, else config). SIGHUP (to the primary under --processes) reads the config file again and applies its models and plans without a restart; other settings need one',
    )
    .option(
      '--port <port>',
      'the port to listen on, 0 for any free one (default: $PORT, else port of the config, else 8080)',
    )
    .option('--host <host>', 'the address to listen on (default: $HOST, else host of the config, else 127.0.0.1)')
    .option(
      '--processes <n>',
      'server processes sharing the port and the store, 1 to 256 (default: processes of the config, else 1)',
    )
    .action(async (options: ServeOptions) => {
      // Flags win over the environment, which wins over the config file.
      const config = await serveConfigOrFail(options);
      const { default: cluster } = await import('node:cluster');
      if (cluster.isPrimary && config.processes > 1) {
        const { serveMany } = await import('./serveMany.js');
        return serveMany(config, output);
      }
      const { serveOne } = await import('./serveOne.js');
      // A reload reads the file as this start did: the same flags, environment and checks.
      return serveOne(config, output, () => serveConfigOrFail(options));
    });
};
