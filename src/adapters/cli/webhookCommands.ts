import type { Command } from 'commander';
import type * as Effect from 'effect/Effect';
import type { EndpointWithBacklog, RecoverResult } from '../../app/webhooks/recover.js';
import type { EndpointWithSecret, WebhooksShape } from '../../app/webhooks/Webhooks.js';
import type { AccountLimitReached, Refused } from '../../domain/errors.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { AttemptRecord } from '../../domain/webhook/deliveryMachine.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import type { WebhookBacklog } from '../../ports/Store.js';
import { configOrFail, dataDirNote, requireDatabase, type StoreOptions, withStoreOptions } from './context.js';
import { CliError, emit, type Output } from './output.js';

// Every module here that is not a type is loaded on use (see context.ts): `airs --help` starts without effect or lmdb.

type WebhookOptions = StoreOptions & { json?: boolean; account: string };
/** Commands on an endpoint or delivery by its id: the id names the account, `--account` (if given) must own it. */
type ByIdOptions = StoreOptions & { json?: boolean; account?: string };

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** Deliveries shown per page unless `--limit` says otherwise, and the most a page holds (WebhooksLayer's bound). */
const defaultPage = 20;
const maxPage = 100;

/**
 * Runs one webhooks command against the store, for the account `--account` names, as `runAccounts` does for the
 * account commands: the store open only for its duration, a refusal one line and exit 1. Without --json, a success
 * also names the store used on stderr.
 */
const withWebhooks = async <A>(
  options: ByIdOptions,
  output: Output,
  use: (webhooks: WebhooksShape) => Effect.Effect<A, Refused | AccountLimitReached>,
): Promise<A> => {
  if (options.account?.trim() === '') throw new CliError('--account: expected an account id, got ""', 2);
  const config = await configOrFail(options);
  await requireDatabase(config, output);
  const [Effect, ManagedRuntime, Result, { Webhooks }, { managementLayer }, { silentLogger }] = await Promise.all([
    import('effect/Effect'),
    import('effect/ManagedRuntime'),
    import('effect/Result'),
    import('../../app/webhooks/Webhooks.js'),
    import('../../baseLayer.js'),
    import('../../ports/Logger.js'),
  ]);
  const runtime = ManagedRuntime.make(managementLayer({ config, logger: silentLogger() }));
  try {
    const result = await runtime.runPromise(Effect.result(Effect.flatMap(Webhooks, use)));
    if (Result.isFailure(result)) throw new CliError(result.failure.message);
    if (options.json !== true) output.err(await dataDirNote(config));
    return result.success;
  } finally {
    await runtime.dispose();
  }
};

const endpointJson = (e: WebhookEndpointState) => ({
  id: e.endpointId,
  account_id: e.accountId,
  url: e.url,
  /** Empty: every event type, those added later too. */
  events: e.events,
  status: e.status,
  created_at: iso(e.createdAt),
  previous_secret_valid_until: iso(e.previousSecret?.validUntil),
  failing_since: iso(e.failingSince),
  last_delivered_at: iso(e.lastDeliveredAt),
  disabled_at: iso(e.disabledAt),
});

/** Backlog counted to a bound: "1000+" beyond it. */
const backlogCount = (b: WebhookBacklog) => `${b.waiting}${b.truncated ? '+' : ''}`;

/** The list's entry: the endpoint with whether it fails, its backlog and its next attempt (issue 42). */
const listedJson = ({ endpoint, backlog }: EndpointWithBacklog<WebhookEndpointState>) => ({
  ...endpointJson(endpoint),
  backlog: backlog.waiting,
  backlog_truncated: backlog.truncated,
  next_attempt_at: iso(backlog.nextAttemptAt),
});

const listedLine = ({ endpoint: e, backlog }: EndpointWithBacklog<WebhookEndpointState>) =>
  [
    endpointLine(e),
    ...(e.status === 'enabled' && e.failingSince !== undefined ? [`failing since ${iso(e.failingSince)}`] : []),
    `backlog ${backlogCount(backlog)}`,
    ...(backlog.nextAttemptAt === undefined ? [] : [`next attempt ${iso(backlog.nextAttemptAt)}`]),
  ].join('  ');

const eventsInWords = (e: WebhookEndpointState) => (e.events.length === 0 ? 'all' : e.events.join(','));

const endpointLine = (e: WebhookEndpointState) =>
  [
    e.endpointId,
    e.status.padEnd(8),
    e.url,
    `events: ${eventsInWords(e)}`,
    `created ${iso(e.createdAt)}`,
    ...(e.disabledAt === undefined ? [] : [`disabled ${iso(e.disabledAt)} after failing since ${iso(e.failingSince)}`]),
    ...(e.previousSecret === undefined || e.previousSecret.validUntil <= Date.now()
      ? []
      : [`previous secret signs until ${iso(e.previousSecret.validUntil)}`]),
  ].join('  ');

/** The secret on a line of its own (to copy, or to take with `| head -1`), then what it is. */
const secretLines = ({ endpoint, secret }: EndpointWithSecret, what: string) => [
  secret,
  `(${what} of webhook endpoint ${endpoint.endpointId} of account ${endpoint.accountId}, ${endpoint.url}, events: ${eventsInWords(endpoint)}; it is shown once: store it now, it cannot be shown again)`,
];

/** Its last attempts as the view keeps them; a view written before issue 42 has only its last attempt's fields. */
const attemptsOf = (d: DeliveryState['context']): readonly AttemptRecord[] =>
  d.recentAttempts ??
  (d.lastAttemptAt === undefined
    ? []
    : [
        {
          attempt: d.attempts,
          at: d.lastAttemptAt,
          status: d.lastStatus,
          latencyMs: d.lastLatencyMs,
          error: d.lastError,
        },
      ]);

/** One attempt on a line of its own, under its delivery. */
const attemptLine = (a: AttemptRecord) => {
  const answer = a.status === undefined ? 'no answer' : `answered ${a.status}`;
  const latency = a.latencyMs === undefined ? '' : ` in ${a.latencyMs} ms`;
  return `    attempt ${a.attempt}  ${iso(a.at)}  ${answer}${latency}${a.error === undefined ? '' : `  (${a.error})`}`;
};

const deliveryJson = ({ status, context: d }: DeliveryState) => ({
  id: d.deliveryId,
  endpoint_id: d.endpointId,
  event_id: d.eventId,
  event_type: d.eventType,
  data_id: d.dataId,
  status,
  created_at: iso(d.createdAt),
  attempts: d.attempts,
  redeliveries: d.redeliveries,
  next_attempt_at: status === 'waiting' ? iso(d.availableAt) : null,
  gives_up_at: status === 'waiting' || status === 'sending' ? iso(d.giveUpAt) : null,
  last_attempt_at: iso(d.lastAttemptAt),
  last_status: d.lastStatus ?? null,
  last_latency_ms: d.lastLatencyMs ?? null,
  last_error: d.lastError ?? null,
  delivered_at: iso(d.deliveredAt),
  gave_up_at: iso(d.gaveUpAt),
  gave_up_reason: d.gaveUpReason ?? null,
  /** Its last attempts, oldest first (issue 42; a delivery recorded before keeps only its last: shown from it). */
  recent_attempts: attemptsOf(d).map((a) => ({
    attempt: a.attempt,
    at: iso(a.at),
    status: a.status ?? null,
    latency_ms: a.latencyMs ?? null,
    error: a.error ?? null,
  })),
});

const lastAttempt = (d: DeliveryState['context']) => {
  if (d.lastAttemptAt === undefined) return 'no attempt yet';
  const answer = d.lastStatus === undefined ? 'no answer' : `answered ${d.lastStatus}`;
  const latency = d.lastLatencyMs === undefined ? '' : ` in ${d.lastLatencyMs} ms`;
  return `last attempt ${iso(d.lastAttemptAt)}: ${answer}${latency}${d.lastError === undefined ? '' : ` (${d.lastError})`}`;
};

/** A delivery's line, then a line for each of its last attempts (the delivery log shows every attempt: issue 42). */
const deliveryLines = (delivery: DeliveryState) => [
  deliveryLine(delivery),
  ...attemptsOf(delivery.context).map(attemptLine),
];

const deliveryLine = ({ status, context: d }: DeliveryState) =>
  [
    d.deliveryId,
    status.padEnd(9),
    d.eventType,
    d.dataId,
    `created ${iso(d.createdAt)}`,
    `attempts ${d.attempts}`,
    lastAttempt(d),
    ...(status === 'waiting' ? [`next ${iso(d.availableAt)}`] : []),
    ...(d.gaveUpReason === undefined || status !== 'gave_up' ? [] : [`gave up: ${d.gaveUpReason}`]),
  ].join('  ');

/** The events `--events` names: comma-separated, spaces around each allowed; none given: every type. */
const eventsOf = (value: string | undefined): string[] => {
  if (value === undefined) return [];
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (names.length === 0)
    throw new CliError('--events: expected event types separated by commas (leave it out for every type)', 2);
  return names;
};

const limitOf = (value: string | undefined): number => {
  if (value === undefined) return defaultPage;
  if (!/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > maxPage)
    throw new CliError(`--limit: expected an integer from 1 to ${maxPage}, got "${value.slice(0, 40)}"`, 2);
  return Number(value);
};

const idArgument = (id: string, what: string) => {
  if (id.trim() === '') throw new CliError(`expected ${what}, got ""`, 2);
  return id;
};

/** `airs webhooks ...`: an account's endpoints (the secret shown once) and their delivery log (issue 30). */
export const registerWebhookCommands = (program: Command, output: Output) => {
  const webhooks = program
    .command('webhooks')
    .description('manage an account’s webhook endpoints and look at their deliveries');
  const command = (name: string) =>
    withStoreOptions(webhooks.command(name))
      .requiredOption('--account <id>', 'account id')
      .option('--json', 'print JSON');
  /** A command on an endpoint or delivery by its id, which names its account: `--account` is optional (issue 42). */
  const byId = (name: string) =>
    withStoreOptions(webhooks.command(name))
      .option('--account <id>', 'the account that owns it (optional: the id names it; refused if it is not the owner)')
      .option('--json', 'print JSON');

  command('add')
    .description('add a webhook endpoint; its signing secret is printed once and cannot be shown again')
    .requiredOption('--url <url>', 'where deliveries are posted (https://…)')
    .option('--events <types>', 'event types to receive, separated by commas (default: every type)')
    .action(async (options: WebhookOptions & { url: string; events?: string }) => {
      const events = eventsOf(options.events);
      const added = await withWebhooks(options, output, (w) => w.add(options.account, options.url, events));
      emit(output, options.json, { ...endpointJson(added.endpoint), secret: added.secret }, () =>
        secretLines(added, 'signing secret'),
      );
    });

  command('list')
    .description('list an account’s webhook endpoints (never their secrets)')
    .action(async (options: WebhookOptions) => {
      const list = await withWebhooks(options, output, (w) => w.listWithBacklog(options.account));
      emit(output, options.json, list.map(listedJson), () =>
        list.length === 0 ? ['no webhook endpoints'] : list.map(listedLine),
      );
    });

  byId('remove')
    .description('remove a webhook endpoint: it receives nothing more, and its secrets are forgotten')
    .argument('<endpointId>', 'the endpoint id (whep_…)')
    .action(async (endpointId: string, options: ByIdOptions) => {
      const id = idArgument(endpointId, 'a webhook endpoint id');
      const removed = await withWebhooks(options, output, (w) => w.remove(options.account, id));
      emit(output, options.json, endpointJson(removed), () => [
        `webhook endpoint ${id} is removed: it receives nothing more, and its secrets are forgotten`,
      ]);
    });

  byId('rotate-secret')
    .description('give a webhook endpoint a new signing secret, printed once; the old one still signs for 24 hours')
    .argument('<endpointId>', 'the endpoint id (whep_…)')
    .action(async (endpointId: string, options: ByIdOptions) => {
      const id = idArgument(endpointId, 'a webhook endpoint id');
      const rotated = await withWebhooks(options, output, (w) => w.rotateSecret(options.account, id));
      const until = iso(rotated.endpoint.previousSecret?.validUntil);
      emit(output, options.json, { ...endpointJson(rotated.endpoint), secret: rotated.secret }, () => [
        ...secretLines(rotated, 'new signing secret'),
        `(the previous secret still signs every delivery until ${until}: receivers accept either meanwhile)`,
      ]);
    });

  byId('enable')
    .description('turn a disabled webhook endpoint back on (missed deliveries: webhooks redeliver)')
    .argument('<endpointId>', 'the endpoint id (whep_…)')
    .action(async (endpointId: string, options: ByIdOptions) => {
      const id = idArgument(endpointId, 'a webhook endpoint id');
      const enabled = await withWebhooks(options, output, (w) => w.enable(options.account, id));
      emit(output, options.json, endpointJson(enabled), () => [
        `webhook endpoint ${id} is enabled; deliveries missed while it was disabled come back with "airs webhooks redeliver"`,
      ]);
    });

  byId('deliveries')
    .description('a webhook endpoint’s deliveries, newest first (its delivery log)')
    .argument('<endpointId>', 'the endpoint id (whep_…)')
    .option('--limit <n>', `deliveries shown, 1 to ${maxPage} (default ${defaultPage})`)
    .option('--before <deliveryId>', 'only deliveries older than this one (the last of the previous page)')
    .action(async (endpointId: string, options: ByIdOptions & { limit?: string; before?: string }) => {
      const id = idArgument(endpointId, 'a webhook endpoint id');
      const limit = limitOf(options.limit);
      const before = options.before === undefined ? undefined : idArgument(options.before, 'a delivery id');
      const page = await withWebhooks(options, output, (w) => w.deliveries(options.account, id, { limit, before }));
      const last = page.at(-1)?.context.deliveryId;
      emit(output, options.json, page.map(deliveryJson), () =>
        page.length === 0
          ? ['no deliveries']
          : [...page.flatMap(deliveryLines), ...(page.length < limit ? [] : [`(older ones: --before ${last})`])],
      );
    });

  byId('redeliver')
    .description('send a delivered or given-up delivery again, with the same webhook-id')
    .argument('<deliveryId>', 'the delivery id (wh_…, from webhooks deliveries)')
    .action(async (deliveryId: string, options: ByIdOptions) => {
      const id = idArgument(deliveryId, 'a delivery id');
      const delivery = await withWebhooks(options, output, (w) => w.redeliver(options.account, id));
      emit(output, options.json, deliveryJson(delivery), () => [
        `delivery ${id} is due again (the same webhook-id); it is attempted until ${iso(delivery.context.giveUpAt)}`,
      ]);
    });

  byId('recover')
    .description('send again the deliveries of an endpoint that gave up, for events since a time (at most 1000 a call)')
    .argument('<endpointId>', 'the endpoint id (whep_…)')
    .requiredOption('--since <time>', 'events at or after this time (ISO 8601 or epoch ms)')
    .action(async (endpointId: string, options: ByIdOptions & { since: string }) => {
      const id = idArgument(endpointId, 'a webhook endpoint id');
      const { parseSince } = await import('../../app/replay.js');
      const since = parseSince(options.since);
      if (since === undefined)
        throw new CliError(`--since: "${options.since.slice(0, 40)}" is not an ISO 8601 time or epoch milliseconds`, 2);
      const recovered: RecoverResult = await withWebhooks(options, output, (w) =>
        w.recover(options.account, id, since),
      );
      emit(output, options.json, recovered, () => [
        `${recovered.redelivered} failed deliveries of webhook endpoint ${id} since ${iso(since)} are due again (the same webhook-id each)`,
        ...(recovered.more ? ['(a bound of one call was reached: run it again for the rest)'] : []),
      ]);
    });
};
