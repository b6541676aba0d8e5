/**
 * What the dashboard pages show: plain data, filled by the routes. Times are epoch milliseconds (UTC); the pages
 * format them. Every string here is shown as text (escaped by the renderer), never as markup.
 */
import type { EffectiveLimits } from '../../../../domain/account/limits.js';
import type { BuiltInPlanName, PlanName } from '../../../../domain/plans.js';
import type { TokensUsed } from '../../../../domain/tokens/tokenBudget.js';

/** The signed-in account as every logged-in page needs it: who, and the CSRF token its forms carry. */
export type SessionView = { readonly csrf: string; readonly email: string };

export type SignupView = { readonly csrf: string; readonly email?: string; readonly error?: string };

export type LoginView = {
  readonly csrf: string;
  readonly email?: string;
  readonly error?: string;
  /** Set when logins for this email or address are throttled: how many minutes until the next try may work. */
  readonly throttledMinutes?: number;
};

export type PlanRow = {
  readonly maxKeys: number | null;
  readonly submitsPerMinute: number;
  readonly pollsPerMinute: number;
};

/** One rate-limit budget as it stands now. */
export type BudgetView = {
  readonly remaining: number;
  readonly limit: number;
  /** Seconds until the whole budget is available again (0 when it is). */
  readonly resetSeconds: number;
};

export type OverviewView = SessionView & {
  readonly plan: PlanName;
  /** The four built-in plans, in the order to show them. */
  readonly plans: Readonly<Record<BuiltInPlanName, PlanRow>>;
  /** The limits the account is held to: its plan's, overridden by its own (`own` names those). */
  readonly limits: EffectiveLimits;
  /** What the account has used of each token limit now (domain/tokens/tokenBudget.ts). */
  readonly tokensUsed: TokensUsed;
  readonly keysUsed: number;
  /** The account's plan's key limit; `null` is unlimited. */
  readonly maxKeys: number | null;
  readonly rate: { readonly submits: BudgetView; readonly polls: BudgetView };
  readonly requestsLast24h: number;
  /** Tokens of the account's completed requests per UTC day, oldest first, today last. */
  readonly tokensByDay: readonly {
    readonly day: number;
    readonly inputTokens: number;
    readonly outputTokens: number;
  }[];
};

export type KeyRow = {
  readonly id: string;
  readonly name?: string;
  /** The short display prefix stored for the key (e.g. `sk_AbCd`). */
  readonly prefix: string;
  readonly createdAt: number;
  readonly lastUsedAt?: number;
  /** When the key stops working (absent: never). */
  readonly expiresAt?: number;
};

export type KeysView = SessionView & {
  /** Active keys only (revoked ones are not listed). */
  readonly keys: readonly KeyRow[];
  readonly maxKeys: number | null;
  /** Only on the page that answers a creation: the full key, shown this once. */
  readonly newKey?: { readonly key: string; readonly name?: string };
  /** A refusal to show, such as the plan's key limit being reached. */
  readonly error?: string;
  /** Only on the page after a deletion: the key just deleted (its prefix and name, never the key). */
  readonly deleted?: { readonly prefix: string; readonly name?: string };
};

export const requestStatuses = ['queued', 'processing', 'completed', 'failed', 'expired', 'cancelled'] as const;
export type RequestStatusView = (typeof requestStatuses)[number];

export type RequestRow = {
  readonly id: string;
  readonly model: string;
  readonly status: RequestStatusView;
  readonly createdAt: number;
  readonly completedAt?: number;
  /** A batch's line: its batch (the row links there). */
  readonly batchId?: string;
};

/** Which requests the Requests page lists (`?show=`): those made one by one (the default, so that a batch's thousands
 * of lines do not bury them), its batches' lines, or all. */
export const requestsShown = ['interactive', 'batch', 'all'] as const;
export type RequestsShown = (typeof requestsShown)[number];

export type RequestsView = SessionView & {
  /** One page of requests; shown newest first whatever order they come in. */
  readonly requests: readonly RequestRow[];
  /** Which requests are listed; the pager's links keep it. */
  readonly show: RequestsShown;
  /** Where the next older page starts (`?before=…`), when there is one. */
  readonly olderCursor?: string;
  /** Where the next newer page starts (`?after=…`), when this is not the newest page. */
  readonly newerCursor?: string;
  /**
   * 24 counts, oldest first: `hourly[i]` counts the requests created in the UTC clock hour that starts
   * `23 - i` hours before the hour holding `now`; the last one is the current, unfinished hour.
   */
  readonly hourly: readonly number[];
  readonly now: number;
};

