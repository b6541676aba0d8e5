import { isRefusal } from '../../src/domain/commands.js';
import {
  AccountLimitReached,
  IdempotencyKeyReused,
  LifecycleViolation,
  QueueFull,
  Refused,
} from '../../src/domain/errors.js';
import type { CommandOutcome } from '../../src/ports/Store.js';

/**
 * A commit's outcomes as JSON, between the suite and a store in another process (storeProcess.ts): events and replays
 * as they are; a refusal as its tagged fields, made again as the same class on arrival (so that a test can ask
 * `toBeInstanceOf(Refused)` of either process's outcome); any other error as its message.
 */
export type WireOutcome =
  | { readonly outcome: CommandOutcome }
  | { readonly refusal: { readonly _tag: string } & Record<string, unknown> }
  | { readonly error: string };

const refusals = { AccountLimitReached, IdempotencyKeyReused, LifecycleViolation, QueueFull, Refused } as const;

export const toWire = (outcome: CommandOutcome | Error): WireOutcome => {
  if (isRefusal(outcome)) return { refusal: { ...outcome, message: outcome.message, _tag: outcome._tag } };
  if (outcome instanceof Error) return { error: outcome.message };
  return { outcome };
};

export const fromWire = (wire: WireOutcome): CommandOutcome | Error => {
  if ('outcome' in wire) return wire.outcome;
  if ('error' in wire) return new Error(wire.error);
  const { _tag, ...fields } = wire.refusal;
  const Refusal = refusals[_tag as keyof typeof refusals];
  if (Refusal === undefined) return new Error(`an unknown refusal came back from the other process: ${_tag}`);
  return new Refusal(fields as never);
};
