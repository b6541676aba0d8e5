import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, emit, type Output } from './output.js';

type MigrateOptions = { readonly from: string; readonly to: string; readonly json?: boolean };

/** The source must be an airs data directory already: migrate never creates one (a mistyped path is refused). */
const checkSource = async (dir: string): Promise<void> => {
  const stat = statSync(dir, { throwIfNoEntry: false });
  if (stat === undefined) throw new CliError(`no data directory at ${dir}: nothing to migrate (check --from)`, 2);
  if (!stat.isDirectory()) throw new CliError(`${dir} is not a directory: --from takes an airs data directory`, 2);
  const [{ environmentFile }, { checkDataFile }] = await Promise.all([
    import('../lmdb/databases.js'),
    import('../lmdb/dataFile.js'),
  ]);
  // A data file that is missing where the directory held one, or cut short, is damage: DataFileDamaged (exit 2).
  checkDataFile(dir, environmentFile(dir));
  if (statSync(environmentFile(dir), { throwIfNoEntry: false }) === undefined)
    throw new CliError(`no airs database in ${dir}: nothing to migrate (check --from)`, 2);
};

/**
 * `airs migrate --from DATA_DIR --to postgres://…`: the LMDB store copied into an empty PostgreSQL database, in one
 * transaction, checked before it commits (adapters/postgres/importLog.ts). The source is only read.
 */
export const registerMigrateCommand = (program: Command, output: Output) => {
  program
    .command('migrate')
    .description(
      'copy an LMDB data directory into an empty PostgreSQL database: the log replayed, every view rebuilt and verified, all in one transaction (stop the servers on the directory first)',
    )
    .requiredOption('--from <dir>', 'the data directory to copy (only read)')
    .requiredOption('--to <url>', 'a postgres:// URL of an empty database')
    .option('--json', 'print JSON')
    .action(async (options: MigrateOptions) => {
      const [{ isPostgresUrl }, { redactedUrl, withoutSecrets }] = await Promise.all([
        import('../../configFile.js'),
        import('../postgres/redactedUrl.js'),
      ]);
      if (!isPostgresUrl(options.to))
        throw new CliError(
          '--to: must be a postgres:// (or postgresql://) URL, e.g. postgres://airs:secret@db.internal:5432/airs',
          2,
        );
      const source = resolve(options.from);
      const database = redactedUrl(options.to);
      await checkSource(source);

      const [{ openDatabases }, { lmdbLogSource }, { openDb, sql }, importing] = await Promise.all([
        import('../lmdb/databases.js'),
        import('../lmdb/logSource.js'),
        import('../postgres/db.js'),
        import('../postgres/importLog.js'),
      ]);
      const db = openDb(options.to, 1);
      try {
        await db.query(sql`SELECT 1`);
      } catch (error) {
        await db.end();
        throw new CliError(
          `cannot reach the database ${database}: ${withoutSecrets((error as Error).message, options.to)}`,
          2,
        );
      }
      const started = Date.now();
      const spinner = process.stderr.isTTY
        ? (await import('yocto-spinner')).default({ text: `copying ${source}`, stream: process.stderr }).start()
        : undefined;
      const dbs = openDatabases(source);
      let summary: Awaited<ReturnType<typeof importing.importLog>>;
      let files = 0;
      try {
        summary = await importing.importLog(db, lmdbLogSource(dbs), {
          where: database,
          onProgress: ({ phase, done, total }) => {
            if (spinner === undefined) return;
            spinner.text =
              phase === 'events'
                ? `copying events: ${done} of ${total} (${total === 0 ? 100 : Math.floor((done / total) * 100)}%)`
                : phase === 'checking'
                  ? `checking the copy against ${source}: ${done} requests`
                  : 'verifying the copy as replay --verify does';
          },
        });
        // The files' bytes, once the log that names them is in (a part at a time, as uploads store them).
        const [{ lmdbFileBytes }, { postgresFileBytes }] = await Promise.all([
          import('../lmdb/fileBytes.js'),
          import('../postgres/fileBytes.js'),
        ]);
        const from = lmdbFileBytes(dbs);
        const to = postgresFileBytes(db.query);
        // And the input files of the batches not ended, deleted or not: their lines are read from them as they run.
        const blobs = new Set(Array.from(dbs.files.getKeys({}), String));
        for (const { key } of dbs.indexes.openBatchInputs.getRange({})) {
          // [inputFileId, batchId]: the open batch's input file.
          const inputFileId = Array.isArray(key) ? String(key[0]) : undefined;
          if (inputFileId !== undefined && dbs.fileBlobs.get(inputFileId) !== undefined) blobs.add(inputFileId);
        }
        for (const fileId of blobs) {
          try {
            await to.write(fileId, from.read(fileId), Number.MAX_SAFE_INTEGER, Date.now());
          } catch (error) {
            throw new CliError(
              `the log was copied, but the bytes of file ${fileId} could not be (${withoutSecrets((error as Error).message, options.to)}); ${files} files' bytes were copied before it`,
            );
          }
          files++;
        }
      } catch (error) {
        if (error instanceof CliError) throw error;
        if (error instanceof importing.TargetNotEmpty || error instanceof importing.SourceDamaged)
          throw new CliError(`${error.message}; nothing was written`, 2);
        if (error instanceof importing.CopyDiffers) throw new CliError(error.message, 1);
        throw new CliError(
          `migrate failed, nothing was written: ${withoutSecrets((error as Error).message, options.to)}`,
        );
      } finally {
        spinner?.stop();
        await db.end();
        await dbs.root.close();
      }
      const seconds = (Date.now() - started) / 1000;
      emit(
        output,
        options.json,
        {
          events: summary.events,
          requests: summary.requests,
          accounts: summary.accounts,
          keys: summary.keys,
          credentials: summary.credentials,
          files,
          source,
          database,
          seconds,
        },
        () => [
          `migrated ${summary.events} events (${summary.requests} requests, ${summary.accounts} accounts, ${summary.keys} keys, ${files} files) from ${source} to ${database}`,
        ],
      );
    });
};
