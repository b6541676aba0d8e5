import { type Command, isRefusal } from '../domain/commands.js';
import type { RequestEvent } from '../domain/request/events.js';
import type { CommandOutcome } from '../ports/Store.js';
import type { Recorded, WorkQueueShape } from '../ports/WorkQueue.js';

/** Hands a command to the event log (batched with others) and resolves once its outcome is durable. */
export type SendCommand = (command: Command) => Promise<CommandOutcome | Error>;

const eventsOf = (outcome: CommandOutcome | Error): readonly RequestEvent[] =>
  !isRefusal(outcome) && 'events' in outcome ? (outcome.events as readonly RequestEvent[]) : [];

const recorded = (outcome: CommandOutcome | Error): Recorded => {
  if (isRefusal(outcome)) return 'refused';
  if (outcome instanceof Error) throw outcome;
  return 'recorded';
};

/**
 * The work queue's moves as commands of the event log: each is decided inside the store's write like any other command
 * (a claim by `decideClaim`, the rest by the request's machine), so any store whose writes decide commands against what
 * is committed (LMDB, memory, PostgreSQL) has this queue with nothing more to write. A write that fails rejects.
 */
export const workQueueOver = (send: SendCommand): WorkQueueShape => ({
  async claim(ask) {
    const events = eventsOf(await send({ type: 'Claim', ...ask }));
    return {
      started: events.flatMap((event) =>
        event.type === 'RequestProcessingStarted'
          ? [
              {
                reqId: event.reqId,
                attempt: event.attempt,
                leaseUntil: event.leaseUntil ?? ask.now + ask.leaseMs,
                upstream: event.upstream,
                servedBy: event.servedBy,
              },
            ]
          : [],
      ),
      gaveUp: events.flatMap((event) => (event.type === 'RequestFailed' ? [event.reqId] : [])),
    };
  },
  async extendLease({ reqId, attempt, owner }, leaseMs, now) {
    const outcome = await send({ type: 'ExtendLease', reqId, owner, attempt, leaseMs, now });
    if (outcome instanceof Error && !isRefusal(outcome)) throw outcome;
    return !isRefusal(outcome);
  },
  async release({ reqId, attempt, owner }, now) {
    const outcome = await send({ type: 'Release', reqId, owner, attempt, now });
    if (outcome instanceof Error && !isRefusal(outcome)) throw outcome;
  },
  async recordSuccess({ reqId, attempt, owner }, answer, now) {
    return recorded(
      await send({
        type: 'RecordSuccess',
        reqId,
        responseChars: answer.text.length,
        response: answer.text,
        inputTokens: answer.inputTokens,
        outputTokens: answer.outputTokens,
        finishReason: answer.finishReason,
        output: answer.output,
        // Only when known: commands travel to a writer process, and the same command is the same bytes.
        ...(answer.firstTokenMs === undefined ? {} : { firstTokenMs: answer.firstTokenMs }),
        owner,
        attempt,
        now,
      }),
    );
  },
  async failOver({ reqId, attempt, owner }, ask, now) {
    const outcome = await send({ type: 'FailOver', reqId, owner, attempt, now, ...ask });
    const moved = eventsOf(outcome).find((event) => event.type === 'RequestUpstreamChanged');
    if (moved !== undefined && moved.type === 'RequestUpstreamChanged') return { moved: moved.to };
    // Given back unspent: it waits in the queue for a place, or for an upstream back in service.
    if (eventsOf(outcome).some((event) => event.type === 'RequestReleased')) return { released: true };
    return recorded(outcome);
  },
  async recordFailure({ reqId, attempt, owner }, reason, policy, now, { said, permanent } = {}) {
    const command = { type: 'RecordFailure' as const, reqId, reason, policy, now, owner, attempt };
    // Only the fields it has: commands travel to a writer process, and the same command is the same bytes.
    return recorded(
      await send({
        ...command,
        ...(said === undefined ? {} : { said }),
        ...(permanent === true ? { permanent } : {}),
      }),
    );
  },
});
