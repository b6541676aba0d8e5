import type { Command } from 'commander';
import { effectiveLimits } from '../../domain/account/limits.js';
import type { AccountState, KeyState } from '../../domain/account/state.js';
import { type PlanName, planNamePattern } from '../../domain/plans.js';
import { runAccounts, type StoreOptions, withAccounts, withStoreOptions } from './context.js';
import { CliError, emit, type Output } from './output.js';

/** A plan's name as typed; whether the config defines it is the service's to say (it knows the plans in force). */
const plan = (value: string): PlanName => {
  if (!planNamePattern.test(value))
    throw new CliError(`unknown plan "${value}": a plan name is 1 to 40 lower-case letters, digits and dashes`);
  return value;
};

/** A key's expiry as given to `keys create --expires-at` (an ISO 8601 time), in ms since the epoch. */
const expiryOf = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const at = /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(at))
    throw new CliError(`--expires-at "${value}" is not an ISO 8601 time, e.g. 2027-01-31T00:00:00Z`, 2);
  return at;
};

const iso = (at: number | undefined) => (at === undefined ? null : new Date(at).toISOString());

const accountJson = (a: AccountState) => ({
  id: a.accountId,
  email: a.email,
  plan: a.plan,
  suspended: a.suspended,
  created_at: new Date(a.createdAt).toISOString(),
  active_keys: a.activeKeys,
  limits: a.limits ?? {},
});
const accountLine = (a: AccountState) =>
  `${a.accountId}  ${a.email}  ${a.plan}${a.suspended ? '  suspended' : ''}  keys: ${a.activeKeys}`;

const keyJson = (k: KeyState) => ({
  id: k.keyId,
  name: k.name ?? null,
  prefix: k.prefix,
  account_id: k.accountId,
  created_at: new Date(k.createdAt).toISOString(),
  revoked_at: k.revokedAt === undefined ? null : new Date(k.revokedAt).toISOString(),
  expires_at: iso(k.expiresAt),
});
const keyLine = (k: KeyState) =>
  `${k.keyId}  ${k.prefix}…${k.name === undefined ? '' : `  "${k.name}"`}  created ${new Date(k.createdAt).toISOString()}${k.revokedAt === undefined ? '' : `  revoked ${new Date(k.revokedAt).toISOString()}`}${k.expiresAt === undefined ? '' : `  ${k.expiresAt <= Date.now() ? 'expired' : 'expires'} ${iso(k.expiresAt)}`}`;

/**
 * After a move to a plan that allows fewer keys than the account holds: its keys keep working (nothing is revoked
 * behind the operator's back), and new keys are refused until enough are revoked (the domain refuses a key at or
 * over the limit). Said, so that the operator is not surprised later.
 */
const overLimitLine = (account: AccountState, maxKeys: number | null): string[] => {
  if (maxKeys === null || account.activeKeys <= maxKeys) return [];
  const excess = account.activeKeys - maxKeys;
  return [
    `it has ${account.activeKeys} active API keys and the ${account.plan} plan allows ${maxKeys}: they keep working, and new keys are refused until ${excess} ${excess === 1 ? 'is' : 'are'} revoked`,
  ];
};

type JsonOption = { json?: boolean };

/** The limits change given on the command line, checked (bounded in size, known keys only). The schema (zod) is
 * loaded here only: `--help` and the other commands load commander alone. */
const limitsFromJson = async (text: string) => {
  const { maxLimitsJsonBytes, parseLimitsChange } = await import('../../app/accountLimitsSchema.js');
  if (Buffer.byteLength(text) > maxLimitsJsonBytes)
    throw new CliError(`the limits JSON has more than ${maxLimitsJsonBytes} bytes`, 2);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CliError(`the limits are not valid JSON: ${(error as Error).message}`, 2);
  }
  const change = parseLimitsChange(value);
  if (typeof change === 'string') throw new CliError(`invalid limits: ${change}`, 2);
  return change;
};

/**
 * The password, piped on stdin (one trailing newline removed, as `echo` adds it). A terminal is refused: what is
 * typed there would be shown on the screen and kept in its scrollback.
 */
const passwordFromStdin = async (): Promise<string> => {
  if (process.stdin.isTTY)
    throw new CliError(
      'give the password on stdin, not typed at a terminal; e.g. printf %s "$PASSWORD" | airs accounts set-password ID',
      2,
    );
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
};

