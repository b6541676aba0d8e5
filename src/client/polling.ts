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

/** One `GET /v1/ai?req_id=…` (with the transport's retries), and the server's advice on when to ask again. */
export const pollOnce = async (transport: Transport, reqId: string, scope: Scope) => {
  const answer = await transport.call('GET', `?req_id=${encodeURIComponent(reqId)}`, undefined, scope);
  return { body: toPollBody(answer.status, answer.body), retryAfterMs: answer.retryAfterMs };
};

/**
 * The specification's polling loop: poll; if the request is not completed, wait and poll again. The wait is the
 * server's `Retry-After` when the answer carries one (queued answers do), else `pollIntervalMs` (5 s). The first
 * poll goes out at once. The loop ends with the completed body, an AirsError (404 once the request expired, 500
 * once it failed for good, after the transport's retries), the abort reason, or the timeout error of the scope.
 */
export const pollUntilCompleted = async (
  transport: Transport,
  settings: Settings,
  reqId: string,
  scope: Scope,
  onPoll: ((info: PollInfo) => void) | undefined,
): Promise<CompletedPoll> => {
  scope.reqId = reqId;
  for (;;) {
    const { body, retryAfterMs } = await pollOnce(transport, reqId, scope);
    scope.polls += 1;
    const completed = isCompleted(body);
    const nextPollInMs = completed ? undefined : (retryAfterMs ?? settings.pollIntervalMs);
    onPoll?.({ reqId, polls: scope.polls, elapsedMs: scope.elapsedMs(), body, nextPollInMs });
    if (completed) return body;
    await scope.pause(nextPollInMs ?? settings.pollIntervalMs);
  }
};
