import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { configOrFail, requireDatabase, type StoreOptions, withStoreOptions } from './context.js';
import { CliError, emit, type Output } from './output.js';

type BackupOptions = StoreOptions & { readonly json?: boolean };

/** A backup goes into a new or empty directory: it never overwrites another data directory. */
const checkDestination = (dest: string, source: string) => {
  if (resolve(dest) === resolve(source)) throw new CliError('the backup must go to another directory than the data', 2);
  if (!existsSync(dest)) return;
  if (!statSync(dest).isDirectory()) throw new CliError(`${dest} exists and is not a directory`, 2);
  if (readdirSync(dest).length > 0)
    throw new CliError(`${dest} is not empty; give a new or empty directory (a backup never overwrites)`, 2);
};

/** `airs backup DEST`: a consistent, compacted copy of the data directory, taken while the server runs and serves. */
export const registerBackupCommand = (program: Command, output: Output) => {
  withStoreOptions(program.command('backup'))
    .description(
      'write a consistent copy of the data directory to DEST while the server runs (restore: use DEST as AIRS_DATA_DIR)',
    )
    .argument('<dest>', 'a new or empty directory')
    .option('--json', 'print JSON')
    .action(async (dest: string, options: BackupOptions) => {
      const config = await configOrFail(options);
      if (config.store.url !== undefined) {
        const { storeName } = await import('../../storeLocation.js');
        throw new CliError(
          `the store is the ${storeName(config)}: back it up with PostgreSQL's own tools (pg_dump, base backups with point-in-time recovery), as docs/operations.md says; airs backup copies an LMDB data directory`,
          2,
        );
      }
      await requireDatabase(config, output);
      const target = resolve(dest);
      checkDestination(target, config.dataDir);
      const [
        { environmentFile, openDatabases },
        { markDataFile },
        { CannotMakeDirectory, makeDirectories },
        { openToOthers },
      ] = await Promise.all([
        import('../lmdb/databases.js'),
        import('../lmdb/dataFile.js'),
        import('../lmdb/dataDir.js'),
        import('../lmdb/fileModes.js'),
      ]);
      // Made here, one by one and 0700 (lmdb-js's own recursive mkdir spins forever under /proc).
      let created: string[];
      try {
        created = makeDirectories(target);
      } catch (error) {
        if (error instanceof CannotMakeDirectory)
          throw new CliError(
            `the backup directory ${target} cannot be ${error.creating ? 'created' : 'used'}: ${error.message}`,
            2,
          );
        throw error;
      }
      const started = Date.now();
      const spinner = process.stderr.isTTY
        ? (await import('yocto-spinner')).default({ text: `copying ${config.dataDir}`, stream: process.stderr }).start()
        : undefined;
      const dbs = openDatabases(config.dataDir);
      try {
        // LMDB's own copy: one read transaction, so the copy is the data as of one commit, whatever the server
        // writes meanwhile; compacted (free pages left out), so it is also the way to shrink a data file.
        await dbs.root.backup(environmentFile(target), true);
      } catch (error) {
        // Nothing half written stays behind to be taken for a backup: the directory was empty, or made here.
        rmSync(environmentFile(target), { force: true });
        if (created[0] !== undefined) rmSync(created[0], { recursive: true, force: true });
        throw new CliError(`backup failed: ${(error as Error).message}`);
      } finally {
        spinner?.stop();
        await dbs.root.close();
      }
      markDataFile(target);
      // Its files are 0600; a directory that was there already keeps its mode, and is named if others may enter it.
      const openWarning = openToOthers(target, 'the backup directory');
      if (openWarning !== undefined) output.err(`airs: ${openWarning}`);
      const bytes = statSync(environmentFile(target)).size;
      const seconds = (Date.now() - started) / 1000;
      emit(output, options.json, { source: config.dataDir, destination: target, bytes, seconds }, () => [
        `backup of ${config.dataDir} written to ${target} (${(bytes / (1024 * 1024)).toFixed(1)} MiB in ${seconds.toFixed(1)} s)`,
        `restore: stop the server and start it with AIRS_DATA_DIR=${target} (or copy that directory in place)`,
      ]);
    });
};
