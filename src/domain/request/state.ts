import { initialTransition, transition } from 'xstate';
import { compileMachine } from './compiledMachine.js';
import type { RequestContext } from './context.js';
import type { RequestEvent } from './events.js';
import { requestMachine } from './machine.js';

/** Where a request stands: the machine's state value, flattened. `waiting` and `processing` are sub-states of queued. */
export type RequestStatus = 'none' | 'waiting' | 'processing' | 'completed' | 'failed' | 'cancelled' | 'expired';

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

/** The fold step by the book: XState's pure `transition`. Used to check the compiled step below. */
export const evolveWithMachine = (state: RequestState, event: RequestEvent): RequestState =>
  toState(transition(requestMachine, toSnapshot(state), event)[0]);

/** The machine read into a table once, at start-up (compiledMachine.ts). */
const compiled = compileMachine(requestMachine);

/** Whether the machine accepts `event` in `state`, guards included. The decider asks this before it emits anything. */
export const canApply = (state: RequestState, event: RequestEvent): boolean =>
  compiled.can(state.status, state.context, event);

/**
 * The fold step: the state after `event`, from the machine compiled into a table (its targets, guards and `assign`
 * updates), with no XState snapshot resolved per event. It equals `evolveWithMachine`; a property test holds it to
 * that. An event the machine does not accept leaves the state as it was.
 */
export const evolve = (state: RequestState, event: RequestEvent): RequestState => tryEvolve(state, event) ?? state;

/** The state after `event`, or `undefined` when the machine does not accept it (guards included). */
export const tryEvolve = (state: RequestState, event: RequestEvent): RequestState | undefined =>
  compiled.step(state.status, state.context, event) as RequestState | undefined;

/** A request's state owned by one fold, changed in place by `evolveInPlace`. */
export type MutableRequestState = { status: RequestStatus; context: RequestContext };

/**
 * The fold step written into a state the caller owns (its context must not be shared): the same table, guards and
 * updates as `evolve`, without new objects per event. Returns whether the machine accepted the event; a property
 * test holds it equal to `evolve`.
 */
export const evolveInPlace = (state: MutableRequestState, event: RequestEvent): boolean =>
  compiled.stepInPlace(state, event);

/** Folds a whole stream of events from nothing. */
export const foldRequest = (events: Iterable<RequestEvent>): RequestState => {
  let state = initialRequestState;
  for (const event of events) state = evolve(state, event);
  return state;
};

/** A request counts as queued (publicly) while it waits or is being worked on. */
export const isQueued = (status: RequestStatus): boolean => status === 'waiting' || status === 'processing';
