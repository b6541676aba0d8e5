/**
 * Child process: the fake replicas of `--only=fleet` (test/support/fakeReplica.ts), in a process of their own so
 * that neither the bench's work nor airs's shares their event loop: what the bench measures is airs's choosing and
 * failing over, not the replicas' delays slipping. Run with an IPC channel; each ask `{id, ...}` is answered
 * `{id, ok: true, ...}` or `{id, ok: false, message}`.
 */
import {
  type FakeReplica,
  type FakeReplicaOptions,
  type ReplicaBehaviour,
  type ReplicaStats,
  startFakeReplica,
} from '../support/fakeReplica.js';

export type FleetAsk =
  | { readonly id: number; readonly type: 'start'; readonly replicas: readonly FakeReplicaOptions[] }
  | { readonly id: number; readonly type: 'set'; readonly name: string; readonly behaviour: Partial<ReplicaBehaviour> }
  | { readonly id: number; readonly type: 'stats' }
  /** Per replica of `names`, calls since `since` (epoch ms) by the group of their prompt (`group <n> …`). */
  | { readonly id: number; readonly type: 'groups'; readonly names: readonly string[]; readonly since: number }
  /** When each call of replica `name` arrived since `since` (epoch ms). */
  | { readonly id: number; readonly type: 'callTimes'; readonly name: string; readonly since: number };

export type FleetAnswer = { readonly id: number } & (
  | { readonly ok: true; readonly baseUrls?: Record<string, string>; readonly at?: number }
  | { readonly ok: true; readonly stats: readonly ReplicaStats[] }
  | { readonly ok: true; readonly groups: Record<string, Record<string, number>> }
  | { readonly ok: true; readonly times: readonly number[] }
  | { readonly ok: false; readonly message: string }
);

const send = process.send?.bind(process);
if (send === undefined) throw new Error('fleetChild runs as a child with an IPC channel');

const replicas = new Map<string, FakeReplica>();
const replicaOf = (name: string) => {
  const replica = replicas.get(name);
  if (replica === undefined) throw new Error(`no replica ${name}`);
  return replica;
};

const answer = async (ask: FleetAsk): Promise<FleetAnswer> => {
  switch (ask.type) {
    case 'start': {
      const started = await Promise.all(ask.replicas.map(startFakeReplica));
      for (const replica of started) replicas.set(replica.name, replica);
      return { id: ask.id, ok: true, baseUrls: Object.fromEntries(started.map((r) => [r.name, r.baseUrl])) };
    }
    case 'set':
      replicaOf(ask.name).set(ask.behaviour);
      return { id: ask.id, ok: true, at: Date.now() };
    case 'stats':
      return { id: ask.id, ok: true, stats: [...replicas.values()].map((replica) => replica.stats()) };
    case 'groups': {
      const groups: Record<string, Record<string, number>> = {};
      for (const name of ask.names) {
        const counts: Record<string, number> = {};
        for (const call of replicaOf(name).calls()) {
          if (call.at < ask.since || call.end !== 'answered') continue;
          const group = /^group (\d+) /.exec(call.prompt)?.[1] ?? '?';
          counts[group] = (counts[group] ?? 0) + 1;
        }
        groups[name] = counts;
      }
      return { id: ask.id, ok: true, groups };
    }
    case 'callTimes':
      return {
        id: ask.id,
        ok: true,
        times: replicaOf(ask.name)
          .calls()
          .filter((call) => call.at >= ask.since)
          .map((call) => call.at),
      };
  }
};

process.on('message', (ask: FleetAsk) => {
  answer(ask).then(send, (error: unknown) =>
    send({ id: ask.id, ok: false, message: error instanceof Error ? error.message : String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));
process.stdout.write('fleet replicas ready\n');
