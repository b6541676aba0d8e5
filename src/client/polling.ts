import { invalidResponse } from './errors.js';
import type { Scope } from './scope.js';
import type { Settings, Transport } from './transport.js';
import type { CompletedPoll, PollBody, PollInfo } from './types.js';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A poll body as the API promises it. Completion is detected by the presence of `response` (the specification
 * allows that); anything else with a `req_id` and a `status` is still being worked on.
 */
const toPollBody = (status: number, body: unknown): PollBody => {
  if (!isRecord(body) || typeof body.req_id !== 'string' || typeof body.status !== 'string') {
    throw invalidResponse(status, 'a poll answer without req_id and status');
  }
  return body as PollBody;
};

export const isCompleted = (body: PollBody): body is CompletedPoll => typeof body.response === 'string';

/**
 * One `GET /v1/ai?req_id=…` (with the transport's retries), and the server's advice on when to ask again. With
 * `waitSeconds`, a long poll (`Prefer: wait=N`): `held` says the service held it as asked.
 */
export const pollOnce = async (transport: Transport, reqId: string, scope: Scope, waitSeconds?: number) => {
  const answer = await transport.call('GET', `?req_id=${encodeURIComponent(reqId)}`, undefined, scope, {
    waitSeconds,
  });
  return {
    body: toPollBody(answer.status, answer.body),
    retryAfterMs: answer.retryAfterMs,
    held: waitSeconds !== undefined && answer.waitApplied,
  };
};

/** However a service answers held polls, this client sends at most one a second (a proxy that caches, say). */
const minHeldPollMs = 1_000;

/**
 * The polling loop: poll; if the request is not completed, wait and poll again. Each poll is a long poll
 * (`Prefer: wait=N`, `settings.pollWaitSeconds`, never past the scope's deadline) that the service holds until the
 * request is done or `N` seconds passed: a held poll answered `queued` is followed at once by the next. A poll the
 * service did not hold (one that ignores `Prefer`, or that had no place for it) is followed as the specification
 * says: after the server's `Retry-After` when the answer carries one (queued answers do), else `pollIntervalMs` (5 s);
 * `firstUnheldPauseMs`, when given, replaces that wait after the first poll. The first poll goes out at once. The loop
 * ends with the completed body, an AirsError (404 once the request expired, 500 once it failed for good, after the
 * transport's retries), the abort reason, or the timeout error of the scope.
 */
export const pollUntilCompleted = async (
  transport: Transport,
  settings: Settings,
  reqId: string,
  scope: Scope,
  onPoll: ((info: PollInfo) => void) | undefined,
  firstUnheldPauseMs?: number,
): Promise<CompletedPoll> => {
  scope.reqId = reqId;
  for (;;) {
    const remainingMs = scope.remainingMs();
    const waitSeconds = Math.min(
      settings.pollWaitSeconds,
      remainingMs === undefined ? Number.POSITIVE_INFINITY : Math.floor(remainingMs / 1000),
    );
    const sentAt = settings.now();
    const { body, retryAfterMs, held } = await pollOnce(
      transport,
      reqId,
      scope,
      waitSeconds >= 1 ? waitSeconds : undefined,
    );
    scope.polls += 1;
    const completed = isCompleted(body);
    const nextPollInMs = completed
      ? undefined
      : held
        ? Math.max(0, minHeldPollMs - (settings.now() - sentAt))
        : scope.polls === 1 && firstUnheldPauseMs !== undefined
          ? firstUnheldPauseMs
          : (retryAfterMs ?? settings.pollIntervalMs);
    onPoll?.({ reqId, polls: scope.polls, elapsedMs: scope.elapsedMs(), body, nextPollInMs });
    if (completed) return body;
    if (nextPollInMs === undefined || nextPollInMs > 0) await scope.pause(nextPollInMs ?? settings.pollIntervalMs);
    else scope.check();
  }
};
