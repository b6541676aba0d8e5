import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * One replica of a model's fleet (contract 19): a vLLM-like OpenAI-compatible server on 127.0.0.1 that counts its own
 * calls in flight, so a test or the bench can check airs's places from the replica's side, and that can be told at
 * run time to misbehave. Serves `POST /v1/chat/completions` (whole or streamed), `POST /v1/responses` (whole) and
 * `GET /v1/models` (its one model). Used in-process by the tests and from a child process by the fleet bench.
 */

/** What the replica does with the calls it gets from now on. */
export type ReplicaBehaviour = {
  /** Milliseconds before each answer. */
  readonly delayMs: number;
  /** The share of calls answered `500` (0 to 1), spread evenly over the calls (every other one at 0.5). */
  readonly fail500: number;
  /** Every call answered `429` with this `Retry-After` (seconds); null answers normally. */
  readonly retryAfterSeconds: number | null;
  /** Every call's connection destroyed once its body has arrived (a crashing replica behind a live port). */
  readonly resetConnections: boolean;
};

/** One call as the replica saw it. */
export type ReplicaCall = {
  /** The last message's text (chat) or the input (Responses). */
  readonly prompt: string;
  /** The first characters of the system message or instructions (what prefix affinity is about). */
  readonly system: string;
  readonly requestId: string | undefined;
  readonly traceparent: string | undefined;
  /** How the call ended: answered 200, answered an error, or dropped (reset, killed, caller gone). */
  end: 'open' | 'answered' | 'error' | 'dropped';
  readonly at: number;
};

/** What the replica counted, as plain data (for the bench's child process to send). */
export type ReplicaStats = {
  readonly name: string;
  readonly port: number;
  readonly places: number | null;
  readonly inFlight: number;
  readonly maxInFlight: number;
  readonly calls: number;
  readonly answered: number;
  readonly errors: number;
  readonly dropped: number;
  /** Calls received while its places were all taken (0 unless airs over-fills it). */
  readonly overPlaces: number;
  /** When the last call arrived (epoch ms), or null. */
  readonly lastCallAt: number | null;
  /** When it was last killed (epoch ms), or null. */
  readonly killedAt: number | null;
  readonly up: boolean;
};

const bodyLimit = 4 * 1024 * 1024;
const systemChars = 64;
const keptCalls = 100_000;

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > bodyLimit) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
};

type ChatBody = { model?: string; messages?: { role: string; content: unknown }[]; stream?: boolean };
type ResponsesBody = { model?: string; input?: unknown; instructions?: unknown };

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((part) => (part as { text?: string }).text ?? '').join('')
      : '';

export type FakeReplicaOptions = {
  readonly name: string;
  /** The model it serves (listed by `GET /v1/models`); any model asked for is answered. */
  readonly model?: string;
  /** Its places as airs is told them: only for `overPlaces` and the stats. */
  readonly places?: number;
  /** A fixed port (to start again where it was); 0 or none: a free one. */
  readonly port?: number;
  readonly behaviour?: Partial<ReplicaBehaviour>;
};

