import { initialTransition, transition } from 'xstate';
import { applyContextUpdate } from './contextUpdates.js';
import type { RequestEvent } from './events.js';
import { type RequestContext, requestMachine } from './machine.js';

/** Where a request stands: the machine's state value, flattened. `waiting` and `processing` are sub-states of queued. */
export type RequestStatus = 'none' | 'waiting' | 'processing' | 'completed' | 'failed' | 'expired';

/** A request's folded state as stored in the view: plain data, so it can be written to LMDB and compared. */
export type RequestState = { readonly status: RequestStatus; readonly context: RequestContext };

type RequestSnapshot = ReturnType<typeof requestMachine.resolveState>;

const statusOf = (snapshot: RequestSnapshot): RequestStatus => {
  const value = snapshot.value;
  if (typeof value === 'string') return value as RequestStatus;
  return (value as { queued: 'waiting' | 'processing' }).queued;
};

const machineValueOf = (status: RequestStatus) =>
  status === 'waiting' || status === 'processing' ? { queued: status } : status;

export const toState = (snapshot: RequestSnapshot): RequestState => ({
  status: statusOf(snapshot),
  context: snapshot.context,
});

export const toSnapshot = (state: RequestState): RequestSnapshot =>
  requestMachine.resolveState({ value: machineValueOf(state.status), context: state.context } as never);

export const initialRequestState: RequestState = toState(initialTransition(requestMachine)[0]);

/** Whether the machine accepts `event` in `state`. The decider asks this before it emits anything. */
export const canApply = (state: RequestState, event: RequestEvent): boolean => toSnapshot(state).can(event);

/** The fold step by the book: XState's pure `transition`. Used to derive and to check the fast step below. */
export const evolveWithMachine = (state: RequestState, event: RequestEvent): RequestState =>
  toState(transition(requestMachine, toSnapshot(state), event)[0]);

const statuses: readonly RequestStatus[] = ['none', 'waiting', 'processing', 'completed', 'failed', 'expired'];

/** One event of each type at time `at`, for exploring the machine. */
const probes = (at: number): RequestEvent[] => [
  { type: 'RequestQueued', reqId: 'r', accountId: 'a', keyId: 'k', model: 'm', promptChars: 1, at, expiresAt: 10 },
  { type: 'RequestProcessingStarted', reqId: 'r', attempt: 1, at },
  { type: 'RequestAttemptFailed', reqId: 'r', attempt: 1, reason: '', retryAt: at, at },
  { type: 'RequestCompleted', reqId: 'r', responseChars: 1, at },
  { type: 'RequestFailed', reqId: 'r', reason: '', at },
  { type: 'RequestExpired', reqId: 'r', at },
];

/**
 * Where each event type leads from each status, read off the machine once at start-up by running its own
 * `transition` (before and after a sample expiry time, so every guard gets a chance to pass). In this machine the
 * target never depends on which guard passed, only on whether the event is accepted.
 */
const targets: ReadonlyMap<string, RequestStatus> = (() => {
  const table = new Map<string, RequestStatus>();
  const context = { ...initialRequestState.context, expiresAt: 10 };
  for (const status of statuses) {
    for (const event of [...probes(0), ...probes(10)]) {
      const state = { status, context };
      if (canApply(state, event)) table.set(`${status}/${event.type}`, evolveWithMachine(state, event).status);
    }
  }
  return table;
})();

/**
 * The fold step: the state after `event`. The machine decides whether the event is accepted (`can`, guards
 * included); the target comes from the table read off the machine, and the data change from the same updates the
 * machine assigns. It equals `evolveWithMachine` (a property test holds it to that) at a fraction of the cost,
 * which matters because every append runs it. An event the machine does not accept leaves the state as it was.
 */
export const evolve = (state: RequestState, event: RequestEvent): RequestState => {
  if (!canApply(state, event)) return state;
  const status = targets.get(`${state.status}/${event.type}`);
  if (status === undefined) return evolveWithMachine(state, event);
  return { status, context: applyContextUpdate(state.context, event) };
};

/** Folds a whole stream of events from nothing. */
export const foldRequest = (events: Iterable<RequestEvent>): RequestState => {
  let state = initialRequestState;
  for (const event of events) state = evolve(state, event);
  return state;
};

/** A request counts as queued (publicly) while it waits or is being worked on. */
export const isQueued = (status: RequestStatus): boolean => status === 'waiting' || status === 'processing';
