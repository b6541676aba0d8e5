import type { BatchEndpointsShape } from '../../../app/batches/BatchEndpoints.js';
import { failedMessage } from '../../../app/upstreamProblems.js';
import { InvalidRequest } from '../../../domain/errors.js';
import { batchEndpointPaths } from './batches/bodies.js';
import { chatCompletionOf } from './chat/completion.js';
import { parseChatCreate } from './chat/request.js';
import { parseResponsesCreate } from './input.js';
import { failureOf, responseObjectOf } from './responseObject.js';

/**
 * The two routes a batch's lines may be for, as the OpenAI face owns them: each line's body goes through the route's
 * own parser (so a line is refused exactly as the route would refuse it), and a completed line is answered with the
 * route's object.
 */
export const batchEndpoints: BatchEndpointsShape = {
  endpoints: batchEndpointPaths,
  check: (endpoint, body, passThroughOf) => {
    if (endpoint === '/v1/chat/completions') {
      const parsed = parseChatCreate(body, passThroughOf);
      return parsed instanceof InvalidRequest ? parsed : parsed.input;
    }
    // No earlier Response can be named from a batch: item references are refused.
    const parsed = parseResponsesCreate(body, undefined, passThroughOf);
    return parsed instanceof InvalidRequest ? parsed : parsed.input;
  },
  answer: (endpoint, view) => (endpoint === '/v1/chat/completions' ? chatCompletionOf(view) : responseObjectOf(view)),
  failure: (endpoint, view) => {
    const reqId = view.state.context.reqId;
    const said = view.state.context.failureSaid;
    if (endpoint === '/v1/responses') return { error: failureOf(reqId, said) };
    return {
      error: {
        message: failedMessage(reqId, said, ' after its retries'),
        type: 'server_error',
        param: null,
        code: 'processing_failed',
      },
    };
  },
};
