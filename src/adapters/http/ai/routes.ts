import type { H3, H3Event } from 'h3';
import type { Principal } from '../../../app/Auth.js';
import { HttpRoute } from '../../../app/Metrics.js';
import type { RequestsShape } from '../../../app/Requests.js';
import { type ApiError, InvalidRequest, MethodNotAllowed } from '../../../domain/errors.js';
import { noteAccess } from '../accessNote.js';
import type { Admit } from '../admit.js';
import { isApiError } from '../errorResponse.js';
import type { Guard } from '../guard.js';
import { idempotencyKeyOf } from '../idempotencyKey.js';
import { json } from '../jsonAnswer.js';
import type { OpenCallsShape } from '../openCalls.js';
import { preferredWaitSeconds } from '../preferWait.js';
import type { HeaderBag } from '../route.js';
import { acceptedBody, pollBody } from './wire.js';

export type AiDeps = {
  readonly requests: RequestsShape;
  readonly admit: Admit;
  readonly guard: Guard;
  readonly readJsonBody: (event: H3Event) => Promise<unknown | ApiError>;
  readonly pollIntervalSeconds: number;
  /** The places of long-lived calls (contract 18): a held poll takes one. */
  readonly openCalls: OpenCallsShape;
  /** The longest `Prefer: wait` a poll is held for (`http.maxPollWaitSeconds`); 0 or absent: polls answer at once. */
  readonly maxPollWaitSeconds?: number | undefined;
  /** Aborts when the server starts to stop: held polls then answer at once, so that the drain is not held up. */
  readonly stopping?: AbortSignal | undefined;
};

const aiPath = '/v1/ai';
const aiMethods = ['GET', 'POST'] as const;

/**
 * airs's own face: `POST /v1/ai` is the submit command, `GET /v1/ai` the poll query. Every call goes through the
 * same steps in the contract's order: auth, then rate limit, then input, then lookup; every failure leaves as the
 * contract's error shape through one table (errorResponse.ts).
 */
