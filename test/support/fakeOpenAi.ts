import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type SentMessage = {
  role: string;
  content: string | null;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};

/** What the fake server received: enough to check the request an OpenAI-compatible server sees. */
export type Received = {
  readonly authorization: string | undefined;
  /** The `X-Request-Id` and `traceparent` headers the call carried. */
  readonly requestId: string | undefined;
  readonly traceparent: string | undefined;
  /** The whole body as sent: model, messages, and any parameters, tools, `stream` and `stream_options`. */
  readonly body: { model: string; messages: SentMessage[]; [param: string]: unknown };
};

export type FakeOpenAiOptions = {
  /** Milliseconds before each answer (a function gives each call its own), so callers can die mid-call. */
  readonly delayMs?: number | (() => number);
  /** Appends ` #<n>` (the prompt's call count) to each answer, so every call's answer is distinct. */
  readonly numbered?: boolean;
  /** `GET /v1/models` answers 401 unless called with this key (as `Bearer <key>`). */
  readonly modelsKey?: string;
  /** Writes JSON as Python's `json.dumps` does by default: every character beyond ASCII as a `\uXXXX` escape. */
  readonly asciiJson?: boolean;
  /** The ids `GET /v1/models` lists (default: `llama-3-8b`). */
  readonly models?: readonly string[];
};

/** JSON with every character beyond ASCII escaped (`€` as `\u20ac`, an emoji as two escapes). */
export const asciiJson = (value: unknown): string =>
  JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** Resolves once `text` is handed to the socket, or at once if the caller has gone (false then). */
const sent = (res: ServerResponse, text: string): Promise<boolean> =>
  new Promise((resolve) => {
    if (res.destroyed) return resolve(false);
    if (res.write(text)) return resolve(true);
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve(!res.destroyed);
    };
    res.on('drain', done).on('close', done);
  });

const hugePiece = 64 * 1024;

