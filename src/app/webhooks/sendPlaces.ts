import { answersDeliveries, receivesDeliveries, type WebhookEndpointState } from '../../domain/webhook/endpoint.js';

/**
 * The places of one process's webhook sender (issue 40): which due delivery may start a post now. The rule:
 * - at most `maxInFlight` posts at once in all, `perAccount` to one account's endpoints;
 * - an endpoint that answers (its last attempt was delivered, in under `slowAnswerMs`) holds up to `perEndpoint`;
 * - any other endpoint (new, failing, timing out, slow) holds one, and such endpoints together hold at most half of
 *   `maxInFlight`.
 * So the other half is always there for endpoints that answer, however many hang: a hanging receiver costs one place
 * per endpoint for at most the post's bound (10 s), and the endpoints that answer take the rest in turn. The places
 * are this process's (it bounds its own sockets); what must hold across processes is the store's (attempt leases).
 */
export type PlaceBounds = {
  readonly maxInFlight: number;
  readonly perEndpoint: number;
  readonly perAccount: number;
};

/** How long what this process last learned of an endpoint is trusted to pass it over unread (another process may
 * have delivered to it since): about one post's bound, so a passed-over endpoint is read again that often at most. */
export const standingTrustedMs = 10_000;

/** A delivered attempt slower than this (half the post's 10 s bound) leaves its endpoint on one place, as a failed
 * one does. */
export const slowAnswerMs = 5_000;

/** Endpoints whose account and standing this process remembers at most (the longest unseen forgotten first). */
export const rememberedEndpoints = 10_000;

/**
 * How a delivery holds its place: for an endpoint that answers, for one that does not (yet), or only while it is given
 * up (its endpoint removed or disabled: no post, a write of a few milliseconds, bounded by `maxInFlight` alone).
 */
export type PlaceKind = 'answering' | 'unanswered' | 'givingUp';

export type Claim = {
  readonly deliveryId: string;
  readonly endpointId: string;
  readonly accountId: string;
  readonly kind: PlaceKind;
};

type Standing = {
  readonly accountId: string;
  readonly receives: boolean;
  /** As the store last told: its last attempt was delivered (any process's). */
  readonly answered: boolean;
  /** As this process saw its last attempt: slower than `slowAnswerMs`. */
  readonly slow: boolean;
  /** When it was learned (`now()`). */
  readonly at: number;
};

const kindOf = (standing: Standing): PlaceKind =>
  !standing.receives ? 'givingUp' : standing.answered && !standing.slow ? 'answering' : 'unanswered';

const bump = (counts: Map<string, number>, key: string, by: number) => {
  const count = (counts.get(key) ?? 0) + by;
  if (count <= 0) counts.delete(key);
  else counts.set(key, count);
};

export const createSendPlaces = (bounds: PlaceBounds, now: () => number) => {
  const unansweredPlaces = Math.max(1, Math.floor(bounds.maxInFlight / 2));
  const held = new Map<string, Claim>();
  const byEndpoint = new Map<string, number>();
  const byAccount = new Map<string, number>();
  let unanswered = 0;
  const standings = new Map<string, Standing>();

  const remember = (endpointId: string, standing: Standing) => {
    standings.delete(endpointId);
    standings.set(endpointId, standing);
    if (standings.size > rememberedEndpoints) standings.delete(standings.keys().next().value as string);
  };

  /** Room for one more post of `kind` to this endpoint of this account. */
  const hasRoom = (endpointId: string, accountId: string, kind: PlaceKind): boolean => {
    if (held.size >= bounds.maxInFlight) return false;
    if (kind === 'givingUp') return true;
    if ((byAccount.get(accountId) ?? 0) >= bounds.perAccount) return false;
    if (kind === 'unanswered' && unanswered >= unansweredPlaces) return false;
    return (byEndpoint.get(endpointId) ?? 0) < (kind === 'answering' ? bounds.perEndpoint : 1);
  };

  return {
    size: () => held.size,
    has: (deliveryId: string) => held.has(deliveryId),

    /** The claim a due delivery makes, its endpoint as just read (remembered for `passOver`). */
    claimFor: (due: { deliveryId: string; endpointId: string }, endpoint: WebhookEndpointState | undefined): Claim => {
      if (endpoint === undefined) return { ...due, accountId: '', kind: 'givingUp' };
      const standing: Standing = {
        accountId: endpoint.accountId,
        receives: receivesDeliveries(endpoint),
        answered: answersDeliveries(endpoint),
        slow: standings.get(due.endpointId)?.slow ?? false,
        at: now(),
      };
      remember(due.endpointId, standing);
      return { ...due, accountId: standing.accountId, kind: kindOf(standing) };
    },

    /** Takes the claim's place if the rule leaves room for it; false (and nothing taken) otherwise. */
    take: (claim: Claim): boolean => {
      if (held.has(claim.deliveryId) || !hasRoom(claim.endpointId, claim.accountId, claim.kind)) return false;
      held.set(claim.deliveryId, claim);
      if (claim.kind === 'givingUp') return true;
      bump(byEndpoint, claim.endpointId, 1);
      bump(byAccount, claim.accountId, 1);
      if (claim.kind === 'unanswered') unanswered++;
      return true;
    },

    release: (deliveryId: string) => {
      const claim = held.get(deliveryId);
      if (claim === undefined) return;
      held.delete(deliveryId);
      if (claim.kind === 'givingUp') return;
      bump(byEndpoint, claim.endpointId, -1);
      bump(byAccount, claim.accountId, -1);
      if (claim.kind === 'unanswered') unanswered--;
    },

    /** How an attempt's post ended, as its record will tell the store; a slow answer (or none in time) costs the
     * endpoint its extra places here. */
    heard: (endpointId: string, post: { readonly delivered: boolean; readonly latencyMs: number }) => {
      const standing = standings.get(endpointId);
      if (standing === undefined) return;
      remember(endpointId, { ...standing, answered: post.delivered, slow: post.latencyMs >= slowAnswerMs, at: now() });
    },

    /**
     * Whether an endpoint can take nothing now, by what this process knows of it (an endpoint it knows nothing of
     * is read): the due read passes such endpoints over, so that however many are full, it reaches the others.
     */
    passOver: (endpointId: string): boolean => {
      const standing = standings.get(endpointId);
      if (standing === undefined || now() - standing.at > standingTrustedMs)
        return !hasRoom(endpointId, standing?.accountId ?? '', 'answering');
      return !hasRoom(endpointId, standing.accountId, kindOf(standing));
    },
  };
};

export type SendPlaces = ReturnType<typeof createSendPlaces>;
