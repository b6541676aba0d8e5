import { type Cluster, clusterJson } from './clusterTarget.js';

/** An event as `airs replay --json` prints it (its time as ISO 8601; other times in epoch milliseconds). */
export type LoggedEvent = {
  readonly type: string;
  readonly seq: number;
  readonly at: string;
  readonly reqId?: string;
  readonly accountId?: string;
  readonly attempt?: number;
  readonly owner?: string;
  readonly leaseUntil?: number;
  readonly idempotencyKey?: string;
};

/** The events that end an attempt: each attempt has at most one. */
export const attemptOutcomes: ReadonlySet<string> = new Set([
  'RequestCompleted',
  'RequestAttemptFailed',
  'RequestReleased',
  'RequestFailed',
]);

/** The log read through the CLI (`airs replay --json`, on either store), and what the scenarios count in it. */
export const readLog = async (cluster: Cluster, filter: readonly string[] = []) => {
  const { events, final_states: states } = await clusterJson<{
    events: LoggedEvent[];
    final_states: Record<string, string>;
  }>(cluster, ['replay', ...filter]);
  const ofRequest = new Map<string, LoggedEvent[]>();
  for (const event of events) {
    if (event.reqId === undefined) continue;
    const list = ofRequest.get(event.reqId) ?? [];
    list.push(event);
    ofRequest.set(event.reqId, list);
  }
  const eventsOf = (reqId: string): readonly LoggedEvent[] => ofRequest.get(reqId) ?? [];
  return {
    events,
    /** Every request in the log, by id, with the state its events fold to. */
    states: states as Readonly<Record<string, string>>,
    eventsOf,
    /** How many events of `type` the request has. */
    count: (reqId: string, type: string) => eventsOf(reqId).filter((event) => event.type === type).length,
    /** The requests an account created (its `RequestQueued` events), in log order. */
    requestsOf: (accountId: string) =>
      events.flatMap((event) =>
        event.type === 'RequestQueued' && event.accountId === accountId && event.reqId !== undefined
          ? [event.reqId]
          : [],
      ),
    /** Attempts that have more than one outcome event, as `reqId#attempt`: none, ever. */
    attemptsWithTwoOutcomes: () => {
      const seen = new Map<string, number>();
      for (const event of events)
        if (attemptOutcomes.has(event.type) && event.attempt !== undefined) {
          const id = `${event.reqId}#${event.attempt}`;
          seen.set(id, (seen.get(id) ?? 0) + 1);
        }
      return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
    },
  };
};

export type Log = Awaited<ReturnType<typeof readLog>>;

/** `airs replay --verify` on the cluster's store: every view rebuilt from the log, nothing different. */
export const verifyLog = (cluster: Cluster) => cluster.cli(['replay', '--verify']);
