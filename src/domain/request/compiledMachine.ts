import type { RequestContext } from './context.js';
import type { RequestEvent } from './events.js';

/** A machine's status: the name of the atomic state it is in. */
export type CompiledStatus = string;

type Guard<C, E> = (args: { context: C; event: E }) => boolean;
type Assignment<C, E> = (args: { context: C; event: E }) => Partial<C>;
type Candidate<C, E> = {
  readonly guard?: Guard<C, E>;
  readonly target: CompiledStatus;
  readonly assignments: readonly Assignment<C, E>[];
};

/** The machine as a table: for each status and event type, the transitions to try, in XState's order. */
export type CompiledMachine<C extends object = RequestContext, E extends { readonly type: string } = RequestEvent> = {
  /** Whether the machine accepts `event` in this status with this context (guards included). */
  can(status: CompiledStatus, context: C, event: E): boolean;
  /** The status and context after `event`, or `undefined` when the machine does not accept it. */
  step(status: CompiledStatus, context: C, event: E): { status: CompiledStatus; context: C } | undefined;
  /**
   * The same step, written into `state` itself (its context merged in place) instead of new objects: for a fold that
   * owns its states and makes many steps (verification). Returns whether the machine accepted the event.
   */
  stepInPlace(state: { status: CompiledStatus; context: C }, event: E): boolean;
  readonly statuses: readonly CompiledStatus[];
};

/** The parts of an XState machine the compiler reads (its root node and its named implementations). */
type CompilableMachine = {
  readonly root: unknown;
  readonly implementations: { readonly guards: unknown; readonly actions: unknown };
};

/** The slice of an XState state node this compiler reads. */
type Node = {
  readonly key: string;
  readonly type: string;
  readonly parent?: Node;
  readonly states: Record<string, Node>;
  readonly initial?: { readonly target?: readonly Node[] };
  readonly transitions: Map<string, readonly Transition[]>;
};
type Transition = {
  readonly target?: readonly Node[];
  readonly guard?: unknown;
  readonly actions: readonly unknown[];
};

/** A compound state is entered through its initial child, down to an atomic one. */
const atomicOf = (node: Node): Node => {
  const initial = node.initial?.target?.[0];
  return node.type === 'atomic' || initial === undefined ? node : atomicOf(initial);
};

const atomicNodes = (node: Node): Node[] =>
  node.type === 'atomic' || node.type === 'final' ? [node] : Object.values(node.states).flatMap(atomicNodes);

const nameOf = (reference: unknown): string => {
  if (typeof reference === 'string') return reference;
  if (typeof reference === 'object' && reference !== null && 'type' in reference) return String(reference.type);
  throw new Error('the machine uses an inline guard or action; name it in setup() so it can be compiled');
};

/**
 * Reads a machine (the request's, a webhook delivery's) once (its states, their transitions in the order XState tries them, the guards and the
 * `assign` actions it names) into a table, so that folding an event costs a lookup and a function call instead of
 * resolving an XState snapshot. Everything comes from the machine object: change a guard, a target or an update
 * there and the table follows. A construct the compiler does not know (an inline guard, an action other than
 * `assign`) stops it at start-up rather than letting the table drift from the machine.
 */
export const compileMachine = <C extends object = RequestContext, E extends { readonly type: string } = RequestEvent>(
  machine: CompilableMachine,
): CompiledMachine<C, E> => {
  type G = Guard<C, E>;
  type A = Assignment<C, E>;
  const guards = machine.implementations.guards as unknown as Record<string, G>;
  const actions = machine.implementations.actions as unknown as Record<string, { assignment?: unknown }>;
  const guardOf = (reference: unknown): G | undefined => {
    if (reference === undefined) return undefined;
    const guard = guards[nameOf(reference)];
    if (typeof guard !== 'function') throw new Error(`the machine names an unknown guard ${nameOf(reference)}`);
    return guard;
  };
  const assignmentOf = (reference: unknown): A => {
    const assignment = actions[nameOf(reference)]?.assignment;
    if (typeof assignment !== 'function') {
      throw new Error(`the machine's action ${nameOf(reference)} is not an assign(function) action`);
    }
    return assignment as A;
  };

  const root = machine.root as unknown as Node;
  /** Per status, per event type: the candidate transitions. Plain objects built once, so a step is two lookups. */
  const table: Record<string, Record<string, Candidate<C, E>[]>> = Object.create(null);
  const leaves = atomicNodes(root);
  for (const leaf of leaves) {
    const byEvent: Record<string, Candidate<C, E>[]> = Object.create(null);
    table[leaf.key] = byEvent;
    // XState tries the deepest state's transitions first, then its ancestors'.
    for (let node: Node | undefined = leaf; node !== undefined; node = node.parent) {
      for (const [eventType, transitions] of node.transitions) {
        const candidates = byEvent[eventType] ?? [];
        for (const transition of transitions) {
          const target = transition.target?.[0];
          candidates.push({
            guard: guardOf(transition.guard),
            target: target === undefined ? leaf.key : atomicOf(target).key,
            assignments: transition.actions.map(assignmentOf),
          });
        }
        byEvent[eventType] = candidates;
      }
    }
  }

  const chosen = (status: CompiledStatus, context: C, event: E) => {
    const candidates = table[status]?.[event.type];
    if (candidates === undefined) return undefined;
    const args = { context, event };
    for (const candidate of candidates) if (candidate.guard === undefined || candidate.guard(args)) return candidate;
    return undefined;
  };

  return {
    statuses: leaves.map((leaf) => leaf.key),
    can: (status, context, event) => chosen(status, context, event) !== undefined,
    step: (status, context, event) => {
      const candidate = chosen(status, context, event);
      if (candidate === undefined) return undefined;
      let next = context;
      // As XState's assign does: the update is merged over a copy of the context.
      for (const assignment of candidate.assignments)
        next = Object.assign({}, next, assignment({ context: next, event }));
      return { status: candidate.target, context: next };
    },
    stepInPlace: (state, event) => {
      const candidate = chosen(state.status, state.context, event);
      if (candidate === undefined) return false;
      for (const assignment of candidate.assignments)
        Object.assign(state.context, assignment({ context: state.context, event }));
      state.status = candidate.target;
      return true;
    },
  };
};
