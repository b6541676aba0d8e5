/**
 * What the dashboard pages show: plain data, filled by the routes. Times are epoch milliseconds (UTC); the pages
 * format them. Every string here is shown as text (escaped by the renderer), never as markup.
 */
import type { PlanName } from '../../domain/plans.js';

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
  /** All four plans, in the order to show them. */
  readonly plans: Readonly<Record<PlanName, PlanRow>>;
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
};

export type RequestsView = SessionView & {
  /** One page of requests; shown newest first whatever order they come in. */
  readonly requests: readonly RequestRow[];
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
export type ShownText = { readonly text: string; readonly totalChars: number };

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
};

/** `GET /dashboard/requests/:id`: one of the account's own requests. */
export type RequestDetailView = SessionView & {
  readonly id: string;
  readonly model: string;
  readonly status: RequestStatusView;
  /** What the request's input is: a prompt, or a conversation (as JSON). */
  readonly input: 'prompt' | 'messages' | 'chat';
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
};

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
