import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import type { Command } from '../../../src/domain/commands.js';
import { defaultPlans } from '../../../src/domain/plans.js';
import { defaultRetryPolicy } from '../../../src/domain/request/retryPolicy.js';
import { defaultWebhookBackoff } from '../../../src/domain/webhook/backoff.js';
import { webhookDeliveryId, webhookEventId } from '../../../src/domain/webhook/eventTypes.js';
import type { CommandOutcome } from '../../../src/ports/Store.js';
import { submitCommand } from '../../support/commands.js';
import { tempDataDir } from '../../support/testApp.js';

const reqIds = ['req_a', 'req_b', 'req_c'];
const accounts = ['acct_1', 'acct_2'];
const keyIds = ['key_1', 'key_2', 'key_3'];
/** Times around the requests' expiry (created at 0..100, live 150 ms), so the machine's guards take part. */
const at = fc.integer({ min: 0, max: 400 });
const policy = { ...defaultRetryPolicy, maxAttempts: 2, baseDelayMs: 10 };

const requestCommand: fc.Arbitrary<Command> = fc.oneof(
  fc
    .record({
      reqId: fc.constantFrom(...reqIds),
      now: fc.integer({ min: 0, max: 100 }),
      prompt: fc.string({ minLength: 1, maxLength: 8 }),
      accountId: fc.constantFrom(...accounts),
    })
    .map(({ reqId, now, prompt, accountId }) => submitCommand(reqId, now, { accountId, prompt, ttlMs: 150 })),
  fc
    .record({ reqId: fc.constantFrom(...reqIds), now: at })
    .map(({ reqId, now }): Command => ({ type: 'StartAttempt', reqId, now })),
  fc.record({ reqId: fc.constantFrom(...reqIds), now: at, response: fc.string({ maxLength: 8 }) }).map(
    ({ reqId, now, response }): Command => ({
      type: 'RecordSuccess',
      reqId,
      responseChars: response.length,
      response,
      now,
    }),
  ),
  fc
    .record({ reqId: fc.constantFrom(...reqIds), now: at })
    .map(({ reqId, now }): Command => ({ type: 'RecordFailure', reqId, reason: 'boom', policy, now })),
  fc
    .record({ reqId: fc.constantFrom(...reqIds), now: at })
    .map(({ reqId, now }): Command => ({ type: 'Expire', reqId, now })),
);

const accountCommand: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ accountId: fc.constantFrom(...accounts), email: fc.constantFrom('a@x.io', 'b@x.io', 'c@x.io') }).map(
    ({ accountId, email }): Command => ({
      type: 'Account',
      accountId,
      command: { type: 'CreateAccount', accountId, email, plan: 'free', now: 1 },
    }),
  ),
  fc.record({ accountId: fc.constantFrom(...accounts), keyId: fc.constantFrom(...keyIds) }).map(
    ({ accountId, keyId }): Command => ({
      type: 'Account',
      accountId,
      command: { type: 'CreateKey', keyId, keyHash: `hash_${keyId}`, prefix: 'sk_x', plans: defaultPlans, now: 2 },
    }),
  ),
  fc.record({ accountId: fc.constantFrom(...accounts), keyId: fc.constantFrom(...keyIds) }).map(
    ({ accountId, keyId }): Command => ({
      type: 'Account',
      accountId,
      command: { type: 'RevokeKey', key: { keyId, accountId, keyHash: '', prefix: '', createdAt: 0 }, now: 3 },
    }),
  ),
  fc.record({ accountId: fc.constantFrom(...accounts), suspend: fc.boolean() }).map(
    ({ accountId, suspend }): Command => ({
      type: 'Account',
      accountId,
      command: { type: suspend ? 'Suspend' : 'Resume', now: 4 },
    }),
  ),
);

const endpointIds = ['whep_AAAAAAAAAAAAAAAA', 'whep_BBBBBBBBBBBBBBBB'];
const endings = ['request.completed', 'request.failed', 'request.cancelled', 'request.expired'] as const;

/** Webhook endpoints' commands, and commands on the deliveries the requests' endings make (their ids are made, not
 * drawn: the arbitrary names them as the outbox makes them). */