export const mountAi = (app: H3, deps: AiDeps) => {
  const { admit, guard } = deps;

  /**
   * Reads the body and hands it to the submit. The parsed body lives only in this call, which returns as soon as the
   * submit has taken what it keeps (the prompt, the body's hash): a caller awaiting the commit must not hold it, since
   * V8 keeps an async function's locals alive across an await whether or not they are used after it.
   */
  const readAndSubmit = async (event: H3Event, principal: Principal, key: string | undefined) => {
    const body = await deps.readJsonBody(event);
    if (isApiError(body)) return body;
    return deps.requests.submit(principal, body, {
      idempotency: key === undefined ? undefined : { key, fingerprint: ['ai', body] },
      cancelAfter: event.req.headers.get('cancel-after'),
    });
  };

  const submit = async (event: H3Event, headers: HeaderBag): Promise<Response | ApiError> => {
    const principal = await admit(event, 'submits', headers, deps.requests.refusesQueuing);
    if (isApiError(principal)) return principal;
    const key = idempotencyKeyOf(event.req.headers.get('idempotency-key'));
    if (isApiError(key)) return key;
    const accepted = await readAndSubmit(event, principal, key);
    if (isApiError(accepted)) return accepted;
    noteAccess(event, { reqId: accepted.reqId, model: accepted.model });
    headers.Location = `${aiPath}?req_id=${accepted.reqId}`;
    if (accepted.replayed) headers['Idempotent-Replayed'] = 'true';
    return json(202, acceptedBody(accepted), headers);
  };

  const maxPollWaitSeconds = deps.maxPollWaitSeconds ?? 0;
  /**
   * The ends of the polls held now, called when the server stops: one listener on `stopping` for all of them (a
   * listener each would pass Node's warning threshold for an event target at the eleventh).
   */
  const heldPolls = new Set<() => void>();
  deps.stopping?.addEventListener(
    'abort',
    () => {
      for (const end of [...heldPolls]) end();
    },
    { once: true },
  );
  /** The seconds a poll asks to be held (`Prefer: wait=N`), capped at the server's bound; 0: answer at once. */
  const pollWaitOf = (event: H3Event): number =>
    maxPollWaitSeconds === 0
      ? 0
      : Math.min(preferredWaitSeconds(event.req.headers.get('prefer')) ?? 0, maxPollWaitSeconds);

  /**
   * A long poll: holds the call until the request is no longer queued, `seconds` pass, the caller goes away or the
   * server starts to stop; woken by what wakes a waiting create (this process's outcomes, other writers' changes),
   * never by reading the store in a loop. Only the account's own queued request is waited for (another's answers 404
   * at once, as before), and only while the call holds a place among the open calls (contract 18): where it gets none,
   * the poll answers at once as a plain poll would. Says whether the answer is the wait's ('applied': the request is
   * final, at once if it already was, or the N seconds passed), cut short by the server stopping ('stopping'), not
   * waited for ('not held'), or not to be given, the caller having left ('gone').
   */
  const holdPoll = async (
    principal: Principal,
    reqId: string,
    seconds: number,
    connection: AbortSignal,
  ): Promise<'applied' | 'not held' | 'stopping' | 'gone'> => {
    const view = await deps.requests.find(principal, reqId);
    if (!('status' in view)) return 'not held';
    if (view.status !== 'queued') return 'applied';
    const place = deps.openCalls.take(principal);
    if (isApiError(place)) return 'not held';
    // One signal for both ends of the wait: the connection's, and the server's stop (through `heldPolls`).
    const ended = new AbortController();
    const end = () => ended.abort();
    connection.addEventListener('abort', end, { once: true });
    heldPolls.add(end);
    try {
      if (connection.aborted || deps.stopping?.aborted === true) end();
      await deps.requests.settled(reqId, seconds * 1_000, ended.signal);
      return connection.aborted ? 'gone' : deps.stopping?.aborted === true ? 'stopping' : 'applied';
    } finally {
      connection.removeEventListener('abort', end);
      heldPolls.delete(end);
      place.answered();
    }
  };

  const poll = async (event: H3Event, headers: HeaderBag): Promise<Response | ApiError> => {
    const principal = await admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const reqId = event.url.searchParams.get('req_id') ?? undefined;
    const waitSeconds = pollWaitOf(event);
    if (waitSeconds > 0 && reqId !== undefined && reqId !== '') {
      // One poll of the budget was spent above, however long the call is held.
      const held = await holdPoll(principal, reqId, waitSeconds, event.req.signal);
      // Nobody reads this answer: the caller is gone (and the store is not read for it).
      if (held === 'gone') return new InvalidRequest({ message: 'the caller went away' });
      if (held === 'applied') headers['Preference-Applied'] = `wait=${waitSeconds}`;
      // A stopping server answers what it has and closes the connection: the next poll goes to a server that runs.
      if (held === 'stopping') headers.Connection = 'close';
    }
    const view = await deps.requests.poll(principal, reqId);
    if (isApiError(view)) return view;
    noteAccess(event, { reqId: view.state.context.reqId, model: view.state.context.model });
    if (view.status === 'queued') headers['Retry-After'] = String(deps.pollIntervalSeconds);
    return json(200, pollBody(view), headers);
  };

  const routes = new Map<string, ReturnType<Guard>>([
    ['GET', guard(poll, HttpRoute.poll)],
    ['POST', guard(submit, HttpRoute.submit)],
  ]);
  // Counted apart from the plain polls, whose latency they would swamp (a poll without `Prefer` costs one lookup).
  const longPoll = guard(poll, HttpRoute.longPoll);
  const routeOf = (event: H3Event) =>
    event.req.method === 'GET' && pollWaitOf(event) > 0 ? longPoll : routes.get(event.req.method);
  const wrongMethod = guard(
    async (event) =>
      new MethodNotAllowed({
        message: `${event.req.method} is not allowed on ${aiPath}; use GET or POST`,
        allow: aiMethods,
      }),
    HttpRoute.other,
  );
  app.all(aiPath, (event) => (routeOf(event) ?? wrongMethod)(event));
};
