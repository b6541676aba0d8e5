import { randomBytes } from 'node:crypto';
import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import type { Logger } from 'pino';
import { webhookRetentionMs } from '../../config.js';
import { isRefusal } from '../../domain/commands.js';
import { defaultWebhookBackoff, type WebhookBackoff } from '../../domain/webhook/backoff.js';
import { webhookSecretCredentialKey } from '../../domain/webhook/commands.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import { envelopeEventOf } from '../../domain/webhook/dueDeliveries.js';
import { receivesDeliveries, signingSecretIds, type WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { webhookBody } from '../../domain/webhook/envelope.js';
import { AppClock, type ClockShape } from '../../ports/Clock.js';
import { Log } from '../../ports/Logger.js';
import { type CommandOutcome, Store, type StoreShape } from '../../ports/Store.js';
import type { WebhookPostResult, WebhookTransport } from '../../ports/WebhookTransport.js';
import { AppConfig } from '../AppConfig.js';
import { Committer, type CommitterShape } from '../Committer.js';
import { createSendPlaces } from './sendPlaces.js';
import { signWebhook } from './signing.js';

/**
 * The webhook sender of one server process (issue 30): takes the deliveries due from the store's outbox, leases each
 * attempt (`StartAttempt`, decided inside the write: two processes or nodes never both send one attempt), signs and
 * posts it, and records the outcome under the lease. Bounded in this process by its places (sendPlaces.ts: in all, per
 * account and per endpoint, and endpoints that do not answer on half of them), so that a slow or dead endpoint holds
 * one place and nothing else: no endpoint that answers, no submit, no model call waits on it (posts are plain promises
 * on the event loop; the store's writes go through the committer's internal lane).
 */
export interface WebhookSenderShape {
  /** Something may have become due (a test that moved its clock, a redelivery): looks at the outbox soon. Cheap. */
  wake(): void;
  /** Attempts this process is sending now (from their durable start to their recorded outcome). */
  inFlight(): number;
  /** Starts nothing new from now on; attempts in flight finish and are recorded (a draining server). */
  stopTakingWork(): void;
}

export class WebhookSender extends Context.Service<WebhookSender, WebhookSenderShape>()('airs/WebhookSender') {}

export type WebhookSenderDeps = {
  readonly store: StoreShape;
  readonly committer: CommitterShape;
  readonly clock: ClockShape;
  readonly log: Logger;
  readonly transport: WebhookTransport;
  /** This process's name on the attempts it leases. */
  readonly owner: string;
  /** Attempts open at once in this process, in all, to one endpoint and to one account (`webhooks.maxInFlight…`). */
  readonly maxInFlight: number;
  readonly maxInFlightPerEndpoint: number;
  readonly maxInFlightPerAccount: number;
  /** How long a start holds the delivery: longer than the transport's 10 s bound, so no renewal is needed. */
  readonly leaseMs?: number;
  /** How long a delivery is attempted (`webhooks.retentionHours`, in ms): the backoff's bound on the total. */
  readonly retentionMs: number;
  /** The longest wait between two looks at the outbox while nothing is heard (a retry due, another node's write). */
  readonly maxIdleMs?: number;
  /** The jitter's source (`Math.random` unless a test gives one). */
  readonly random?: () => number;
};

export const webhookLeaseMs = 30_000;
export const webhookMaxIdleMs = 5_000;
/** How long a freed place waits for others before the look that fills them. */
const freedLookDelayMs = 2;

/** Events after which a delivery may be due here at once. (Retries are found by the timer at their time.) */
const makesDue = new Set([
  'WebhookDeliveryDue',
  'WebhookRedeliveryRequested',
  'WebhookEndpointEnabled',
  // Its waiting deliveries are due at once (domain/webhook/recovery.ts).
  'WebhookEndpointRecovered',
]);

/** A due delivery this look took a place for, with its endpoint as the look read it. */
type Taken = {
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly endpoint: WebhookEndpointState | undefined;
};

/** Why a due delivery is given up instead of attempted (the rule `decideDelivery` applies to `GiveUp`). */
const givesUp = (delivery: DeliveryState, endpoint: WebhookEndpointState | undefined, now: number): boolean =>
  !receivesDeliveries(endpoint) || now >= delivery.context.giveUpAt;

export const createWebhookSender = (deps: WebhookSenderDeps) => {
  const { store, committer, clock, log, transport, owner } = deps;
  const leaseMs = deps.leaseMs ?? webhookLeaseMs;
  const maxIdleMs = deps.maxIdleMs ?? webhookMaxIdleMs;
  const random = deps.random ?? Math.random;
  const policy: WebhookBackoff = { ...defaultWebhookBackoff, maxTotalMs: deps.retentionMs };
  /** Deliveries this process holds a place for, from the look that took them until their outcome is written. */
  const places = createSendPlaces(
    {
      maxInFlight: deps.maxInFlight,
      perEndpoint: deps.maxInFlightPerEndpoint,
      perAccount: deps.maxInFlightPerAccount,
    },
    () => clock.now(),
  );
  /** The work of each delivery holding a place, to wait for when stopping. */
  const running = new Map<string, Promise<void>>();
  /** Resolves every post in flight at once when the sender stops: it records nothing for them (their leases lapse
   * and another look, here after a restart or in another process, sends them again: at least once). */
  const abandons = new Set<() => void>();
  let takingWork = true;
  let stopped = false;
  let looking = false;
  let lookAgain = false;
  let timer: NodeJS.Timeout | undefined;
  /** The endpoint the last look ended at: the next starts after it, so every endpoint comes in turn. */
  let after: string | undefined;

  const letGo = ({ deliveryId }: Taken) => {
    places.release(deliveryId);
    running.delete(deliveryId);
  };

  const record = async (
    taken: Taken,
    attempt: number,
    result: WebhookPostResult,
  ): Promise<CommandOutcome | Error | undefined> => {
    const outcome = {
      attempt,
      owner,
      ...(result.status === undefined ? {} : { status: result.status }),
      latencyMs: result.latencyMs,
      ...(result.delivered ? {} : { error: (result.error ?? 'failed').slice(0, 500) }),
    };
    const now = clock.now();
    const command = result.delivered
      ? ({ type: 'RecordSuccess', outcome, now } as const)
      : ({ type: 'RecordFailure', outcome, policy, random: random(), now } as const);
    return committer.send({ type: 'WebhookDelivery', deliveryId: taken.deliveryId, command }) as Promise<
      CommandOutcome | Error
    >;
  };

  /** One attempt whose start is durable: sign, post, record (a refusal: the lease was taken over; nothing to do). */
  const send = async (
    taken: Taken,
    attempt: number,
    delivery: DeliveryState,
    endpoint: WebhookEndpointState,
  ): Promise<void> => {
    // Stopped meanwhile: nothing is posted (the lease lapses, and the delivery is sent after the restart).
    if (stopped) return;
    let result: WebhookPostResult;
    const now = clock.now();
    const secretIds = signingSecretIds(endpoint, now);
    const secrets = (
      await Promise.all(secretIds.map((id) => store.reads.credential(webhookSecretCredentialKey(id))))
    ).filter((secret): secret is string => secret !== undefined);
    if (secrets.length === 0) {
      // Only a removal racing this attempt takes the secret away: nothing is sent unsigned.
      result = { delivered: false, status: undefined, latencyMs: 0, error: 'the endpoint has no signing secret' };
    } else {
      // The same bytes on every attempt (made from the delivery's facts); each attempt signed anew, at its own time.
      const body = webhookBody(envelopeEventOf(delivery.context));
      const headers = signWebhook({ id: taken.deliveryId, timestampMs: now, body, secrets });
      let stopWaiting = () => {};
      const abandoned = new Promise<undefined>((resolve) => {
        stopWaiting = () => resolve(undefined);
        abandons.add(stopWaiting);
      });
      const posted = await Promise.race([transport({ url: endpoint.url, body, headers }), abandoned]).finally(() =>
        abandons.delete(stopWaiting),
      );
      if (posted === undefined) return;
      result = posted;
      places.heard(taken.endpointId, result);
    }
    const recorded = await record(taken, attempt, result);
    if (recorded instanceof Error && !isRefusal(recorded))
      log.warn({ deliveryId: taken.deliveryId, reason: recorded.message }, 'webhook attempt not recorded');
  };

  /** Starts (or gives up) the deliveries a look took: every start of the look in one batch of the committer. */
  const begin = async (taken: readonly Taken[]) => {
    let deliveries: (DeliveryState | undefined)[];
    try {
      deliveries = await Promise.all(taken.map(({ deliveryId }) => store.reads.webhookDelivery(deliveryId)));
    } catch (error) {
      // The store cannot be read: the places are given back, and the timer looks again.
      for (const one of taken) letGo(one);
      throw error;
    }
    const now = clock.now();
    // Sent in one turn: one write for the whole look.
    const writes = taken.map((one, i) => {
      const delivery = deliveries[i];
      const { endpoint } = one;
      if (delivery === undefined || (delivery.status !== 'waiting' && delivery.status !== 'sending'))
        return Promise.resolve(undefined);
      const command = givesUp(delivery, endpoint, now)
        ? ({ type: 'GiveUp', now } as const)
        : ({ type: 'StartAttempt', owner, leaseMs, now } as const);
      return committer.send({ type: 'WebhookDelivery', deliveryId: one.deliveryId, command }).then(
        (outcome) => ({ command: command.type, outcome, delivery, endpoint }),
        (error: unknown) => ({ command: command.type, outcome: error as Error, delivery, endpoint }),
      );
    });
    taken.forEach((one, i) => {
      const done = (writes[i] as (typeof writes)[number])
        .then(async (written) => {
          if (written === undefined || written.command !== 'StartAttempt') return;
          const { outcome, delivery, endpoint } = written;
          // Refused: another sender holds it, or it changed since the look (its endpoint went, say): skip it.
          if (outcome instanceof Error || !('events' in outcome) || endpoint === undefined) return;
          const started = outcome.events.find((event) => event.type === 'WebhookAttemptStarted');
          if (started === undefined || !('attempt' in started)) return;
          await send(one, started.attempt as number, delivery, endpoint);
        })
        .catch((error: unknown) => log.error({ err: error, deliveryId: one.deliveryId }, 'webhook attempt failed'))
        .finally(() => {
          letGo(one);
          // A place is free: whatever waited for it may go now (places freed together share one look).
          soon();
        });
      running.set(one.deliveryId, done);
    });
  };

  /** Each endpoint of a read once: its account and standing decide its places. */
  const endpointsOf = async (due: readonly { readonly endpointId: string }[]) => {
    const ids = [...new Set(due.map((one) => one.endpointId))];
    const views = await Promise.all(ids.map((id) => store.reads.webhookEndpoint(id)));
    return new Map(ids.map((id, i) => [id, views[i]]));
  };

  /** One look at the outbox: takes what is due into the free places, and sets the timer for the next look. */
  const look = async () => {
    const free = deps.maxInFlight - places.size();
    if (!takingWork || free <= 0) return;
    const now = clock.now();
    const { due, next, stoppedAt } = await store.reads.dueWebhookDeliveries(now, {
      after,
      perEndpoint: deps.maxInFlightPerEndpoint,
      limit: free,
      passOver: places.passOver,
    });
    if (!takingWork) return;
    const endpoints = due.length === 0 ? new Map() : await endpointsOf(due);
    if (!takingWork) return;
    const taken: Taken[] = [];
    // Already being sent here (its lease lapsed under a post still open), or no room for it by the places' rule.
    for (const one of due) {
      const endpoint = endpoints.get(one.endpointId);
      if (places.take(places.claimFor(one, endpoint))) taken.push({ ...one, endpoint });
    }
    after = stoppedAt ?? due.at(-1)?.endpointId ?? after;
    arm(next === undefined ? maxIdleMs : next - now);
    if (taken.length > 0) await begin(taken);
    // A bound stopped the read with places still free (what it read had no room, or it passed full endpoints over):
    // read on from where it stopped, for what is due beyond.
    if (stoppedAt !== undefined && places.size() < deps.maxInFlight) lookAgain = true;
  };

  /** A look in a moment: under load, places free one by one, and a look per place costs more than the post. */
  let soonTimer: NodeJS.Timeout | undefined;
  const soon = () => {
    if (soonTimer !== undefined || !takingWork) return;
    soonTimer = setTimeout(() => {
      soonTimer = undefined;
      schedule();
    }, freedLookDelayMs);
  };

  const arm = (delayMs: number) => {
    if (stopped || !takingWork) return;
    clearTimeout(timer);
    timer = setTimeout(schedule, Math.min(maxIdleMs, Math.max(0, delayMs)));
    timer.unref();
  };

  /** Looks at the outbox, one look at a time: a call during a look makes one more after it. */
  const schedule = () => {
    if (!takingWork) return;
    if (looking) {
      lookAgain = true;
      return;
    }
    looking = true;
    void (async () => {
      let rounds = 0;
      do {
        lookAgain = false;
        try {
          await look();
        } catch (error) {
          // A read or a write failed (the store cannot be reached): the timer looks again.
          log.debug({ err: error }, 'webhook look failed');
          arm(maxIdleMs);
          break;
        }
        // Bounded: endpoints that are all full are not read again and again in one go (the timer comes back).
      } while (lookAgain && takingWork && ++rounds < 16);
      looking = false;
    })();
  };

  const hearOwn = committer.onCommitted((outcomes) => {
    for (const outcome of outcomes)
      if (!(outcome instanceof Error) && 'events' in outcome && outcome.events.some((e) => makesDue.has(e.type)))
        return schedule();
  });
  const stopHearing = store.reads.onChange(schedule);

  const stopTakingWork = () => {
    takingWork = false;
    clearTimeout(timer);
    clearTimeout(soonTimer);
  };

  /** Stops: starts nothing more, abandons the posts still open (recording nothing for them), waits for the rest. */
  const stop = async () => {
    stopTakingWork();
    stopped = true;
    hearOwn();
    stopHearing();
    for (const stopWaiting of abandons) stopWaiting();
    await Promise.allSettled([...running.values()]);
  };

  return {
    owner,
    wake: schedule,
    inFlight: () => places.size(),
    stopTakingWork,
    stop,
    /** Resolves when nothing is in flight (tests). */
    idle: async () => {
      while (running.size > 0) await Promise.allSettled([...running.values()]);
    },
  };
};

/** A name for this process's webhook leases where the store gives none (a store shared by machines). */
const newWebhookOwner = () => `whs_${randomBytes(9).toString('base64url')}`;

/**
 * The sender as a layer: started when built (taking up whatever the outbox holds due: a restart sends what a crash
 * left), stopped with its scope. `transport` posts one attempt (the composition root gives the adapter).
 */
export const WebhookSenderLayer = (transport: WebhookTransport) =>
  Layer.effect(
    WebhookSender,
    Effect.gen(function* () {
      const config = yield* AppConfig;
      const store = yield* Store;
      const sender = yield* Effect.acquireRelease(
        Effect.gen(function* () {
          return createWebhookSender({
            store,
            committer: yield* Committer,
            clock: yield* AppClock,
            log: yield* Log,
            transport,
            // A name that tells this process where the store can tell whether a process is gone (LMDB).
            owner: store.owners?.name('webhooks') ?? newWebhookOwner(),
            maxInFlight: config.webhooks.maxInFlight,
            maxInFlightPerEndpoint: config.webhooks.maxInFlightPerEndpoint,
            maxInFlightPerAccount: config.webhooks.maxInFlightPerAccount,
            retentionMs: webhookRetentionMs(config.webhooks),
          });
        }),
        (s) => Effect.promise(() => s.stop()),
      );
      sender.wake();
      const { wake, inFlight, stopTakingWork } = sender;
      return WebhookSender.of({ wake, inFlight, stopTakingWork });
    }),
  );