export const startFakeReplica = async (options: FakeReplicaOptions) => {
  let behaviour: ReplicaBehaviour = {
    delayMs: 0,
    fail500: 0,
    retryAfterSeconds: null,
    resetConnections: false,
    ...options.behaviour,
  };
  const model = options.model ?? 'fleet-model';
  const calls: ReplicaCall[] = [];
  let callCount = 0;
  let failTurn = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let overPlaces = 0;
  let answered = 0;
  let errors = 0;
  let dropped = 0;
  let lastCallAt: number | null = null;
  let killedAt: number | null = null;
  /** The calls open when the replica was last killed: the only ones airs may send again. */
  let openAtKill: ReplicaCall[] = [];
  const sockets = new Set<Socket>();
  const open = new Set<ReplicaCall>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET' && (req.url === '/v1/models' || req.url === '/models')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model', owned_by: 'fake' }] }));
    }
    const chat = req.url === '/v1/chat/completions';
    if (req.method !== 'POST' || (!chat && req.url !== '/v1/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end('{"object":"error","message":"not found"}');
    }
    // A place is taken from the call's arrival to its end, as vLLM counts a running sequence.
    inFlight++;
    if (options.places !== undefined && inFlight > options.places) overPlaces++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let text: string;
    try {
      text = await readBody(req);
    } catch {
      inFlight--;
      return void res.destroy();
    }
    let prompt = '';
    let system = '';
    let stream = false;
    try {
      if (chat) {
        const body = JSON.parse(text) as ChatBody;
        const messages = body.messages ?? [];
        prompt = textOf(messages.at(-1)?.content);
        system = textOf(messages.find((message) => message.role === 'system')?.content);
        stream = body.stream === true;
      } else {
        const body = JSON.parse(text) as ResponsesBody;
        prompt = typeof body.input === 'string' ? body.input : JSON.stringify(body.input ?? '');
        system = typeof body.instructions === 'string' ? body.instructions : '';
      }
    } catch {
      inFlight--;
      res.writeHead(400, { 'content-type': 'application/json' });
      return void res.end('{"object":"error","message":"not JSON"}');
    }
    const header = (name: string) => {
      const value = req.headers[name];
      return typeof value === 'string' ? value.slice(0, 256) : undefined;
    };
    const call: ReplicaCall = {
      prompt,
      system: system.slice(0, systemChars),
      requestId: header('x-request-id'),
      traceparent: header('traceparent'),
      end: 'open',
      at: Date.now(),
    };
    const number = ++callCount;
    lastCallAt = call.at;
    if (calls.length < keptCalls) calls.push(call);
    open.add(call);
    const ended = (how: ReplicaCall['end']) => {
      if (call.end !== 'open') return;
      call.end = how;
      open.delete(call);
      inFlight--;
      if (how === 'answered') answered++;
      else if (how === 'error') errors++;
      else dropped++;
    };
    res.on('close', () => ended(res.writableFinished ? (res.statusCode === 200 ? 'answered' : 'error') : 'dropped'));

    const now = behaviour;
    if (now.resetConnections) return void res.destroy();
    if (now.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, now.delayMs));
    if (res.destroyed) return;
    const json = (status: number, payload: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(payload));
    if (behaviour.retryAfterSeconds !== null)
      return json(
        429,
        { object: 'error', message: 'too many requests' },
        { 'retry-after': String(behaviour.retryAfterSeconds) },
      );
    // Evenly spread: with 0.5, every second call fails.
    if (behaviour.fail500 > 0) {
      const before = Math.floor(failTurn * behaviour.fail500);
      failTurn++;
      if (Math.floor(failTurn * behaviour.fail500) > before)
        return json(500, { object: 'error', message: `${options.name} crashed` });
    }
    const answer = `${options.name} says: ${prompt.slice(0, 200)}`;
    const usage = { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 };
    if (!chat)
      return json(200, {
        id: `resp_${number}`,
        object: 'response',
        created_at: Math.floor(Date.now() / 1000),
        status: 'completed',
        model,
        output: [
          {
            type: 'message',
            id: `msg_${number}`,
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text: answer, annotations: [] }],
          },
        ],
        usage: { input_tokens: 1, output_tokens: 3, total_tokens: 4 },
      });
    if (!stream)
      return json(200, {
        id: `chatcmpl-${number}`,
        object: 'chat.completion',
        created: 0,
        model,
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: answer } }],
        usage,
      });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: `chatcmpl-${number}`, object: 'chat.completion.chunk', created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }));
    res.write(chunk({ content: answer }));
    res.end(`${chunk({}, 'stop')}data: ${JSON.stringify({ choices: [], usage })}\n\ndata: [DONE]\n\n`);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  let up = false;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        up = true;
        resolve((server.address() as AddressInfo).port);
      });
    });
  const port = await listen(options.port ?? 0);
  const stop = async () => {
    if (!up) return;
    up = false;
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };

  const counted = <K extends 'prompt' | 'requestId'>(key: K) => {
    const counts = new Map<string, number>();
    for (const call of calls) {
      const value = call[key];
      if (value !== undefined) counts.set(value, (counts.get(value) ?? 0) + 1);
    }
    return counts;
  };

  return {
    name: options.name,
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    /** Changes what the replica does with the calls that arrive from now on. */
    set: (change: Partial<ReplicaBehaviour>) => {
      behaviour = { ...behaviour, ...change };
    },
    behaviour: () => behaviour,
    inFlight: () => inFlight,
    maxInFlight: () => maxInFlight,
    /** Every call received so far (the first 100,000), in order of arrival. */
    calls: (): readonly ReplicaCall[] => calls,
    /** How many calls each prompt got. */
    callsByPrompt: () => counted('prompt'),
    /** How many calls each `X-Request-Id` got (calls without one are not counted). */
    callsByRequestId: () => counted('requestId'),
    /** The calls that were open when it was last killed. */
    openAtKill: (): readonly ReplicaCall[] => openAtKill,
    stats: (): ReplicaStats => ({
      name: options.name,
      port,
      places: options.places ?? null,
      inFlight,
      maxInFlight,
      calls: callCount,
      answered,
      errors,
      dropped,
      overPlaces,
      lastCallAt,
      killedAt,
      up,
    }),
    /** Closes the server and destroys every connection at once, open calls included (a replica that dies). */
    kill: async () => {
      openAtKill = [...open];
      killedAt = Date.now();
      await stop();
    },
    /** Listens again on its port after `kill` (a replica restarted). */
    restart: async () => {
      if (!up) await listen(port);
    },
    close: stop,
  };
};

export type FakeReplica = Awaited<ReturnType<typeof startFakeReplica>>;

/** Starts one replica per entry, each on a free port. */
export const startFleet = (replicas: readonly FakeReplicaOptions[]) => Promise.all(replicas.map(startFakeReplica));
