import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { transition } from 'xstate';
import { LifecycleViolation } from '../../src/domain/errors.js';
import { decide, type RequestCommand } from '../../src/domain/request/decider.js';
import type { RequestEvent } from '../../src/domain/request/events.js';
import { requestMachine } from '../../src/domain/request/machine.js';
import { publicStatus } from '../../src/domain/request/publicStatus.js';
import { isCancellable, isExpired } from '../../src/domain/request/questions.js';
import type { RetryPolicy } from '../../src/domain/request/retryPolicy.js';
import {
  foldRequest,
  initialRequestState,
  type RequestState,
  type RequestStatus,
  toSnapshot,
  toState,
} from '../../src/domain/request/state.js';

/**
 * Model-based tests of one request's lifecycle, pure: commands go through `decide`, accepted events through the
 * machine (kept as a live xstate snapshot, the "decider loop"), and a small reference model predicts each answer.
 */

const reqId = 'req_property';
const start = Date.UTC(2026, 0, 1);

/** The reference model: just enough to predict acceptance and the next status. */
type Model = {
  status: RequestStatus;
  expiresAt: number;
  attempts: number;
  /** When a waiting request may be started (its creation, or the end of a retry's backoff). */
  availableAt: number;
  responseChars?: number;
};

type Step = {
  readonly command?: RequestCommand;
  readonly before: RequestState;
  readonly after: RequestState;
  readonly accepted: boolean;
  readonly model: Model;
  readonly predicted: { accepted: boolean; status: RequestStatus };
  readonly events: readonly RequestEvent[];
  readonly now: number;
};
type Invariant = (step: Step) => void;

type Real = { snapshot: ReturnType<typeof toSnapshot>; events: RequestEvent[]; now: number; invariant: Invariant };

const rank: Record<RequestStatus, number> = {
  none: 0,
  waiting: 1,
  processing: 1,
  completed: 2,
  failed: 2,
  cancelled: 2,
  expired: 3,
};

/** What the contract allows, written independently of the machine. Returns the next model, or undefined: refused. */
const predict = (model: Model, command: RequestCommand): Model | undefined => {
  const live = command.now < model.expiresAt;
  const queued = model.status === 'waiting' || model.status === 'processing';
  switch (command.type) {
    case 'Submit':
      return model.status === 'none'
        ? { ...model, status: 'waiting', expiresAt: command.now + command.ttlMs, attempts: 0, availableAt: command.now }
        : undefined;
    case 'StartAttempt': {
      // A waiting request starts once it is available; one being processed without a lease (these commands take
      // none) may be taken over at any time.
      const due = model.status === 'processing' || command.now >= model.availableAt;
      return queued && live && due ? { ...model, status: 'processing', attempts: model.attempts + 1 } : undefined;
    }
    case 'RecordSuccess':
      return model.status === 'processing' && live
        ? { ...model, status: 'completed', responseChars: command.responseChars }
        : undefined;
    case 'RecordFailure': {
      if (model.status !== 'processing') return undefined;
      if (model.attempts >= command.policy.maxAttempts) return { ...model, status: 'failed' };
      const retryAt =
        command.now + Math.min(command.policy.maxDelayMs, command.policy.baseDelayMs * 2 ** (model.attempts - 1));
      return { ...model, status: 'waiting', availableAt: retryAt };
    }
    case 'Expire':
      // Expiring an expired request is no error, and changes nothing (several servers may sweep at once).
      if (model.status === 'expired') return model;
      return model.status !== 'none' && !live ? { ...model, status: 'expired' } : undefined;
    case 'Cancel':
      if (model.status === 'cancelled') return model;
      return queued && live ? { ...model, status: 'cancelled' } : undefined;
    case 'ExtendLease':
    case 'Release':
      return undefined;
  }
};

/** One step of the loop, seen by the invariants. `command` is absent when only the clock moved. */
const observe = (real: Real, model: Model, before: RequestState, step: Partial<Step>) =>
  real.invariant({
    before,
    after: toState(real.snapshot),
    accepted: false,
    model,
    predicted: { accepted: false, status: model.status },
    events: real.events,
    now: real.now,
    ...step,
  });

