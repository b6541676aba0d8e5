/**
 * Child process: the load generator, so that the load comes from its own process (pinned to the load CPUs).
 * Each run is one autocannon run against one server, for `durationSec` seconds or for exactly `amount` requests.
 *
 * Started with an IPC channel (load.ts), it stays up and runs every `{id, spec}` message it gets, answering
 * `{id, result}` or `{id, error}`: one process for the whole bench, no start-up cost per round.
 * By hand: node loadgen.js '<LoadSpec JSON>'   Prints one JSON line: a LoadResult.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

export type LoadSpec = {
  /** Server base URL, e.g. http://127.0.0.1:8080 */
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly connections: number;
  readonly durationSec?: number;
  readonly amount?: number;
  /** A JSON file holding an array of paths: each request takes the next one (cycling) instead of `path`. */
  readonly pathsFile?: string;
  /**
   * A body in which `{{i}}` stands for the request's number in the run (0, 1, 2...): each request sends its own,
   * instead of `body`.
   */
  readonly numberedBody?: string;
  /** With `numberedBody`: `{{g}}` stands for the request's number modulo this (its group: a shared prompt prefix). */
  readonly groups?: number;
};

export type LoadResult = {
  /** Epoch ms just before the first request and just after the last answer. */
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly requests: number;
  readonly seconds: number;
  readonly rps: number;
  readonly latencyMs: {
    readonly p50: number;
    readonly p90: number;
    readonly p99: number;
    readonly max: number;
    readonly mean: number;
  };
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly statusCodes: Record<string, number>;
};

const run = async (spec: LoadSpec): Promise<LoadResult> => {
  const paths =
    spec.pathsFile === undefined ? undefined : (JSON.parse(readFileSync(spec.pathsFile, 'utf8')) as string[]);
  let next = 0;
  let numbered = 0;
  const cyclePaths = paths !== undefined && paths.length > 0;
  const { numberedBody } = spec;
  const request = {
    method: spec.method,
    path: spec.path,
    headers: spec.headers ?? {},
    ...(spec.body === undefined ? {} : { body: spec.body }),
    ...(!cyclePaths && numberedBody === undefined
      ? {}
      : {
          setupRequest: (raw: { path?: string; body?: string }) => {
            if (cyclePaths) raw.path = paths[next++ % paths.length] as string;
            if (numberedBody !== undefined) {
              const i = numbered++;
              raw.body = numberedBody
                .replaceAll('{{i}}', String(i))
                .replaceAll('{{g}}', String(i % (spec.groups ?? 1)));
            }
            return raw;
          },
        }),
  };
  const startedAt = Date.now();
  const started = performance.now();
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    pipelining: 1,
    timeout: 10,
    ...(spec.amount === undefined ? { duration: spec.durationSec ?? 5 } : { amount: spec.amount }),
    requests: [request],
  });
  const seconds = (performance.now() - started) / 1000;
  const finishedAt = Date.now();
  const requests = result.requests.total;
  const out: LoadResult = {
    startedAt,
    finishedAt,
    requests,
    seconds: round(seconds, 3),
    // A timed run counts over autocannon's own duration; a counted run over the wall time it took.
    rps: round(requests / (spec.amount === undefined ? result.duration : seconds), 1),
    latencyMs: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: round(result.latency.mean, 3),
    },
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])),
  };
  return out;
};

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

export type LoadRequest = { readonly id: number; readonly spec: LoadSpec };
export type LoadReply = { readonly id: number; readonly result?: LoadResult; readonly error?: string };

const send = process.send?.bind(process);
if (send !== undefined) {
  process.on('message', (message: LoadRequest) => {
    run(message.spec).then(
      (result) => send({ id: message.id, result } satisfies LoadReply),
      (error: unknown) =>
        send({ id: message.id, error: error instanceof Error ? error.stack : String(error) } satisfies LoadReply),
    );
  });
  process.on('disconnect', () => process.exit(0));
  process.stdout.write('loadgen ready\n');
} else {
  run(JSON.parse(process.argv[2] ?? '{}') as LoadSpec).then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (error: unknown) => {
      process.stderr.write(`loadgen failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
