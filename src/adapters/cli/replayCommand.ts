import type { Command } from 'commander';
import type { Served } from '../../app/replay.js';
import type { Config } from '../../config.js';
import type { StoredEvent } from '../../domain/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { VerifyReport } from '../../storage/verifyReport.js';
import { configOrFail, requireDatabase, type StoreOptions, withStoreOptions } from './context.js';
import { CliError, emit, type Output } from './output.js';

type ReplayOptions = StoreOptions & {
  request?: string;
  account?: string;
  batch?: string;
  since?: string;
  json?: boolean;
  verify?: boolean;
};

/** What an event says besides its type, time and sequence number (already in the line). */
const detailsOf = (event: StoredEvent): string =>
  Object.entries(event)
    .filter(([name]) => !['type', 'at', 'seq'].includes(name))
    .map(
      ([name, value]) =>
        `${name}=${typeof value === 'number' && name.endsWith('At') ? new Date(value).toISOString() : String(value)}`,
    )
    .join(' ');

/** The upstream an attempt ran on, at the end of the line that ends it. */
const servedInWords = (served: Served | undefined): string =>
  served === undefined
    ? ''
    : `  (upstream ${served.upstream} of ${served.model}${served.firstTokenMs === undefined ? '' : `, first token after ${served.firstTokenMs} ms`})`;

/** Every view rebuilt from the log and compared with the stored one, by the store's own verifier. */
const verifyStore = async (config: Config): Promise<VerifyReport> => {
  if (config.store.url !== undefined) {
    const [{ openDb, sql }, { verifyPostgres }] = await Promise.all([
      import('../postgres/db.js'),
      import('../postgres/verify.js'),
    ]);
    const db = openDb(config.store.url, 1);
    try {
      const report = await verifyPostgres(db);
      // The files' bytes against the log's size and digest: the files the store holds (compared with the log above).
      const [{ postgresFileBytes }, { verifyFileDigests }] = await Promise.all([
        import('../postgres/fileBytes.js'),
        import('../../storage/verifyBatches.js'),
      ]);
      const bytes = postgresFileBytes(db.query);
      const files = await db.query<{ state: FileState }[]>(sql`SELECT state FROM files ORDER BY file_id`);
      const differences = await verifyFileDigests(
        files.map((row) => row.state),
        (fileId) => bytes.digest(fileId),
      );
      return { ...report, differences: [...report.differences, ...differences] };
    } finally {
      await db.end();
    }
  }
  const [{ openDatabases }, { verifyViews }, { lmdbFileBytes }, { verifyFileDigests }] = await Promise.all([
    import('../lmdb/databases.js'),
    import('../lmdb/verify.js'),
    import('../lmdb/fileBytes.js'),
    import('../../storage/verifyBatches.js'),
  ]);
  const dbs = openDatabases(config.dataDir);
  try {
    let rebuilt: ReadonlyMap<string, FileState> = new Map();
    const report = verifyViews(dbs, { files: (files) => (rebuilt = files) });
    // Each file's bytes against the log's size and SHA-256 (FileCreated): the files the log leaves.
    const bytes = lmdbFileBytes(dbs);
    const differences = await verifyFileDigests(rebuilt.values(), (fileId) => bytes.digest(fileId));
    return { ...report, differences: [...report.differences, ...differences] };
  } finally {
    void dbs.root.close();
  }
};

const runVerify = async (config: Config, output: Output, json: boolean | undefined) => {
  const report = await verifyStore(config);
  emit(output, json, { ok: report.differences.length === 0, ...report }, () =>
    report.differences.length === 0
      ? [
          `verified ${report.events} events: every view matches the log (${report.requests} requests, ${report.accounts} accounts, ${report.keys} keys${report.batches === undefined ? '' : `, ${report.batches} batches, ${report.files} files`}${report.webhookEndpoints ? `, ${report.webhookEndpoints} webhook endpoints, ${report.webhookDeliveries} webhook deliveries` : ''})`,
        ]
      : [...report.differences, `${report.differences.length} difference(s) between the views and the log`],
  );
  if (report.differences.length > 0) throw new CliError('views differ from the log', 3);
};

/** `airs replay`: the log as a timeline with the state each request and batch reaches; `--verify` rebuilds every view. */
export const registerReplayCommand = (program: Command, output: Output) => {
  withStoreOptions(program.command('replay'))
    .description(
      'print the event log as a timeline and the state each request and batch reaches (works while the server runs)',
    )
    .option('--request <reqId>', 'only this request')
    .option('--account <id>', 'only this account and its requests, batches and files')
    .option('--batch <batchId>', "only this batch: its own events and all its lines' events")
    .option('--since <time>', 'only events at or after this time (ISO 8601 or epoch ms)')
    .option('--verify', 'rebuild every view from the log and report any difference')
    .option('--json', 'print JSON')
    .action(async (options: ReplayOptions) => {
      // Usage errors (exit 2) before anything is opened.
      if (
        options.verify &&
        [options.request, options.account, options.batch, options.since].some((given) => given !== undefined)
      )
        throw new CliError(
          '--verify checks the whole log; it cannot be combined with --request, --account, --batch or --since',
          2,
        );
      const { parseSince, replay } = await import('../../app/replay.js');
      const since = options.since === undefined ? undefined : parseSince(options.since);
      if (options.since !== undefined && since === undefined) {
        throw new CliError(`--since: "${options.since}" is not an ISO 8601 time or epoch milliseconds`, 2);
      }
      const config = await configOrFail(options);
      // Reading never creates: a data directory without a database is a mistyped setting.
      await requireDatabase(config, output);
      if (options.verify) return runVerify(config, output, options.json);
      const { openConfiguredStore } = await import('../../storeLocation.js');
      const store = await openConfiguredStore(config);
      try {
        const result = await replay(store.reads, {
          request: options.request,
          account: options.account,
          batch: options.batch,
          since,
        });
        emit(
          output,
          options.json,
          {
            events: result.entries.map(({ event, state, served }) => ({
              ...event,
              at: new Date(event.at).toISOString(),
              state,
              ...(served === undefined ? {} : { served }),
            })),
            final_states: result.finalStates,
          },
          () => [
            ...result.entries.map(
              ({ event, state, served }) =>
                `${new Date(event.at).toISOString()}  #${event.seq}  ${event.type.padEnd(24)} ${state === undefined ? '' : `→ ${state.padEnd(10)} `}${detailsOf(event)}${servedInWords(served)}`,
            ),
            ...(result.entries.length === 0 ? ['no events match'] : []),
            ...Object.entries(result.finalStates).map(([reqId, state]) => `${reqId}: ${state}`),
          ],
        );
      } finally {
        await store.close();
      }
    });
};
