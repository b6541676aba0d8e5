import { initialTransition, transition } from 'xstate';
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

/** The fold step: the state after `event`. An event the machine does not accept leaves the state as it was. */
export const evolve = (state: RequestState, event: RequestEvent): RequestState =>
  toState(transition(requestMachine, toSnapshot(state), event)[0]);

/** Folds a whole stream of events from nothing. */
export const foldRequest = (events: Iterable<RequestEvent>): RequestState => {
  let state = initialRequestState;
  for (const event of events) state = evolve(state, event);
  return state;
};

/** A request counts as queued (publicly) while it waits or is being worked on. */
export const isQueued = (status: RequestStatus): boolean => status === 'waiting' || status === 'processing';

/** Final states never change again (but completed and failed still expire). */
export const isSettled = (status: RequestStatus): boolean =>
  status === 'completed' || status === 'failed' || status === 'expired';
