/** What a batch's deciding needed and did not find fetched, and the needs of one kind among many. */

/** Something a read needed that was not fetched yet. */
export type Need =
  | { readonly kind: 'request'; readonly id: string }
  | { readonly kind: 'account'; readonly id: string }
  | { readonly kind: 'key'; readonly id: string }
  | { readonly kind: 'session'; readonly id: string }
  | { readonly kind: 'email'; readonly id: string }
  | { readonly kind: 'credential'; readonly id: string }
  | { readonly kind: 'batch'; readonly id: string }
  | { readonly kind: 'file'; readonly id: string }
  /** An account's uploads whose reservation has not ended (domain/file/uploads.ts). */
  | { readonly kind: 'uploads'; readonly id: string }
  | { readonly kind: 'idempotency'; readonly accountId: string; readonly key: string }
  | { readonly kind: 'sessionsOf'; readonly id: string }
  | { readonly kind: 'queuedCount'; readonly id: string }
  | { readonly kind: 'processingCount'; readonly id: string }
  /** An account's counter (domain/accountCounters.ts). */
  | { readonly kind: 'accountCount'; readonly id: string }
  /** Every model's count of requests being processed (a row per model: what a claim reads). */
  | { readonly kind: 'processingCounts' }
  | { readonly kind: 'anyWaiting' }
  | { readonly kind: 'lapsed'; readonly now: number; readonly limit: number }
  /** Dispatch lanes (an account's own, or its batch lane: domain/batch/lines.ts) with waiting requests after `after`
   * ('' : from the first), up to `limit` of them, and the first `entries` waiting requests of each (with their states
   * and their accounts' views). */
  | { readonly kind: 'accountsAfter'; readonly after: string; readonly limit: number; readonly entries: number }
  /** A lane's first `limit` waiting requests (with their states). */
  | { readonly kind: 'queuedOf'; readonly id: string; readonly limit: number }
  | { readonly kind: 'webhookEndpoint'; readonly id: string }
  /** A delivery, with its endpoint (what a delivery command reads). */
  | { readonly kind: 'webhookDelivery'; readonly id: string }
  /** An account's endpoints that are not removed (with their views). */
  | { readonly kind: 'webhookEndpointsOf'; readonly id: string }
  /**
   * What the outbox reads when a request or batch (`id`) ends (domain/webhook/commands.ts, webhookDeliveriesFor): its
   * account's endpoints and, where it has some, the deliveries already made for the source's events (found by their
   * ids' prefix, deliveryPrefixOf). All such needs of a round are one statement.
   */
  | { readonly kind: 'outboxOf'; readonly source: 'request' | 'batch'; readonly id: string };

export const ofKind = <K extends Need['kind']>(needs: readonly Need[], kind: K) =>
  needs.filter((need): need is Extract<Need, { kind: K }> => need.kind === kind);

export const unique = (values: readonly string[]) => [...new Set(values)];
