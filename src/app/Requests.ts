import { Context, Effect, Layer } from 'effect';
import { isRefusal } from '../domain/commands.js';
import { InvalidRequest, NotFound, ProcessingFailed, Unavailable } from '../domain/errors.js';
import { fitsIdBound, idForMessage, lifetimeInWords } from '../domain/identifiers.js';
import { publicStatus } from '../domain/request/publicStatus.js';
import { AppClock } from '../ports/Clock.js';
import { Ids } from '../ports/Ids.js';
import { Store } from '../ports/Store.js';
import { AppConfig } from './AppConfig.js';
import type { Principal } from './Auth.js';
import { Committer } from './Committer.js';
import { Models } from './Models.js';
import { Processor } from './Processor.js';
import { parseSubmission } from './submission.js';

/** The POST answer, with the specification's field names. */
export type Accepted = { readonly request_id: string; readonly model: string };

/** The GET answer, with the specification's field names. */
export type PollAnswer =
  | { readonly req_id: string; readonly status: 'queued'; readonly model: string }
  | { readonly req_id: string; readonly status: 'completed'; readonly model: string; readonly response: string };

export interface RequestsShape {
  /** Validates and queues a request; resolves only once its `RequestQueued` event is durable on disk. */
  submit(principal: Principal, body: unknown): Promise<Accepted | InvalidRequest | Unavailable>;
  /** What the principal's account may see of a request. Another account's request is answered as unknown. */
  poll(principal: Principal, reqId: string | undefined): PollAnswer | InvalidRequest | NotFound | ProcessingFailed;
}

export class Requests extends Context.Service<Requests, RequestsShape>()('airs/Requests') {}

/**
 * Submit and poll. Both run on every API call, so they are plain functions (a promise, a value) rather than Effects:
 * the service is still built and wired as an Effect layer (see docs/decisions.md).
 */
export const RequestsLayer = Layer.effect(
  Requests,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const store = yield* Store;
    const clock = yield* AppClock;
    const ids = yield* Ids;
    const models = yield* Models;
    const processor = yield* Processor;
    const committer = yield* Committer;
    const ttlMs = config.requestTtlSeconds * 1000;
    const rules = { modelIds: models.ids(), maxPromptChars: config.maxPromptChars };
    const lifetime = lifetimeInWords(config.requestTtlSeconds);
    const notFound = (reqId: string) =>
      new NotFound({
        message: `no request ${idForMessage(reqId)}; it may never have existed or it expired (requests live ${lifetime})`,
      });

    const submit: RequestsShape['submit'] = async (principal, body) => {
      const submission = parseSubmission(body, rules);
      if (submission instanceof InvalidRequest) return submission;
      const { model, prompt } = submission;
      const reqId = ids.requestId();
      // A free worker and an empty queue: the request is queued and started in one write, and worked on at once.
      const claimed = processor.claim(reqId, model);
      let startedNow = false;
      try {
        const outcome = await committer.send(
          {
            type: 'Submit',
            reqId,
            accountId: principal.accountId,
            keyId: principal.keyId,
            model,
            promptChars: prompt.length,
            prompt,
            ttlMs,
            now: clock.now(),
            startNow: claimed,
          },
          { fromApi: true },
        );
        if (outcome instanceof Unavailable) return outcome;
        // A fresh random id cannot already exist; if it somehow did, that is a fault, not the caller's error.
        if (isRefusal(outcome)) throw outcome;
        startedNow = claimed && outcome.events.some((event) => event.type === 'RequestProcessingStarted');
      } finally {
        if (startedNow) processor.started(reqId, model, prompt);
        else if (claimed) processor.release(reqId, model);
        else processor.enqueued();
      }
      return { request_id: reqId, model };
    };

    const poll: RequestsShape['poll'] = (principal, reqId) => {
      if (reqId === undefined || reqId === '')
        return new InvalidRequest({ message: 'query parameter req_id is required' });
      // An id longer than any airs makes names nothing, and must not reach the store as a key.
      if (!fitsIdBound(reqId)) return notFound(reqId);
      const stored = store.reads.requestWithText(reqId);
      const visible =
        stored !== undefined && stored.state.context.accountId === principal.accountId ? stored : undefined;
      const status = publicStatus(visible?.state, clock.now());
      if (visible === undefined || status === 'unknown' || status === 'expired') return notFound(reqId);
      const { model } = visible.state.context;
      if (status === 'failed') {
        return new ProcessingFailed({ message: `processing of request ${reqId} failed; submit it again` });
      }
      if (status === 'queued') return { req_id: reqId, status: 'queued', model };
      return { req_id: reqId, status: 'completed', model, response: visible.text ?? '' };
    };

    return Requests.of({ submit, poll });
  }),
);
