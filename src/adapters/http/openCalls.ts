import { limitsOf, type Principal } from '../../app/Auth.js';
import { RateLimited, Unavailable } from '../../domain/errors.js';
import type { PlanTable } from '../../domain/plans.js';

/*
 * Open calls (contract 18): every long-lived call (a stream of either OpenAI API, a retrieve stream, a create that
 * waits for its answer, any long poll) holds a place for its whole life, in two counters: its account's, bounded by
 * `plans.<plan>.maxOpenCalls`, and the process's, bounded by `http.maxLongCallsShare` of `http.maxConnections`.
 *
 * Both are per server process, by design: what they protect is this process's sockets and memory (a held stream is a
 * connection, a socket's buffers and a listener on the request), not a tenant's fair share of the cluster. Several
 * processes or nodes each bound their own, as `http.maxConnections` does.
 */

/** Why a long-lived call was refused: its account holds its plan's `maxOpenCalls`, or the process its share. */
export type OpenCallRefusal = 'account_limit' | 'process_share';

/** A place held by one long-lived call. */
export interface OpenCall {
  /**
   * The call answered: gives the place back, unless the answer is a stream that took it (`streamed`), which gives it
   * back when it ends. Meant for the route's `finally`, whatever the route did.
   */
  answered(): void;
  /** The answer is a stream: from now on the place is given back by the function returned, when the stream ends. */
  streamed(): () => void;
}

export interface OpenCallsShape {
  /** Takes a place for `principal`'s long-lived call, or says why not (`429` for its account, `503` for the process). */
  take(principal: Principal): OpenCall | RateLimited | Unavailable;
  /** Long-lived calls held now, all accounts. */
  held(): number;
  /** Long-lived calls held now by one account. */
  heldBy(accountId: string): number;
  /** The most long-lived calls the process holds at once. */
  readonly maxLongCalls: number;
  /** Refusals since the start, by reason (for `/metrics`). */
  refused(reason: OpenCallRefusal): number;
}

export type OpenCallLimits = {
  readonly plans: PlanTable;
  readonly maxConnections: number;
  readonly maxLongCallsShare: number;
  /** The `Retry-After` of a refusal (s): nobody knows when a stream ends; the service's poll advice is a fair wait. */
  readonly retryAfterSeconds: number;
};

/** `floor(share × maxConnections)`, at least 1. */
export const maxLongCallsOf = (limits: Pick<OpenCallLimits, 'maxConnections' | 'maxLongCallsShare'>): number =>
  Math.max(1, Math.floor(limits.maxLongCallsShare * limits.maxConnections));

export const createOpenCalls = (limits: OpenCallLimits): OpenCallsShape => {
  const maxLongCalls = maxLongCallsOf(limits);
  /** Places held by account; an account holding none has no entry, so the map is as large as the accounts holding. */
  const byAccount = new Map<string, number>();
  let total = 0;
  const refusals: Record<OpenCallRefusal, number> = { account_limit: 0, process_share: 0 };
  const { retryAfterSeconds } = limits;

  const accountRefusal = (principal: Principal, max: number) =>
    new RateLimited({
      message:
        `this account already holds ${max} open calls (streams and waiting calls), ${whose(principal)} maxOpenCalls; ` +
        `wait for one to end, or poll (GET) instead of holding a connection; retry after ${retryAfterSeconds} s`,
      retryAfterSeconds,
      budget: 'open_calls',
    });
  const processRefusal = () =>
    new Unavailable({
      message:
        `this server holds ${maxLongCalls} long-lived calls (streams and waiting calls), its share of its connections ` +
        `(http.maxLongCallsShare); submit with background or poll instead, or retry after ${retryAfterSeconds} s`,
      retryAfterSeconds,
    });

  const whose = (principal: Principal) =>
    principal.limits?.own.includes('maxOpenCalls') ? "the account's own" : `the ${principal.plan} plan's`;
  const take = (principal: Principal): OpenCall | RateLimited | Unavailable => {
    const { accountId } = principal;
    const max = limitsOf(limits.plans, principal).maxOpenCalls;
    const mine = byAccount.get(accountId) ?? 0;
    if (mine >= max) {
      refusals.account_limit++;
      return accountRefusal(principal, max);
    }
    if (total >= maxLongCalls) {
      refusals.process_share++;
      return processRefusal();
    }
    byAccount.set(accountId, mine + 1);
    total++;
    let state: 'held' | 'streaming' | 'released' = 'held';
    // Given back exactly once, whichever way the call ends (and however many of them report it).
    const release = () => {
      if (state === 'released') return;
      state = 'released';
      total--;
      const left = (byAccount.get(accountId) ?? 1) - 1;
      if (left === 0) byAccount.delete(accountId);
      else byAccount.set(accountId, left);
    };
    return {
      answered: () => {
        if (state === 'held') release();
      },
      streamed: () => {
        if (state === 'held') state = 'streaming';
        return release;
      },
    };
  };

  return {
    take,
    held: () => total,
    heldBy: (accountId) => byAccount.get(accountId) ?? 0,
    maxLongCalls,
    refused: (reason) => refusals[reason],
  };
};
