import * as Context from 'effect/Context';
import type { InvalidRequest } from '../../domain/errors.js';
import type { PassThroughOf } from '../../modelPassThrough.js';
import type { RequestView, SubmitInput } from '../Requests.js';

/**
 * What a batch needs of the routes its lines are for (`/v1/chat/completions`, `/v1/responses`), given by the HTTP
 * face that owns their wire: a line's body checked by the very code its route runs, and a completed line's answer
 * as the route would give it (a `chat.completion`, a Response).
 */
export interface BatchEndpointsShape {
  /** The endpoints a batch may name. */
  readonly endpoints: readonly string[];
  /**
   * A line's body as its route understands it, with the fields its model passes through (model and sizes are checked
   * after, as for any submit).
   */
  check(endpoint: string, body: unknown, passThroughOf?: PassThroughOf): SubmitInput | InvalidRequest;
  /** The route's answer for a completed line. */
  answer(endpoint: string, view: RequestView): unknown;
  /** The route's error body for a line that failed for good. */
  failure(endpoint: string, view: RequestView): unknown;
}

export class BatchEndpoints extends Context.Service<BatchEndpoints, BatchEndpointsShape>()('airs/BatchEndpoints') {}
