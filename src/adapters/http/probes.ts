import type { H3 } from 'h3';
import type { UpstreamSeen } from '../../app/upstreamStates.js';
import { Unavailable } from '../../domain/errors.js';
import { answer, errorResponse, jsonHeaders } from './errorResponse.js';

export type ProbeDeps = {
  /** False while draining (and before the app is up). */
  readonly accepting: () => boolean;
  /** What keeps the service from taking work, if anything (the data directory's disk: StorageHealth). */
  readonly problem: () => string | undefined;
  /** Each model's upstream as last seen: shown by `/readyz`, never a reason to be unready. */
  readonly upstreams?: (() => Readonly<Record<string, UpstreamSeen>>) | undefined;
};

const ok = (status: string, details: object = {}) =>
  answer(200, JSON.stringify({ status, ...details }), { ...jsonHeaders, 'Cache-Control': 'no-store' });

/**
 * Probes for an orchestrator (product contract, section 10): no key, no rate limit, nothing logged, and not counted
 * as traffic by a draining server (a probe every second must not keep it from stopping). `/healthz`: the process
 * runs. `/readyz`: it takes work now: the log is open, the workers run, it is not stopping, and its disk takes writes;
 * its answer also says how each model's upstream was last seen (`upstreams`).
 */
export const mountProbes = (app: H3, deps: ProbeDeps) => {
  app.get('/healthz', () => ok('ok'));
  app.get('/readyz', () => {
    const reason = deps.accepting() ? deps.problem() : 'the server is stopping';
    if (reason !== undefined)
      return errorResponse(new Unavailable({ message: `not ready: ${reason}`, retryAfterSeconds: 5 }), {
        'Cache-Control': 'no-store',
      });
    // An upstream that is down does not make the server unready: its requests wait and are retried. Told only where
    // there are upstreams (`openai` models): a server of `echo` models answers as it always did.
    const upstreams = deps.upstreams?.() ?? {};
    return ok('ready', Object.keys(upstreams).length === 0 ? {} : { upstreams });
  });
};
