import type { H3Event } from 'h3';
import type { Principal } from '../../../../app/Auth.js';
import { createLiveOutput, type LiveOutputShape } from '../../../../app/LiveOutput.js';
import type { BudgetName } from '../../../../app/RateLimiter.js';
import type { RequestsShape, RequestView } from '../../../../app/Requests.js';
import { type ApiError, InvalidRequest, type NotFound } from '../../../../domain/errors.js';
import type { PassThroughOf } from '../../../../modelPassThrough.js';
import { noteAccess } from '../../accessNote.js';
import { isApiError } from '../../errorResponse.js';
import { idempotencyKeyOf } from '../../idempotencyKey.js';
import type { OpenCall, OpenCallsShape } from '../../openCalls.js';
import type { HeaderBag } from '../../route.js';
import { cancelWhenCallerLeaves, waitUntilFinal } from '../waitFinal.js';
import { chatCompletionOf } from './completion.js';
import { parseChatCreate } from './request.js';
import { chatStream, endingErrorOf, stoppableFollower } from './stream.js';

/** What the chat route takes from the OpenAI face (routes.ts). */
export type ChatDeps = {
  readonly requests: RequestsShape;
  /** Text of attempts in flight, for streaming callers (none: every stream gets the text once completed). */
  readonly live?: LiveOutputShape | undefined;
  admit(event: H3Event, budget: BudgetName, headers: HeaderBag): Promise<Principal | ApiError>;
  readJsonBody(event: H3Event): Promise<unknown | ApiError>;
  json(status: number, body: unknown, headers: HeaderBag): Response;
  /** False while the server stops: a connection closed then was not closed by its caller. */
  accepting(): boolean;
  /** How long a stream may stay silent before a keep-alive comment (contract 13: at most 15 s). */
  readonly keepAliveMs: number;
  /** The places of long-lived calls, per account and for the process (contract 18). */
  readonly openCalls: OpenCallsShape;
  /** The fields each model passes through (none: every unknown field is refused). */
  readonly passThroughOf?: PassThroughOf | undefined;
};

/** The service names a conversation's size `input`; chat completions call it `messages`. */
const inChatTerms = (error: ApiError): ApiError => {
  if (!(error instanceof InvalidRequest) || error.details === undefined) return error;
  const { details } = error;
  if (details.max_prompt_chars === undefined && details.max_prompt_bytes === undefined) return error;
  return new InvalidRequest({ message: error.message, details: { ...details, param: 'messages' } });
};

/**
 * `POST /v1/chat/completions` (contract 13): a request like any other (a submit's budget, the same queue, log and
 * limits as `/v1/ai`), answered as OpenAI's `chat.completion` once final, or streamed as `chat.completion.chunk`s.
 * The completion's id is the request's (`chatcmpl-X` is `req_X`); every answer after the submit carries
 * `x-request-id`. A caller that goes away before its answer cancels the request.
 */
export const chatCompletionsRoute = (deps: ChatDeps) => {
  const { requests } = deps;
  const live = deps.live ?? createLiveOutput();

  /**
   * Reads, checks and queues the body. The parsed body lives only in this call (see routes.ts, queueCreate): the
   * waiting caller holds the request's id, not its body.
   */
  const queueChat = async (event: H3Event, principal: Principal, key: string | undefined) => {
    const body = await deps.readJsonBody(event);
    if (isApiError(body)) return body;
    const parsed = parseChatCreate(body, deps.passThroughOf);
    if (parsed instanceof InvalidRequest) return parsed;
    // A streaming caller listens before the commit, so that an attempt started with the submit is heard whole.
    const listening = parsed.stream ? stoppableFollower(live) : undefined;
    return {
      stream: parsed.stream,
      includeUsage: parsed.includeUsage,
      listening,
      submitted: requests.submitInput(principal, parsed.input, {
        idempotency: key === undefined ? undefined : { key, fingerprint: ['chat', body] },
        beforeCommit: listening?.listen,
        cancelAfter: event.req.headers.get('cancel-after'),
      }),
    };
  };

  const answer = (view: RequestView | NotFound, headers: HeaderBag): Response | ApiError => {
    const error = endingErrorOf(view);
    if (error !== undefined) {
      // airs retried the request already: the SDKs' own retries would only make another that fails alike.
      headers['x-should-retry'] = 'false';
      return error;
    }
    return deps.json(200, chatCompletionOf(view as RequestView), headers);
  };

  /** A chat completion after its place was taken: queued, then streamed or waited for. */
  const complete = async (
    event: H3Event,
    principal: Principal,
    headers: HeaderBag,
    openCall: OpenCall,
  ): Promise<Response | ApiError> => {
    // Taken now: the connection is watched from here on (srvx makes the signal when it is first asked for).
    const { signal } = event.req;
    const key = idempotencyKeyOf(event.req.headers.get('idempotency-key'));
    if (isApiError(key)) return key;
    const queued = await queueChat(event, principal, key);
    if (isApiError(queued)) return inChatTerms(queued);
    const submitted = await queued.submitted;
    if (isApiError(submitted) || submitted.replayed) queued.listening?.stop();
    if (isApiError(submitted)) return inChatTerms(submitted);
    const reqId = submitted.reqId;
    noteAccess(event, { reqId, model: submitted.model });
    headers['x-request-id'] = reqId;
    if (submitted.replayed) headers['Idempotent-Replayed'] = 'true';
    const callerLeft = cancelWhenCallerLeaves(requests, deps.accepting, principal, reqId);
    if (queued.listening !== undefined)
      return chatStream({
        requests,
        principal,
        reqId,
        model: submitted.model,
        includeUsage: queued.includeUsage,
        follower: submitted.replayed ? stoppableFollower(live).follower : queued.listening.follower,
        signal,
        keepAliveMs: deps.keepAliveMs,
        callerLeft: () => void callerLeft(),
        headers,
        openCall,
      });
    const view = await waitUntilFinal(requests, principal, reqId, signal);
    if (view !== undefined) return answer(view, headers);
    await callerLeft();
    // Nobody reads this answer: the caller is gone.
    return new InvalidRequest({ message: `the caller went away; request ${reqId} was cancelled` });
  };

  return async (event: H3Event, headers: HeaderBag): Promise<Response | ApiError> => {
    const principal = await deps.admit(event, 'submits', headers);
    if (isApiError(principal)) return principal;
    // Every chat completion holds its connection (streamed, or waiting for its answer): its place is taken before its
    // body is read, so a refused one costs its submit and no more.
    const openCall = deps.openCalls.take(principal);
    if (isApiError(openCall)) return openCall;
    try {
      return await complete(event, principal, headers, openCall);
    } finally {
      // Given back now unless the answer is a stream, which gives it back when it ends.
      openCall.answered();
    }
  };
};