/** A text shown on a page, cut to a bound: `text` is its start, `totalChars` its whole length. */
export type ShownText = {
  readonly text: string;
  /** The whole text's length (NaN: not known, only its bytes were counted: a batch's line read in part). */
  readonly totalChars: number;
  /** A batch's line read from its input file: its size there, and where it is. */
  readonly totalBytes?: number;
  readonly line?: number;
  readonly file?: string;
};

/** One event of a request's history, as its page lists it. */
export type RequestEventRow = {
  readonly seq: number;
  readonly at: number;
  /** The event's name in the log (`RequestQueued`, ...). */
  readonly type: string;
  /** The attempt it belongs to, when it names one. */
  readonly attempt?: number;
  /** When a failed attempt is tried again. */
  readonly retryAt?: number;
  /** The request's state after it, as `airs replay` names it (`waiting`, `processing`, `completed`, ...). */
  readonly state: string;
  /** The upstream an attempt started on or moved to (and the one it moved from), the model it ran on when a fallback,
   * an answer's time to first token (ms). */
  readonly upstream?: string;
  readonly fromUpstream?: string;
  readonly servedBy?: string;
  readonly firstTokenMs?: number;
};

/** `GET /dashboard/requests/:id`: one of the account's own requests. */
export type RequestDetailView = SessionView & {
  readonly id: string;
  readonly model: string;
  readonly status: RequestStatusView;
  /** While it waits for a worker: how many due requests of its model go first (domain/queuePosition.ts). */
  readonly queuePosition?: number | undefined;
  /** What the request's input is: a prompt, a conversation (as JSON), or a batch's line (its JSON, read from the
   * batch's input file). */
  readonly input: 'prompt' | 'messages' | 'chat' | 'line';
  readonly promptChars: number;
  /** The input while the request is queued (the store keeps it only until the request settles). */
  readonly prompt?: ShownText;
  /** The answer once completed (until the request expires): its text, or the assistant message as JSON. */
  readonly answer?: ShownText;
  readonly responseChars?: number;
  readonly attempts: number;
  readonly maxAttempts?: number;
  /** Why it failed, in the words its caller was given (a failure no retry mends), never the log's cause. */
  readonly failureSaid?: string;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly finishReason?: string;
  readonly createdAt: number;
  readonly startedAt?: number;
  readonly completedAt?: number;
  readonly failedAt?: number;
  readonly cancelledAt?: number;
  readonly expiresAt: number;
  readonly expiredAt?: number;
  readonly batchId?: string;
  readonly customId?: string;
  /** The upstream its last attempt ran on, the model that ran it when not its own (a fallback), and its answer's time
   * to first token (ms), when known. */
  readonly upstream?: string;
  readonly servedBy?: string;
  readonly firstTokenMs?: number;
  /** Its events from the log, oldest first, and whether that list stops short of the whole history. */
  readonly events: readonly RequestEventRow[];
  readonly eventsCutShort: boolean;
};

/** One batch as the Batches page shows it (contract 16): its API status and counts, and its files, when written. */
export type BatchRow = {
  readonly id: string;
  /** The status OpenAI's clients see (`validating`, `in_progress`, `finalizing`, `completed`, ...). */
  readonly status: string;
  readonly endpoint: string;
  /** The one model its lines name, once validated (absent when they name several). */
  readonly model?: string;
  readonly createdAt: number;
  /** Lines in its input file (0 until validated), and those completed and failed so far. */
  readonly total: number;
  readonly completed: number;
  readonly failed: number;
  readonly outputFileId?: string;
  readonly errorFileId?: string;
  /** Tokens its completed lines read and wrote (the API's `usage`). */
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** The caller's metadata, in the order given (empty when none). */
  readonly metadata: Readonly<Record<string, string>>;
  /** When it ended (completed, failed, expired or cancelled); absent while it runs. */
  readonly endedAt?: number;
  /** Whether it has ended: a page showing one that has not refreshes itself. */
  readonly ended: boolean;
  /** Whether a cancel would stop it now (validating or in progress): the Cancel button is shown then. */
  readonly cancellable: boolean;
};

/** One batch's own page: all of its row, its input file and the times of its steps. */
export type BatchDetail = BatchRow & {
  readonly inputFileId: string;
  readonly inProgressAt?: number;
  readonly finalizingAt?: number;
  readonly cancellingAt?: number;
  readonly expiresAt?: number;
  /** Why validation or the batch failed, in the API's words (`errors.data[].message`). */
  readonly errors: readonly string[];
};

export type BatchPageView = SessionView & {
  readonly batch: BatchDetail;
  /** After a Cancel (`?cancelled=1`): a notice that the cancel was asked. */
  readonly cancelAsked?: boolean;
};

