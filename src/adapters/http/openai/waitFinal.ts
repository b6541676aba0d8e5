import type { Principal } from '../../../app/Auth.js';
import type { RequestsShape, RequestView } from '../../../app/Requests.js';
import type { NotFound } from '../../../domain/errors.js';

/**
 * How long one wait for an outcome lasts before the request is read again. `settled` itself looks every second for
 * what another process did (a cancel, an expiry); this only bounds one wait.
 */
const waitSliceMs = 60_000;

/**
 * Waits until the request is final (completed, failed, cancelled) or gone (expired) and answers its view: a waiting
 * create never answers a request that is still queued or in progress (contract 13). Answers `undefined` when `signal`
 * aborts first (the caller went away).
 */
export const waitUntilFinal = async (
  requests: RequestsShape,
  principal: Principal,
  reqId: string,
  signal: AbortSignal,
): Promise<RequestView | NotFound | undefined> => {
  for (;;) {
    const view = await requests.find(principal, reqId);
    if (!('status' in view) || view.status !== 'queued') return view;
    if (signal.aborted) return undefined;
    await requests.settled(reqId, waitSliceMs, signal);
  }
};

/**
 * What to do when the caller of a waiting or streaming create goes away before its answer: cancel the request, which
 * nobody will read (it was not a background request). Not while the server is stopping: then the connection closed
 * with the server, not by the caller, and the request survives the restart like any other. Runs at most once.
 */
export const cancelWhenCallerLeaves = (
  requests: RequestsShape,
  accepting: () => boolean,
  principal: Principal,
  reqId: string,
): (() => Promise<void>) => {
  let done = false;
  return async () => {
    if (done || !accepting()) return;
    done = true;
    // Refused when the request is final already, and a store fault is answered to whoever calls next: nothing to say
    // to a caller that is gone.
    await requests.cancel(principal, reqId).catch(() => undefined);
  };
};
