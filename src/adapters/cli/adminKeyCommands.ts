import type { Command } from 'commander';
import type { Config } from '../../config.js';
import type { KeyState } from '../../domain/account/state.js';
import {
  configOrFail,
  dataDirNote,
  requireDatabase,
  type StoreOptions,
  warnIfOpenToOthers,
  withCommitter,
  withStoreOptions,
} from './context.js';
import { CliError, emit, type Output } from './output.js';

// Loaded on use, as the other commands' modules (see context.ts): `airs --help` starts without effect or lmdb.

type Options = StoreOptions & { json?: boolean };

const iso = (ms: number) => new Date(ms).toISOString();

const adminKeyJson = (k: KeyState) => ({
  id: k.keyId,
  name: k.name ?? null,
  prefix: k.prefix,
  created_at: iso(k.createdAt),
  revoked_at: k.revokedAt === undefined ? null : iso(k.revokedAt),
});
const adminKeyLine = (k: KeyState) =>
  `${k.keyId}  ${k.prefix}…${k.name === undefined ? '' : `  "${k.name}"`}  created ${iso(k.createdAt)}${k.revokedAt === undefined ? '' : `  revoked ${iso(k.revokedAt)}`}`;

/** Runs `use` with the admin keys of the store the options name (created only by `create`). */
const withAdminKeys = async <A>(
  options: Options,
  output: Output,
  creates: boolean,
  use: (keys: ReturnType<typeof import('../../app/adminKeys.js').createAdminKeys>) => Promise<A>,
): Promise<Exclude<A, Error>> => {
  const config: Config = await configOrFail(options);
  if (creates) await warnIfOpenToOthers(config, output);
  else await requireDatabase(config, output);
  const { createAdminKeys } = await import('../../app/adminKeys.js');
  const result = await withCommitter(config, ({ store, committer, clock }) =>
    use(createAdminKeys({ reads: store.reads, committer, clock })),
  );
  if (result instanceof Error) throw new CliError(result.message);
  if (options.json !== true) output.err(await dataDirNote(config));
  return result as Exclude<A, Error>;
};

/** `airs admin-keys ...`: the keys of the admin API (`/v1/admin/*`): create (shown once), list, revoke. */
export const registerAdminKeyCommands = (program: Command, output: Output) => {
  const adminKeys = program
    .command('admin-keys')
    .description('manage admin keys: the keys of the admin API (/v1/admin/*), which provisions accounts and keys');
  const command = (name: string) => withStoreOptions(adminKeys.command(name));
  command('create')
    .description('create an admin key; it is printed once and cannot be shown again')
    .option('--name <name>', 'a name to tell the key by (1 to 100 characters)')
    .option('--json', 'print JSON')
    .action(async (options: Options & { name?: string }) => {
      const created = await withAdminKeys(options, output, true, (keys) => keys.create(options.name));
      emit(output, options.json, created, () => [
        created.key,
        `(admin key ${created.id}${created.name === null ? '' : ` "${created.name}"`}; store it now: it cannot be shown again)`,
      ]);
    });
  command('list')
    .description('list the admin keys (ids and prefixes, never the keys)')
    .option('--json', 'print JSON')
    .action(async (options: Options) => {
      const list = await withAdminKeys(options, output, false, (keys) => keys.list());
      emit(output, options.json, list.map(adminKeyJson), () =>
        list.length === 0 ? ['no admin keys'] : list.map(adminKeyLine),
      );
    });
  command('revoke')
    .description('revoke an admin key: it fails from the very next call on, in every process')
    .argument('<id>', 'admin key id (from admin-keys list)')
    .option('--json', 'print JSON')
    .action(async (id: string, options: Options) => {
      const key = await withAdminKeys(options, output, false, (keys) => keys.revoke(id));
      emit(output, options.json, adminKeyJson(key), () => [`admin key ${id} is revoked`]);
    });
};