/** An answer of `bytes` `x`s, written as the caller reads it: whole (one JSON body) or streamed (an event a piece). */
const writeHuge = async (res: ServerResponse, bytes: number, streamed: boolean, model: string) => {
  const piece = 'x'.repeat(hugePiece);
  const pieceOf = (left: number) => (left >= hugePiece ? piece : piece.slice(0, left));
  if (!streamed) {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (!(await sent(res, `{"id":"chatcmpl-1","object":"chat.completion","created":0,"model":"${model}",`))) return;
    if (!(await sent(res, '"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"')))
      return;
    for (let left = bytes; left > 0; left -= hugePiece) if (!(await sent(res, pieceOf(left)))) return;
    res.end('"}}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (delta: unknown, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  for (let left = bytes; left > 0; left -= hugePiece) if (!(await sent(res, event({ content: pieceOf(left) })))) return;
  res.end(`${event({}, 'stop')}data: [DONE]\n\n`);
};

/** Words of a text, as the fake counts tokens. */
const words = (text: string | null | undefined) => (text ?? '').split(/\s+/).filter((word) => word !== '').length;

/**
 * A local OpenAI-compatible chat-completions server on 127.0.0.1 that behaves by the prompt it is sent (the last
 * message's content):
 * - `rate-limit-once` answers 429 with Retry-After: 0 the first time, `always-500` answers 500, `hang` never answers,
 *   `malformed` answers 200 with a body lacking choices, `not-json` answers 200 with text;
 * - `call <tool> <arguments JSON>`, when the call has `tools`, answers a call of that tool (finish reason
 *   `tool_calls`); after a `tool` message it answers `upstream says: tool said: <its content>`;
 * - `gated …` streams its first piece, then waits for `openGate()` before the rest;
 * - `break-stream-once …` streams its first piece and drops the connection the first time;
 * - `verbatim <text>` is answered with `<text>` exactly (a JSON document for structured output, say);
 * - `vllm 404` is answered 404 with vLLM's own error body (`{"object":"error","message":"The model … does not exist."}`);
 * - `answer <status>` is answered with that status (`answer 422`), and `answer <status> retry me` with the header
 *   `x-should-retry: true` too (which asks the OpenAI SDK to retry it);
 * - `huge <bytes>` is answered with that many `x`s (a misbehaving upstream), made and written 64 KiB at a time as the
 *   caller reads them, whole or as one event per 64 KiB: a caller that stops reading leaves the rest unmade;
 * - `flood <n>` is answered with `n` characters U+0001 (a misbehaving upstream's huge answer, which JSON writes as
 *   `\u0001`, six characters for each);
 * - anything else is answered with `upstream says: <prompt>`.
 * With `stream: true` the answer comes as `chat.completion.chunk` events, one per word, then `[DONE]`, with a usage
 * chunk when `stream_options.include_usage`; a whole answer always reports usage (words of the messages and answer).
 * `GET /v1/models` lists one model (or `models`); any other path answers 404 (a base URL without `/v1`). Every call is counted by
 * its method and path (`hits`).
 */
export const startFakeOpenAi = async (options: FakeOpenAiOptions = {}) => {
  const received: Received[] = [];
  const seen = new Map<string, number>();
  const answered = new Map<string, string[]>();
  const hanging = new Set<ServerResponse>();
  let abandoned = 0;
  let streamsFinished = 0;
  const hits = new Map<string, number>();
  let gate: { promise: Promise<void>; open: () => void } | undefined;
  const gateOf = () => {
    if (gate === undefined) {
      let open = () => {};
      const promise = new Promise<void>((resolve) => {
        open = resolve;
      });
      gate = { promise, open };
    }
    return gate;
  };
  const stringify = options.asciiJson === true ? asciiJson : JSON.stringify;
  const floods = new Map<string, Buffer>();
  const floodOf = (prompt: string): Buffer => {
    let body = floods.get(prompt);
    if (body === undefined) {
      const content = '\u0001'.repeat(Number(prompt.slice('flood '.length)));
      body = Buffer.from(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 0,
          model: 'flood',
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
          usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 },
        }),
      );
      floods.set(prompt, body);
    }
    return body;
  };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let body: Received['body'];
    const path = `${req.method} ${req.url}`;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    try {
      // Decoded whole: a character may be split between two chunks.
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      if (path === 'GET /v1/models') {
        const allowed = options.modelsKey === undefined || req.headers.authorization === `Bearer ${options.modelsKey}`;
        res.writeHead(allowed ? 200 : 401, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            allowed
              ? { object: 'list', data: (options.models ?? ['llama-3-8b']).map((id) => ({ id, object: 'model' })) }
              : { error: { message: 'bad key' } },
          ),
        );
        return;
      }
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      body = JSON.parse(text) as Received['body'];
    } catch {
      // A caller killed mid-request: what arrived is no call.
      return void res.destroy();
    }
    const header = (name: string) => {
      const value = req.headers[name];
      return typeof value === 'string' ? value : undefined;
    };
    received.push({
      authorization: req.headers.authorization,
      requestId: header('x-request-id'),
      traceparent: header('traceparent'),
      body,
    });
    // A caller that gives up (an aborted call) closes the connection before the answer is written.
    res.on('close', () => {
      if (!res.writableEnded) abandoned++;
    });
    const last = body.messages.at(-1);
    const prompt = last?.content ?? '';
    const count = (seen.get(prompt) ?? 0) + 1;
    seen.set(prompt, count);
    const delay = typeof options.delayMs === 'function' ? options.delayMs() : (options.delayMs ?? 0);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    const json = (status: number, payload: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(stringify(payload));
    if (prompt === 'rate-limit-once' && count === 1)
      return json(429, { error: { message: 'slow down' } }, { 'retry-after': '0' });
    if (prompt === 'always-500') return json(500, { error: { message: 'the model crashed' } });
    const status = /^answer (\d{3})( retry me)?$/.exec(prompt);
    if (status !== null)
      return json(
        Number(status[1]),
        { error: { message: `answered ${status[1]}` } },
        status[2] === undefined ? {} : { 'x-should-retry': 'true' },
      );
    if (prompt === 'vllm 404')
      return json(404, {
        object: 'error',
        message: `The model \`${body.model}\` does not exist.`,
        type: 'NotFoundError',
        param: null,
        code: 404,
      });
    if (prompt === 'hang') return void hanging.add(res);
    // Made once per size and kept: a test that floods must not hold its own event loop (a bystander measures from it).
    if (/^flood \d+$/.test(prompt))
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(floodOf(prompt));
    if (prompt === 'malformed') return json(200, { id: 'x', object: 'chat.completion', choices: [] });
    if (prompt === 'not-json') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('hello?');
    const huge = /^huge (\d+)$/.exec(prompt);
    if (huge !== null) return void writeHuge(res, Number(huge[1]), body.stream === true, body.model);

    const tools = Array.isArray(body.tools) ? (body.tools as { function: { name: string } }[]) : [];
    const call = last?.role === 'user' && tools.length > 0 ? /^call (\S+)(?: (.*))?$/s.exec(prompt) : null;
    const toolCalls =
      call === null
        ? undefined
        : [{ id: `call_${count}`, type: 'function', function: { name: call[1] ?? '', arguments: call[2] ?? '{}' } }];
    const answer =
      toolCalls !== undefined
        ? ''
        : last?.role === 'tool'
          ? `upstream says: tool said: ${prompt}`
          : prompt.startsWith('verbatim ')
            ? prompt.slice('verbatim '.length)
            : `upstream says: ${prompt}${options.numbered ? ` #${count}` : ''}`;
    const usage = {
      prompt_tokens: body.messages.reduce((sum, message) => sum + words(message.content), 0),
      completion_tokens: words(answer),
      total_tokens: 0,
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const finish = toolCalls === undefined ? 'stop' : 'tool_calls';

    if (body.stream !== true) {
      answered.set(prompt, [...(answered.get(prompt) ?? []), answer]);
      return json(200, {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 0,
        model: body.model,
        choices: [
          {
            index: 0,
            finish_reason: finish,
            message: { role: 'assistant', content: toolCalls === undefined ? answer : null, tool_calls: toolCalls },
          },
        ],
        usage,
      });
    }

    // Streamed: one chunk per word (with its leading space), as upstreams send pieces.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // Each chunk is on its way to the caller when its write resolves (a break or a wait comes after it).
    const chunk = (delta: unknown, finishReason: string | null = null) =>
      new Promise<void>((resolve) =>
        res.write(
          `data: ${stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion.chunk',
            created: 0,
            model: body.model,
            choices: [{ index: 0, delta, finish_reason: finishReason }],
          })}\n\n`,
          () => resolve(),
        ),
      );
    await chunk({ role: 'assistant', content: '' });
    const pieces = answer.split(/(?= )/).filter((piece) => piece !== '');
    for (const [i, piece] of pieces.entries()) {
      await chunk({ content: piece });
      if (i === 0 && prompt.startsWith('break-stream-once') && count === 1) return void res.destroy();
      if (i === 0 && prompt.startsWith('gated')) await gateOf().promise;
      if (res.destroyed) return;
    }
    if (toolCalls !== undefined)
      // Pieces as upstreams stream them: the id and name first, the arguments after.
      for (const [index, toolCall] of toolCalls.entries()) {
        await chunk({
          tool_calls: [{ index, id: toolCall.id, type: 'function', function: { name: toolCall.function.name } }],
        });
        await chunk({ tool_calls: [{ index, function: { arguments: toolCall.function.arguments } }] });
      }
    await chunk({}, finish);
    const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
    if (streamOptions?.include_usage === true) res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\n`);
    answered.set(prompt, [...(answered.get(prompt) ?? []), answer]);
    streamsFinished++;
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    /** The server without `/v1`: a base URL that lacks it, as an operator may write it. */
    rootUrl: `http://127.0.0.1:${port}`,
    received,
    /** How many calls a method and path got (`POST /chat/completions`, `GET /v1/models`). */
    hits: (path: string) => hits.get(path) ?? 0,
    /** How many calls a prompt got (retries included). */
    calls: (prompt: string) => seen.get(prompt) ?? 0,
    /** Calls whose caller closed the connection before the answer (aborted calls). */
    abandoned: () => abandoned,
    /** Streamed answers written to their end. */
    streamsFinished: () => streamsFinished,
    /** Lets `gated …` streams write the rest of their answer (and every later one at once). */
    openGate: () => gateOf().open(),
    /** Every prompt the server was called with. */
    prompts: () => [...seen.keys()],
    /** The successful answers a prompt was given, in order (an answer may be lost if its caller died). */
    answers: (prompt: string) => answered.get(prompt) ?? [],
    close: async () => {
      gate?.open();
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};