class DomainCommand implements fc.Command<Model, Real> {
  constructor(
    private readonly label: string,
    private readonly build: (now: number) => RequestCommand,
  ) {}
  check = () => true;
  run(model: Model, real: Real) {
    const command = this.build(real.now);
    const before = toState(real.snapshot);
    const decision = decide(before, command);
    const accepted = !(decision instanceof LifecycleViolation);
    for (const event of accepted ? decision : []) {
      real.snapshot = transition(requestMachine, real.snapshot, event)[0];
      real.events.push(event);
    }
    const next = predict(model, command);
    if (next !== undefined) Object.assign(model, next);
    observe(real, model, before, {
      command,
      accepted,
      predicted: { accepted: next !== undefined, status: model.status },
    });
  }
  toString = () => this.label;
}

class AdvanceClock implements fc.Command<Model, Real> {
  constructor(private readonly to: { by: number } | { expiryOffset: number }) {}
  check = () => true;
  run(model: Model, real: Real) {
    const before = toState(real.snapshot);
    const target = 'by' in this.to ? real.now + this.to.by : before.context.expiresAt + this.to.expiryOffset;
    real.now = Math.max(real.now, target);
    // Time passing changes no state; the invariants about time are checked at the new instant too.
    observe(real, model, before, {});
  }
  toString = () => `AdvanceClock(${JSON.stringify(this.to)})`;
}

const policy: fc.Arbitrary<RetryPolicy> = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 4 }),
  baseDelayMs: fc.integer({ min: 1, max: 5_000 }),
  maxDelayMs: fc.integer({ min: 1, max: 60_000 }),
});

const on = (label: string, build: (now: number) => RequestCommand) => new DomainCommand(label, build);
const submitted = { reqId, accountId: 'acc_1', keyId: 'key_1', model: 'echo', promptChars: 5 } as const;

const commands = fc.commands(
  [
    fc
      .integer({ min: 1, max: 100_000 })
      .map((ttlMs) => on(`Submit(ttl ${ttlMs})`, (now) => ({ ...submitted, type: 'Submit', ttlMs, now }))),
    fc.constant(on('StartAttempt', (now) => ({ type: 'StartAttempt', reqId, now }))),
    fc
      .nat(10_000)
      .map((chars) =>
        on(`RecordSuccess(${chars})`, (now) => ({ type: 'RecordSuccess', reqId, responseChars: chars, now })),
      ),
    policy.map((p) =>
      on(`RecordFailure(${JSON.stringify(p)})`, (now) => ({
        type: 'RecordFailure',
        reqId,
        reason: 'boom',
        policy: p,
        now,
      })),
    ),
    fc.constant(on('Expire', (now) => ({ type: 'Expire', reqId, now }))),
    fc.constant(on('Cancel', (now) => ({ type: 'Cancel', reqId, now }))),
    fc.integer({ min: 0, max: 60_000 }).map((by) => new AdvanceClock({ by })),
    fc.integer({ min: -1, max: 1 }).map((expiryOffset) => new AdvanceClock({ expiryOffset })),
  ],
  { maxCommands: 40 },
);

/** Runs random command sequences and calls `invariant` after every step. */
const checkAlways = (invariant: Invariant) =>
  fc.assert(
    fc.property(commands, (cmds) => {
      fc.modelRun(
        () => ({
          model: { status: 'none' as RequestStatus, expiresAt: 0, attempts: 0, availableAt: 0 },
          real: { snapshot: toSnapshot(initialRequestState), events: [], now: start, invariant },
        }),
        cmds,
      );
    }),
    { numRuns: 150 },
  );

const isStartOrComplete = (event: RequestEvent) =>
  event.type === 'RequestProcessingStarted' || event.type === 'RequestCompleted';

