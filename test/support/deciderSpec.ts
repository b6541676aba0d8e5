import { expect } from 'vitest';
import { LifecycleViolation } from '../../src/domain/errors.js';
import { decide, type RequestCommand } from '../../src/domain/request/decider.js';
import type { RequestEvent } from '../../src/domain/request/events.js';
import { foldRequest } from '../../src/domain/request/state.js';

/** Emmett-style decider specification: given these events, when this command, then these events (or a refusal). */
export const given = (events: readonly RequestEvent[]) => ({
  when: (command: RequestCommand) => {
    const result = decide(foldRequest(events), command);
    return {
      thenEvents: (expected: readonly RequestEvent[]) => expect(result).toEqual(expected),
      thenRefused: (event: RequestEvent['type']) => {
        expect(result).toBeInstanceOf(LifecycleViolation);
        expect((result as LifecycleViolation).event).toBe(event);
      },
    };
  },
});
