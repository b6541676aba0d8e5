import { describe, expect, it } from 'vitest';
import type { RequestEvent } from '../../src/domain/request/events.js';
import { publicStatus } from '../../src/domain/request/publicStatus.js';
import type { RetryPolicy } from '../../src/domain/request/retryPolicy.js';
import { foldRequest } from '../../src/domain/request/state.js';
import { given } from '../support/deciderSpec.js';

const reqId = 'req_test';
const t0 = 1_000_000;
const ttlMs = 86_400_000;
const expiresAt = t0 + ttlMs;
const policy: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 30_000 };

const queued: RequestEvent = {
  type: 'RequestQueued',
  reqId,
  accountId: 'acct_a',
  keyId: 'key_a',
  model: 'echo',
  promptChars: 5,
  at: t0,
  expiresAt,
};
const started = (attempt: number, at = t0 + 10): RequestEvent => ({
  type: 'RequestProcessingStarted',
  reqId,
  attempt,
  at,
});
const completed: RequestEvent = { type: 'RequestCompleted', reqId, responseChars: 5, at: t0 + 20 };
const failed: RequestEvent = { type: 'RequestFailed', reqId, reason: 'boom', at: t0 + 20 };

describe('When the request does not exist yet', () => {
  it('a submit queues it with an expiry time counted from creation', () => {
    given([])
      .when({
        type: 'Submit',
        reqId,
        accountId: 'acct_a',
        keyId: 'key_a',
        model: 'echo',
        promptChars: 5,
        ttlMs,
        now: t0,
      })
      .thenEvents([queued]);
  });
  it('a submit that may start at once queues it and starts attempt number one in the same decision', () => {
    given([])
      .when({
        type: 'Submit',
        reqId,
        accountId: 'acct_a',
        keyId: 'key_a',
        model: 'echo',
        promptChars: 5,
        ttlMs,
        now: t0,
        startNow: { owner: 'w1', leaseMs: 30_000 },
      })
      .thenEvents([queued, { ...started(1, t0), owner: 'w1', leaseUntil: t0 + 30_000 } as RequestEvent]);
  });
  it('a submit that may start at once is only queued when the machine would refuse the start (no time left)', () => {
    given([])
      .when({
        type: 'Submit',
        reqId,
        accountId: 'acct_a',
        keyId: 'key_a',
        model: 'echo',
        promptChars: 5,
        ttlMs: 0,
        now: t0,
        startNow: { owner: 'w1', leaseMs: 30_000 },
      })
      .thenEvents([{ ...queued, expiresAt: t0 }]);
  });
  it('no work can start on it', () => {
    given([]).when({ type: 'StartAttempt', reqId, now: t0 }).thenRefused('RequestProcessingStarted');
  });
  it('it cannot be expired', () => {
    given([]).when({ type: 'Expire', reqId, now: expiresAt }).thenRefused('RequestExpired');
  });
});

describe('When the request is queued and waiting', () => {
  it('a worker starts attempt number one', () => {
    given([queued])
      .when({ type: 'StartAttempt', reqId, now: t0 + 10 })
      .thenEvents([started(1)]);
  });
  it('a second submit with the same id is refused', () => {
    given([queued])
      .when({
        type: 'Submit',
        reqId,
        accountId: 'acct_a',
        keyId: 'key_a',
        model: 'echo',
        promptChars: 5,
        ttlMs,
        now: t0,
      })
      .thenRefused('RequestQueued');
  });
  it('it cannot complete without an attempt in progress', () => {
    given([queued])
      .when({ type: 'RecordSuccess', reqId, responseChars: 1, now: t0 + 5 })
      .thenRefused('RequestCompleted');
  });
  it('no work starts once the expiry time has come', () => {
    given([queued]).when({ type: 'StartAttempt', reqId, now: expiresAt }).thenRefused('RequestProcessingStarted');
  });
  it('it cannot be expired before its expiry time', () => {
    given([queued])
      .when({ type: 'Expire', reqId, now: expiresAt - 1 })
      .thenRefused('RequestExpired');
  });
  it('it expires at its expiry time', () => {
    given([queued])
      .when({ type: 'Expire', reqId, now: expiresAt })
      .thenEvents([{ type: 'RequestExpired', reqId, at: expiresAt }]);
  });
  it('it is publicly queued', () => {
    expect(publicStatus(foldRequest([queued]), t0 + 1)).toBe('queued');
  });
});