/** How often a page showing a batch not ended reloads itself (seconds). */
export const batchRefreshSeconds = 5;

export type BatchesView = SessionView & {
  /** One page of batches; shown newest first whatever order they come in. */
  readonly batches: readonly BatchRow[];
  /** Where the next older page starts (`?before=…`), when there is one. */
  readonly olderCursor?: string;
  /** Where the next newer page starts (`?after=…`), when this is not the newest page. */
  readonly newerCursor?: string;
};

export type ErrorView = {
  readonly status: 400 | 403 | 404 | 413 | 429 | 500 | 503;
  readonly title: string;
  readonly message: string;
  readonly loggedIn: boolean;
  /** When logged in and known, the page also offers the logout button (its form needs the token). */
  readonly csrf?: string;
  readonly email?: string;
};

/** One webhook endpoint as the Webhooks page lists it (never its secret). */
export type WebhookEndpointRow = {
  readonly id: string;
  readonly url: string;
  /** The event types it receives; empty: every type (also those added later). */
  readonly events: readonly string[];
  readonly status: 'enabled' | 'disabled';
  readonly createdAt: number;
  readonly lastDeliveredAt?: number;
  /** When it was disabled (after failing for 3 days). */
  readonly disabledAt?: number;
  /** When its current run of failed attempts began, while it is enabled (issue 42). */
  readonly failingSince?: number;
  /** Its deliveries not settled yet (counted to a bound: `truncated`), and when the next attempt is. */
  readonly backlog?: { readonly waiting: number; readonly truncated: boolean; readonly nextAttemptAt?: number };
};

/** `GET /dashboard/webhooks`, and the answers to its forms. */
export type WebhooksView = SessionView & {
  /** The account's endpoints that are not removed, oldest first. */
  readonly endpoints: readonly WebhookEndpointRow[];
  /** The plan's bound on endpoints. */
  readonly maxEndpoints: number;
  /** The event types an endpoint can receive, in the order to offer them. */
  readonly eventTypes: readonly string[];
  /** How long a delivery is retried before it gives up (`webhooks.retentionHours`). */
  readonly retentionHours: number;
  /** Only on the page that answers an add or a rotation: the signing secret, shown this once. */
  readonly newSecret?: {
    readonly endpointId: string;
    readonly url: string;
    readonly secret: string;
    readonly rotated: boolean;
  };
  /** A refusal to show, and what the add form held (so it need not be typed again). */
  readonly error?: string;
  readonly form?: { readonly url: string; readonly events: readonly string[] };
  /** Only on the page after a change made by a redirect: what was done to which endpoint. */
  readonly done?: { readonly what: 'removed' | 'enabled'; readonly url: string };
};

export const deliveryStatuses = ['waiting', 'sending', 'delivered', 'gave_up'] as const;
export type DeliveryStatusView = (typeof deliveryStatuses)[number];

/** One delivery of an endpoint's log. */
export type DeliveryRow = {
  /** `wh_…`, the `webhook-id` header of every attempt. */
  readonly id: string;
  readonly eventType: string;
  /** `data.id` of the event: `req_…`, `resp_…` or `batch_…`. */
  readonly dataId: string;
  /** Where the dashboard shows what it is about, when it has a page for it. */
  readonly dataHref?: string;
  readonly status: DeliveryStatusView;
  /** Why it gave up, in words. */
  readonly gaveUpReason?: string;
  readonly attempts: number;
  readonly lastAttemptAt?: number;
  /** The HTTP status the last attempt was answered with. */
  readonly lastStatus?: number;
  readonly lastLatencyMs?: number;
  readonly lastError?: string;
  /** Its last attempts, oldest first (a bounded few): each one's time, answer, latency and error (issue 42). */
  readonly recentAttempts: readonly AttemptRow[];
  readonly createdAt: number;
};

/** One attempt of a delivery. */
export type AttemptRow = {
  readonly attempt: number;
  readonly at: number;
  readonly status?: number;
  readonly latencyMs?: number;
  readonly error?: string;
};

/** `GET /dashboard/webhooks/:id`: one endpoint and a page of its deliveries, newest first. */
export type WebhookEndpointView = SessionView & {
  readonly endpoint: WebhookEndpointRow;
  readonly deliveries: readonly DeliveryRow[];
  /** The delivery id the next older page starts after (`?before=…`), when there is one. */
  readonly olderCursor?: string;
  /** Set on a page that is not the newest. */
  readonly older: boolean;
  readonly error?: string;
  /** Only after a redelivery: the delivery made due again. */
  readonly redelivered?: string;
  /** Only after a recover: how many deliveries were made due again, and whether a bound stopped it. */
  readonly recovered?: { readonly count: number; readonly more: boolean };
};