describe('request lifecycle (decider and machine, pure)', () => {
  it('the decider accepts a command exactly when the reference lifecycle allows it and reaches the same status', () => {
    checkAlways(({ accepted, predicted, after }) => {
      expect(accepted).toBe(predicted.accepted);
      expect(after.status).toBe(predicted.status);
    });
  });

  it('the status never goes back, and a completed, failed or cancelled request can only move on to expired', () => {
    checkAlways(({ before, after }) => {
      expect(rank[after.status]).toBeGreaterThanOrEqual(rank[before.status]);
      if (before.status === 'completed' || before.status === 'failed' || before.status === 'cancelled') {
        if (after.status !== 'expired') expect(after).toEqual(before);
      }
      if (before.status === 'expired') expect(after).toEqual(before);
    });
  });

  it('a completed request carries the response size it was completed with, also once it has expired', () => {
    checkAlways(({ after, model, events }) => {
      const completed = events.find((event) => event.type === 'RequestCompleted');
      if (after.status === 'completed' || completed !== undefined) {
        expect(completed?.responseChars).toBe(model.responseChars);
        expect(after.context.responseChars).toBe(model.responseChars);
      }
    });
  });

  it('nothing starts or completes at or after the expiry time', () => {
    checkAlways(({ command, before, accepted, events }) => {
      const late = command !== undefined && before.status !== 'none' && command.now >= before.context.expiresAt;
      if (late && (command.type === 'StartAttempt' || command.type === 'RecordSuccess')) expect(accepted).toBe(false);
      const expiresAt = foldRequest(events).context.expiresAt;
      for (const event of events.filter(isStartOrComplete)) expect(event.at).toBeLessThan(expiresAt);
    });
  });

  it('a cancelled request is never completed: no start, success or failure is accepted after its cancellation', () => {
    checkAlways(({ before, after, command, accepted, events }) => {
      // Cancelling it again changes nothing; nothing else but its expiry is accepted.
      if (before.status === 'cancelled' && command?.type === 'Cancel') expect(after).toEqual(before);
      else if (before.status === 'cancelled' && command !== undefined && command.type !== 'Expire')
        expect(accepted).toBe(false);
      const cancelledAt = events.findIndex((event) => event.type === 'RequestCancelled');
      if (cancelledAt >= 0)
        for (const event of events.slice(cancelledAt + 1)) expect(event.type).toBe('RequestExpired');
    });
  });

  it('a request can be cancelled exactly while it is queued or processing and its TTL has not run out; a cancelled one again, changing nothing', () => {
    checkAlways(({ command, before, after, accepted }) => {
      if (command?.type !== 'Cancel') return;
      const queued = before.status === 'waiting' || before.status === 'processing';
      expect(accepted).toBe((queued && command.now < before.context.expiresAt) || before.status === 'cancelled');
      if (before.status === 'cancelled') expect(after).toEqual(before);
    });
  });

  it('expiry is refused before the expiry time and accepted from it on; expiring an expired request changes nothing', () => {
    checkAlways(({ command, before, after, accepted }) => {
      if (command?.type !== 'Expire' || before.status === 'none') return;
      const due = command.now >= before.context.expiresAt;
      expect(accepted).toBe(due || before.status === 'expired');
      if (before.status === 'expired') expect(after).toEqual(before);
    });
  });

  it('from the end of the TTL on the public status is expired whatever state the request is in', () => {
    checkAlways(({ after, now }) => {
      if (after.status === 'none') return;
      const { expiresAt } = after.context;
      expect(publicStatus(after, Math.max(now, expiresAt))).toBe('expired');
      if (now >= expiresAt) expect(publicStatus(after, now)).toBe('expired');
      else expect(publicStatus(after, now)).not.toBe('expired');
    });
  });

  it('the public status is the machine’s: in every state reached, now and around the expiry time, a request is expired exactly when the machine took or would take its expiry, and queued exactly when it would take its cancellation', () => {
    checkAlways(({ after, now }) => {
      // XState's own snapshot of the state, not the compiled table the app asks (questions.ts).
      const machine = toSnapshot(after);
      const { expiresAt } = after.context;
      const instants = after.status === 'none' ? [now] : [now, expiresAt - 1, expiresAt, expiresAt + 1];
      for (const at of instants) {
        const expiryTaken = after.status === 'expired' || machine.can({ type: 'RequestExpired', reqId, at });
        const cancellationTaken = machine.can({ type: 'RequestCancelled', reqId, at });
        const machineSays =
          after.status === 'none' ? 'unknown' : expiryTaken ? 'expired' : cancellationTaken ? 'queued' : after.status;
        expect(publicStatus(after, at), `at ${at - expiresAt} ms from the expiry time`).toBe(machineSays);
        expect(isExpired(after, at)).toBe(expiryTaken);
        expect(isCancellable(after, at)).toBe(cancellationTaken);
      }
    });
  });

  it('folding the emitted events gives exactly the state the decider loop arrived at', () => {
    checkAlways(({ after, events }) => {
      // Through JSON, as the log stores plain data: the fold must not depend on live machine objects.
      const stored = JSON.parse(JSON.stringify(events)) as RequestEvent[];
      expect(foldRequest(stored)).toEqual(after);
    });
  });
});