describe('When the request is being processed', () => {
  it('success completes it with the response size', () => {
    given([queued, started(1)])
      .when({ type: 'RecordSuccess', reqId, responseChars: 5, now: t0 + 20 })
      .thenEvents([completed]);
  });
  it('a failure before the last attempt schedules a retry after an exponential backoff', () => {
    given([queued, started(1)])
      .when({ type: 'RecordFailure', reqId, reason: 'upstream 503', policy, now: t0 + 20 })
      .thenEvents([
        { type: 'RequestAttemptFailed', reqId, attempt: 1, reason: 'upstream 503', retryAt: t0 + 1_020, at: t0 + 20 },
      ]);
    const retried = [
      queued,
      started(1),
      { type: 'RequestAttemptFailed', reqId, attempt: 1, reason: 'x', retryAt: t0 + 1_020, at: t0 + 20 } as const,
    ];
    given([...retried, started(2, t0 + 1_100)])
      .when({ type: 'RecordFailure', reqId, reason: 'again', policy, now: t0 + 1_200 })
      .thenEvents([
        { type: 'RequestAttemptFailed', reqId, attempt: 2, reason: 'again', retryAt: t0 + 3_200, at: t0 + 1_200 },
      ]);
  });
  it('a failure of the last allowed attempt fails the request for good', () => {
    const history: RequestEvent[] = [queued];
    for (let attempt = 1; attempt <= 3; attempt++) {
      history.push(started(attempt, t0 + attempt * 100));
      if (attempt < 3)
        history.push({
          type: 'RequestAttemptFailed',
          reqId,
          attempt,
          reason: 'x',
          retryAt: t0,
          at: t0 + attempt * 100 + 1,
        });
    }
    given(history)
      .when({ type: 'RecordFailure', reqId, reason: 'timed out', policy, now: t0 + 500 })
      .thenEvents([{ type: 'RequestFailed', reqId, reason: 'gave up after 3 attempts: timed out', at: t0 + 500 }]);
  });
  it('a worker restarted after a crash may start it again, as a new attempt', () => {
    given([queued, started(1)])
      .when({ type: 'StartAttempt', reqId, now: t0 + 30 })
      .thenEvents([started(2, t0 + 30)]);
  });
  it('a result arriving at or after the expiry time is not recorded', () => {
    given([queued, started(1)])
      .when({ type: 'RecordSuccess', reqId, responseChars: 5, now: expiresAt })
      .thenRefused('RequestCompleted');
  });
  it('it is still publicly queued', () => {
    expect(publicStatus(foldRequest([queued, started(1)]), t0 + 11)).toBe('queued');
  });
});

describe('When the request is completed', () => {
  const history = [queued, started(1), completed];
  it('it cannot complete a second time', () => {
    given(history)
      .when({ type: 'RecordSuccess', reqId, responseChars: 9, now: t0 + 30 })
      .thenRefused('RequestCompleted');
  });
  it('it cannot be started again', () => {
    given(history)
      .when({ type: 'StartAttempt', reqId, now: t0 + 30 })
      .thenRefused('RequestProcessingStarted');
  });
  it('it expires at its expiry time, counted from creation and not from completion', () => {
    given(history)
      .when({ type: 'Expire', reqId, now: expiresAt })
      .thenEvents([{ type: 'RequestExpired', reqId, at: expiresAt }]);
  });
  it('it is publicly completed until the expiry time and hidden from then on, before any expiry is written', () => {
    expect(publicStatus(foldRequest(history), expiresAt - 1)).toBe('completed');
    expect(publicStatus(foldRequest(history), expiresAt)).toBe('expired');
  });
});

describe('When the request has failed', () => {
  const history = [queued, started(1), failed];
  it('it cannot be completed any more', () => {
    given(history)
      .when({ type: 'RecordSuccess', reqId, responseChars: 1, now: t0 + 30 })
      .thenRefused('RequestCompleted');
  });
  it('it still expires', () => {
    given(history)
      .when({ type: 'Expire', reqId, now: expiresAt + 5 })
      .thenEvents([{ type: 'RequestExpired', reqId, at: expiresAt + 5 }]);
  });
  it('it is publicly failed', () => {
    expect(publicStatus(foldRequest(history), t0 + 30)).toBe('failed');
  });
});

describe('When the request has expired', () => {
  const history: RequestEvent[] = [queued, { type: 'RequestExpired', reqId, at: expiresAt }];
  it('nothing can happen to it any more, and expiring it again changes nothing (several servers sweep)', () => {
    given(history)
      .when({ type: 'StartAttempt', reqId, now: expiresAt + 1 })
      .thenRefused('RequestProcessingStarted');
    given(history)
      .when({ type: 'Expire', reqId, now: expiresAt + 1 })
      .thenEvents([]);
  });
  it('it is publicly hidden', () => {
    expect(publicStatus(foldRequest(history), expiresAt + 1)).toBe('expired');
  });
});