/** `airs accounts ...`: create, list, set-plan, suspend, resume. */
export const registerAccountCommands = (program: Command, output: Output) => {
  const accounts = program.command('accounts').description('manage accounts');
  const command = (name: string) => withStoreOptions(accounts.command(name));
  command('create')
    .description('create an account (on the free plan unless --plan says otherwise)')
    .requiredOption('--email <email>', 'the account holder’s email')
    .option('--plan <plan>', 'free, starter, scale, enterprise, or a plan the config file defines', 'free')
    .option('--json', 'print JSON')
    .action(async (options: { email: string; plan: string } & JsonOption & StoreOptions) => {
      const chosen = plan(options.plan);
      const created = await withAccounts({ options, output, creates: true }, (a) =>
        a.createAccount(options.email, chosen),
      );
      emit(output, options.json, accountJson(created), () => [
        `created account ${created.accountId} (${created.email}, plan ${created.plan})`,
      ]);
    });
  command('list')
    .description('list accounts')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption & StoreOptions) => {
      const all = await withAccounts({ options, output }, (a) => a.listAccounts());
      emit(output, options.json, all.map(accountJson), () =>
        all.length === 0 ? ['no accounts'] : all.map(accountLine),
      );
    });
  const change = (name: string, description: string) =>
    command(name).description(description).option('--json', 'print JSON');
  change('set-plan', 'move an account to another plan')
    .argument('<id>', 'account id')
    .argument('<plan>', 'free, starter, scale, enterprise, or a plan the config file defines')
    .action(async (id: string, planName: string, options: JsonOption & StoreOptions) => {
      const next = plan(planName);
      const { result: account, config } = await runAccounts({ options, output }, (a) => a.changePlan(id, next));
      const { maxKeys } = effectiveLimits(config.plans, account);
      emit(output, options.json, { ...accountJson(account), max_keys: maxKeys }, () => [
        `account ${id} is on plan ${account.plan}`,
        ...overLimitLine(account, maxKeys),
      ]);
    });
  // `--json` is the limits here (contract 21), so the answer's JSON is asked for with `--print-json`.
  command('set-limits')
    .description("override an account's plan limits key by key (a key set to null removes its override)")
    .argument('<id>', 'account id')
    .requiredOption(
      '--json <limits>',
      'the limits to change, e.g. \'{"submitsPerMinute": 120, "allowedModels": ["llama"], "maxQueued": null}\'',
    )
    .option('--print-json', 'print JSON')
    .action(async (id: string, given: { json: string; printJson?: boolean } & StoreOptions) => {
      const change = await limitsFromJson(given.json);
      const { json: _limits, printJson, ...rest } = given;
      const options = { ...rest, json: printJson };
      const { result: account, config } = await runAccounts({ options, output }, (a) => a.setLimits(id, change));
      const limits = effectiveLimits(config.plans, account);
      const { own, ...effective } = limits;
      emit(output, printJson, { ...accountJson(account), effective_limits: effective, own_limits: own }, () => [
        `account ${id} (plan ${account.plan}) is held to:`,
        ...Object.entries(effective).map(
          ([key, value]) =>
            `  ${key}: ${Array.isArray(value) ? value.join(', ') : value === null ? 'unlimited' : value}${own.includes(key as (typeof own)[number]) ? '  (own)' : ''}`,
        ),
      ]);
    });
  change('set-password', 'set the password the account holder logs in to the dashboard with, read from stdin')
    .argument('<id>', 'account id')
    .action(async (id: string, options: JsonOption & StoreOptions) => {
      const password = await passwordFromStdin();
      const account = await withAccounts({ options, output }, (a) => a.setPassword(id, password));
      emit(
        output,
        options.json,
        { ...accountJson(account), password_set_at: new Date(account.passwordSetAt ?? 0).toISOString() },
        () => [`account ${id} has a new password; its dashboard sessions are ended; it can log in at /dashboard/login`],
      );
    });
  change('suspend', 'suspend an account: its keys get 403 from the next request on, its dashboard sessions end')
    .argument('<id>', 'account id')
    .action(async (id: string, options: JsonOption & StoreOptions) => {
      const account = await withAccounts({ options, output }, (a) => a.suspend(id));
      emit(output, options.json, accountJson(account), () => [
        `account ${id} is suspended: its keys get 403, its dashboard sessions are ended, it cannot log in or create keys`,
      ]);
    });
  change('resume', 'lift a suspension: its keys work again and it can log in')
    .argument('<id>', 'account id')
    .action(async (id: string, options: JsonOption & StoreOptions) => {
      const account = await withAccounts({ options, output }, (a) => a.resume(id));
      emit(output, options.json, accountJson(account), () => [`account ${id} is active`]);
    });
};

/** `airs keys ...`: create (shown once), list (never the key), revoke. */
export const registerKeyCommands = (program: Command, output: Output) => {
  const keys = program.command('keys').description('manage API keys');
  const command = (name: string) => withStoreOptions(keys.command(name));
  command('create')
    .description('create an API key; it is printed once and cannot be shown again')
    .requiredOption('--account <id>', 'account id')
    .option('--name <name>', 'a name to tell the key by (1 to 100 characters)')
    .option('--expires-at <time>', 'when the key stops working (ISO 8601, e.g. 2027-01-31T00:00:00Z); never if absent')
    .option('--json', 'print JSON')
    .action(async (options: { account: string; name?: string; expiresAt?: string } & JsonOption & StoreOptions) => {
      const expiresAt = expiryOf(options.expiresAt);
      const created = await withAccounts({ options, output }, (a) =>
        a.createKey(options.account, options.name, expiresAt),
      );
      const { expiresAt: endsAt, ...shown } = created;
      emit(output, options.json, { ...shown, name: created.name ?? null, expires_at: iso(endsAt) }, () => [
        created.key,
        `(key ${created.id}${created.name === undefined ? '' : ` "${created.name}"`} of account ${created.account_id}${endsAt === undefined ? '' : `, expires ${iso(endsAt)}`}; store it now: it cannot be shown again)`,
      ]);
    });
  command('list')
    .description('list an account’s keys (ids and prefixes, never the keys)')
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print JSON')
    .action(async (options: { account: string } & JsonOption & StoreOptions) => {
      const list = await withAccounts({ options, output }, (a) => a.listKeys(options.account));
      emit(output, options.json, list.map(keyJson), () => (list.length === 0 ? ['no keys'] : list.map(keyLine)));
    });
  command('revoke')
    .description('revoke a key: it fails from the very next request on')
    .argument('<keyId>', 'key id (from keys list)')
    .option('--json', 'print JSON')
    .action(async (keyId: string, options: JsonOption & StoreOptions) => {
      const key = await withAccounts({ options, output }, (a) => a.revokeKey(keyId));
      emit(output, options.json, keyJson(key), () => [`key ${keyId} is revoked`]);
    });
};