const webhookCommand: fc.Arbitrary<Command> = fc.oneof(
  fc
    .record({
      endpointId: fc.constantFrom(...endpointIds),
      accountId: fc.constantFrom(...accounts),
      events: fc.subarray([...endings]),
      now: fc.integer({ min: 0, max: 100 }),
    })
    .map(
      ({ endpointId, accountId, events, now }): Command => ({
        type: 'WebhookEndpoint',
        endpointId,
        command: {
          type: 'AddEndpoint',
          accountId,
          url: `https://hooks.example.com/${endpointId}`,
          events,
          secretId: `sec_${endpointId}`,
          secret: 'whsec_x',
          plans: defaultPlans,
          allowHttp: false,
          now,
        },
      }),
    ),
  fc
    .record({
      endpointId: fc.constantFrom(...endpointIds),
      accountId: fc.constantFrom(...accounts),
      kind: fc.constantFrom('RemoveEndpoint', 'EnableEndpoint', 'RotateSecret' as const),
      now: at,
    })
    .map(
      ({ endpointId, accountId, kind, now }): Command => ({
        type: 'WebhookEndpoint',
        endpointId,
        command:
          kind === 'RotateSecret'
            ? { type: kind, accountId, secretId: `sec_${now}`, secret: `whsec_${now}`, now }
            : { type: kind, accountId, now },
      }),
    ),
  fc
    .record({
      reqId: fc.constantFrom(...reqIds),
      ending: fc.constantFrom(...endings),
      endpointId: fc.constantFrom(...endpointIds),
      kind: fc.constantFrom('StartAttempt', 'RecordSuccess', 'RecordFailure', 'GiveUp', 'Redeliver' as const),
      attempt: fc.integer({ min: 1, max: 2 }),
      owner: fc.constantFrom('p1', 'p2'),
      now: at,
    })
    .map(({ reqId, ending, endpointId, kind, attempt, owner, now }): Command => {
      const deliveryId = webhookDeliveryId(webhookEventId(reqId, ending), endpointId);
      const outcome = { attempt, owner, status: kind === 'RecordSuccess' ? 200 : 500, latencyMs: 3 };
      const policy = { ...defaultWebhookBackoff, maxTotalMs: 300 };
      const command =
        kind === 'StartAttempt'
          ? { type: kind, owner, leaseMs: 50, now }
          : kind === 'RecordSuccess'
            ? { type: kind, outcome, now }
            : kind === 'RecordFailure'
              ? { type: kind, outcome, policy, random: 0.5, now }
              : kind === 'GiveUp'
                ? { type: kind, now }
                : { type: kind, accountId: accounts[0] as string, policy, now };
      return { type: 'WebhookDelivery', deliveryId, command } as Command;
    }),
);

const commands = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: requestCommand },
    { weight: 1, arbitrary: accountCommand },
    { weight: 2, arbitrary: webhookCommand },
  ),
  {
    minLength: 1,
    maxLength: 40,
  },
);

/** Everything the store holds, as plain data: the log event by event (one record per batch is how it is stored, not
 * what it says), then every view, index and payload database entry by entry. */
const contents = (store: ReturnType<typeof openLmdbStore>) => {
  const dbs = store.databases;
  const all = (db: { getRange(options: object): Iterable<{ key: unknown; value: unknown }> }) =>
    Array.from(db.getRange({}), ({ key, value }) => [key, value]);
  return {
    events: [...store.syncReads.events()],
    requests: all(dbs.requests),
    accounts: all(dbs.accounts),
    keys: all(dbs.keys),
    webhookEndpoints: all(dbs.webhookEndpoints),
    webhookDeliveries: all(dbs.webhookDeliveries),
    credentials: all(dbs.credentials),
    indexes: Object.fromEntries(Object.entries(dbs.indexes).map(([name, db]) => [name, all(db)])),
  };
};

const shape = (outcome: CommandOutcome | Error) =>
  'events' in outcome
    ? outcome.events.map((event) => `${event.seq}:${event.type}`).join(',')
    : `refused:${outcome.name}`;

const withStore = async <A>(work: (store: ReturnType<typeof openLmdbStore>) => Promise<A>) => {
  const dir = tempDataDir('airs-batch');
  const store = openLmdbStore(dir);
  try {
    return await work(store);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
};

describe('A batch of commands', () => {
  it('applied in one transaction gives exactly the events, outcomes and views of applying its commands one by one', async () => {
    await fc.assert(
      fc.asyncProperty(commands, async (batch) => {
        const together = await withStore(async (store) => {
          const outcomes = await store.commit({ commands: batch });
          store.syncReads.refresh();
          return { outcomes: outcomes.map(shape), contents: contents(store) };
        });
        const oneByOne = await withStore(async (store) => {
          const outcomes: string[] = [];
          for (const command of batch) {
            const [outcome] = await store.commit({ commands: [command] });
            outcomes.push(shape(outcome as CommandOutcome));
          }
          store.syncReads.refresh();
          return { outcomes, contents: contents(store) };
        });
        expect(together).toEqual(oneByOne);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps every command that was not refused, also when refused ones sit between them', async () => {
    await withStore(async (store) => {
      const submit = (reqId: string): Command => ({
        type: 'Submit',
        reqId,
        accountId: 'acct_1',
        keyId: 'key_1',
        model: 'echo',
        promptChars: 1,
        prompt: 'x',
        ttlMs: 1_000,
        now: 0,
      });
      const outcomes = await store.commit({
        commands: [
          submit('req_1'),
          submit('req_1'),
          { type: 'RecordSuccess', reqId: 'req_2', responseChars: 1, response: 'y', now: 1 },
          submit('req_2'),
        ],
      });
      expect(outcomes.map(shape)).toEqual([
        '1:RequestQueued',
        'refused:LifecycleViolation',
        'refused:LifecycleViolation',
        '2:RequestQueued',
      ]);
      store.syncReads.refresh();
      expect([store.syncReads.request('req_1')?.status, store.syncReads.request('req_2')?.status]).toEqual([
        'waiting',
        'waiting',
      ]);
    });
  });
});