describe('When a worker holds the request under a lease', () => {
  const lease = { owner: 'proc_a', leaseMs: 30_000 };
  const startedLeased: RequestEvent = {
    type: 'RequestProcessingStarted',
    reqId,
    attempt: 1,
    at: t0 + 10,
    owner: 'proc_a',
    leaseUntil: t0 + 10 + 30_000,
  };
  const queuedWithBound: RequestEvent = {
    ...(queued as Extract<RequestEvent, { type: 'RequestQueued' }>),
    maxAttempts: 2,
  };
  const history: RequestEvent[] = [queuedWithBound, startedLeased];
  it('its owner records the outcome of its attempt', () => {
    given(history)
      .when({ type: 'RecordSuccess', reqId, responseChars: 5, now: t0 + 20, owner: 'proc_a', attempt: 1 })
      .thenEvents([{ ...completed, owner: 'proc_a', attempt: 1 } as RequestEvent]);
  });
  it('another worker records nothing (fencing), nor does its owner for an attempt that is not the current one', () => {
    given(history)
      .when({ type: 'RecordSuccess', reqId, responseChars: 5, now: t0 + 20, owner: 'proc_b', attempt: 1 })
      .thenRefused('RequestCompleted');
    given(history)
      .when({ type: 'RecordSuccess', reqId, responseChars: 5, now: t0 + 20, owner: 'proc_a', attempt: 2 })
      .thenRefused('RequestCompleted');
    given(history)
      .when({ type: 'ExtendLease', reqId, owner: 'proc_b', attempt: 1, leaseMs: 30_000, now: t0 + 20 })
      .thenRefused('RequestLeaseExtended');
  });
  it('nobody takes it over until the lease lapses; then another worker may, as a new attempt', () => {
    given(history)
      .when({ type: 'StartAttempt', reqId, now: t0 + 30_000, owner: 'proc_b', leaseMs: 30_000 })
      .thenRefused('RequestProcessingStarted');
    given(history)
      .when({ type: 'StartAttempt', reqId, now: t0 + 10 + 30_000, owner: 'proc_b', leaseMs: 30_000 })
      .thenEvents([
        {
          type: 'RequestProcessingStarted',
          reqId,
          attempt: 2,
          at: t0 + 10 + 30_000,
          owner: 'proc_b',
          leaseUntil: t0 + 10 + 60_000,
        },
      ]);
  });
  it('its owner extends the lease, or gives the request back to the queue at once', () => {
    given(history)
      .when({ type: 'ExtendLease', reqId, owner: 'proc_a', attempt: 1, leaseMs: 30_000, now: t0 + 20_000 })
      .thenEvents([
        { type: 'RequestLeaseExtended', reqId, owner: 'proc_a', attempt: 1, leaseUntil: t0 + 50_000, at: t0 + 20_000 },
      ]);
    given(history)
      .when({ type: 'Release', reqId, owner: 'proc_a', attempt: 1, now: t0 + 20 })
      .thenEvents([{ type: 'RequestReleased', reqId, owner: 'proc_a', attempt: 1, at: t0 + 20 }]);
  });
  it('its owner gone, its lease ends at once: another worker takes it over as a new attempt, without waiting', () => {
    const gone = { type: 'OwnerGone', reqId, owner: 'proc_a', attempt: 1, now: t0 + 20 } as const;
    given(history)
      .when(gone)
      .thenEvents([{ type: 'RequestOwnerGone', reqId, owner: 'proc_a', attempt: 1, at: t0 + 20 }]);
    const ended: RequestEvent[] = [
      ...history,
      { type: 'RequestOwnerGone', reqId, owner: 'proc_a', attempt: 1, at: t0 + 20 },
    ];
    given(ended)
      .when({ type: 'StartAttempt', reqId, now: t0 + 21, owner: 'proc_b', leaseMs: 30_000 })
      .thenEvents([
        { type: 'RequestProcessingStarted', reqId, attempt: 2, at: t0 + 21, owner: 'proc_b', leaseUntil: t0 + 30_021 },
      ]);
    // Told twice (two processes saw it die): the second notice changes nothing.
    given(ended)
      .when({ ...gone, now: t0 + 30 })
      .thenRefused('RequestOwnerGone');
    // Only for the current attempt of the owner named, while its lease runs.
    given(history)
      .when({ ...gone, owner: 'proc_b' })
      .thenRefused('RequestOwnerGone');
    given(history)
      .when({ ...gone, attempt: 2 })
      .thenRefused('RequestOwnerGone');
    given(history)
      .when({ ...gone, now: t0 + 10 + 30_000 })
      .thenRefused('RequestOwnerGone');
  });
  it('its owner gone after its last attempt, it fails for good as with a lapsed lease', () => {
    const policy = { maxAttempts: 2, baseDelayMs: 1_000, maxDelayMs: 30_000 };
    // Its second attempt by another process (one never takes over its own lease), whose owner is then gone.
    const second: RequestEvent = {
      ...startedLeased,
      attempt: 2,
      at: t0 + 40_010,
      owner: 'proc_c',
      leaseUntil: t0 + 70_010,
    } as RequestEvent;
    const ended: RequestEvent[] = [
      ...history,
      second,
      { type: 'RequestOwnerGone', reqId, owner: 'proc_c', attempt: 2, at: t0 + 40_020 },
    ];
    given(ended)
      .when({ type: 'StartAttempt', reqId, now: t0 + 40_021, owner: 'proc_b', leaseMs: 30_000 })
      .thenEvents([
        {
          type: 'RequestProcessingStarted',
          reqId,
          attempt: 3,
          at: t0 + 40_021,
          owner: 'proc_b',
          leaseUntil: t0 + 70_021,
        },
      ]);
    given(ended)
      .when({ type: 'RecordFailure', reqId, reason: 'gone', policy, now: t0 + 40_021, owner: 'proc_b' })
      .thenEvents([
        { type: 'RequestFailed', reqId, reason: 'gave up after 2 attempts: gone', at: t0 + 40_021, owner: 'proc_b' },
      ]);
  });
  it('a failure is retried while attempts remain, and fails it for good after its last one', () => {
    const policy = { maxAttempts: 99, baseDelayMs: 1_000, maxDelayMs: 30_000 };
    given(history)
      .when({ type: 'RecordFailure', reqId, reason: 'boom', policy, now: t0 + 20, owner: 'proc_a', attempt: 1 })
      .thenEvents([
        {
          type: 'RequestAttemptFailed',
          reqId,
          attempt: 1,
          reason: 'boom',
          retryAt: t0 + 1_020,
          at: t0 + 20,
          owner: 'proc_a',
        },
      ]);
    const second: RequestEvent = { ...startedLeased, attempt: 2, at: t0 + 2_000, leaseUntil: t0 + 32_000 };
    // The request's own bound (2) counts, not the policy's: it was fixed when the request was made.
    given([
      ...history,
      {
        type: 'RequestAttemptFailed',
        reqId,
        attempt: 1,
        reason: 'boom',
        retryAt: t0 + 1_020,
        at: t0 + 20,
        owner: 'proc_a',
      },
      second,
    ])
      .when({ type: 'RecordFailure', reqId, reason: 'boom', policy, now: t0 + 2_100, owner: 'proc_a', attempt: 2 })
      .thenEvents([
        {
          type: 'RequestFailed',
          reqId,
          reason: 'gave up after 2 attempts: boom',
          at: t0 + 2_100,
          owner: 'proc_a',
          attempt: 2,
        },
      ]);
  });
  it('a failure no retry could mend fails it for good at once, attempts left or not, saying what its caller is told; only from the worker that holds it', () => {
    const policy = { maxAttempts: 99, baseDelayMs: 1_000, maxDelayMs: 30_000 };
    const said = "the model's upstream refused the request (404)";
    const permanent = { type: 'RecordFailure', reqId, reason: 'answered 404', policy, said, permanent: true } as const;
    given(history)
      .when({ ...permanent, now: t0 + 20, owner: 'proc_a', attempt: 1 })
      .thenEvents([
        {
          type: 'RequestFailed',
          reqId,
          reason: 'failed for good at attempt 1: answered 404',
          at: t0 + 20,
          owner: 'proc_a',
          attempt: 1,
          said,
          permanent: true,
        },
      ]);
    given(history)
      .when({ ...permanent, now: t0 + 20, owner: 'proc_b', attempt: 1 })
      .thenRefused('RequestFailed');
  });
  it('a retry does not start before its backoff ends', () => {
    const failed: RequestEvent = {
      type: 'RequestAttemptFailed',
      reqId,
      attempt: 1,
      reason: 'boom',
      retryAt: t0 + 1_020,
      at: t0 + 20,
      owner: 'proc_a',
    };
    given([...history, failed])
      .when({ type: 'StartAttempt', reqId, now: t0 + 1_000, ...lease })
      .thenRefused('RequestProcessingStarted');
    given([...history, failed])
      .when({ type: 'StartAttempt', reqId, now: t0 + 1_020, ...lease })
      .thenEvents([
        {
          type: 'RequestProcessingStarted',
          reqId,
          attempt: 2,
          at: t0 + 1_020,
          owner: 'proc_a',
          leaseUntil: t0 + 31_020,
        },
      ]);
  });
});

describe('When the request was cancelled', () => {
  it('cancelling it again changes nothing and is no error', () => {
    given([queued, { type: 'RequestCancelled', reqId, at: t0 + 5 }])
      .when({ type: 'Cancel', reqId, now: t0 + 6 })
      .thenEvents([]);
  });
});
