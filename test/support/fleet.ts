import type { FakeReplica } from './fakeReplica.js';
import { unusedPort } from './ports.js';
import { createAccountWithKey, type Sandbox, type ServerProcess, sleep, startServer, submit } from './processes.js';

/**
 * The fleet tests' side of contract 19: a model whose `upstreams` are fake replicas (fakeReplica.ts), a config that
 * lets a flood through (the account's limits out of the way, more workers than the replicas have places, so the
 * places are what bounds the calls), and a flood submitted to `airs serve` and waited out through `GET /v1/ai`.
 */

export type FleetMember = { readonly replica: FakeReplica; readonly places: number; readonly weight?: number };

/** An `openai` model over `members`, one upstream each (named as the replica), no retries inside an attempt. */
export const fleetModel = (id: string, members: readonly FleetMember[], extra: Record<string, unknown> = {}) => ({
  id,
  provider: 'openai',
  upstreamModel: 'fleet-model',
  timeoutMs: 10_000,
  maxRetries: 0,
  upstreams: members.map((member) => ({
    name: member.replica.name,
    baseUrl: member.replica.baseUrl,
    maxConcurrency: member.places,
    ...(member.weight === undefined ? {} : { weight: member.weight }),
  })),
  ...extra,
});

/** A config for `models`: 64 workers, attempts as given, the `scale` plan's limits out of a flood's way. */
export const fleetConfig = (models: readonly Record<string, unknown>[], maxAttempts = 2) => ({
  models: [{ id: 'echo', provider: 'echo' }, ...models],
  processing: { concurrency: 64, maxAttempts },
  plans: { scale: { submitsPerMinute: 1_000_000, pollsPerMinute: 1_000_000, maxQueued: 1_000_000 } },
});

/** `airs serve` on a fixed port of 127.0.0.1 (as an operator starts it), and a key on the `scale` plan. */
export const serveFleet = async (box: Sandbox, config: unknown, args: readonly string[] = []) => {
  box.writeConfig(config);
  const { key } = await createAccountWithKey(box, 'fleet@example.com', 'scale');
  const port = await unusedPort();
  const server = await startServer(box, { args, env: { PORT: String(port) }, timeoutMs: 40_000 });
  return { server, key, url: server.url };
};

/** Submits one request per prompt (`parallel` at a time, spread over `urls`); returns their ids in order. */
export const submitAll = async (
  urls: readonly string[],
  key: string,
  model: string,
  prompts: readonly string[],
  parallel = 16,
): Promise<string[]> => {
  const ids: string[] = new Array(prompts.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < prompts.length; i = next++) {
      const url = urls[i % urls.length] as string;
      const answer = await submit(url, key, model, prompts[i] as string);
      if (answer.status !== 202)
        throw new Error(`POST /v1/ai answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      ids[i] = String(answer.body.request_id);
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return ids;
};

/** How a request ended, as `GET /v1/ai` tells it. */
export type Settled = {
  readonly id: string;
  /** `completed`, `failed` (a `500`), or `queued` when the wait ran out. */
  readonly status: string;
  /** The model that served it (contract 19: the fallback's, when one did). */
  readonly model: string | undefined;
  readonly response: string | undefined;
};

/** Waits (long polls, `Prefer: wait`) until each request is final or `timeoutMs` has passed. */
export const settleAll = async (
  url: string,
  key: string,
  ids: readonly string[],
  timeoutMs = 60_000,
  parallel = 16,
): Promise<Settled[]> => {
  const deadline = Date.now() + timeoutMs;
  const settled: Settled[] = new Array(ids.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < ids.length; i = next++) {
      const id = ids[i] as string;
      for (;;) {
        const response = await fetch(`${url}/v1/ai?req_id=${encodeURIComponent(id)}`, {
          headers: { authorization: `Bearer ${key}`, prefer: 'wait=5' },
        });
        const body = (await response.json()) as Record<string, unknown>;
        const status = response.status === 500 ? 'failed' : String(body.status);
        if (status !== 'queued' || Date.now() > deadline) {
          settled[i] = {
            id,
            status,
            model: typeof body.model === 'string' ? body.model : undefined,
            response: typeof body.response === 'string' ? body.response : undefined,
          };
          break;
        }
        await sleep(50);
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return settled;
};

/** Counts of each status among `settled` (`{ completed: 150 }`). */
export const statusCounts = (settled: readonly Settled[]) => {
  const counts: Record<string, number> = {};
  for (const one of settled) counts[one.status] = (counts[one.status] ?? 0) + 1;
  return counts;
};

/** Each replica's most calls in flight at once beside its places, as the replicas counted them. */
export const peaks = (members: readonly FleetMember[]) =>
  Object.fromEntries(
    members.map((member) => [
      member.replica.name,
      { places: member.places, maxInFlight: member.replica.maxInFlight(), calls: member.replica.calls().length },
    ]),
  );

/** The server's log so far, for a failure's message. */
export const logOf = (server: ServerProcess) => server.stderr().slice(-4_000);
