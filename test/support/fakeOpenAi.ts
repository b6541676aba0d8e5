import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the fake server received: enough to check the request an OpenAI-compatible server sees. */
export type Received = {
  readonly authorization: string | undefined;
  readonly body: { model: string; messages: { role: string; content: string }[] };
};

export type FakeOpenAiOptions = {
  /** Milliseconds before each answer (a function gives each call its own), so callers can die mid-call. */
  readonly delayMs?: number | (() => number);
  /** Appends ` #<n>` (the prompt's call count) to each answer, so every call's answer is distinct. */
  readonly numbered?: boolean;
};

/**
 * A local OpenAI-compatible chat-completions server on 127.0.0.1 that behaves by the prompt it is sent:
 * `rate-limit-once` answers 429 with Retry-After: 0 the first time, `always-500` answers 500, `hang` never
 * answers, `malformed` answers 200 with a body lacking choices, `not-json` answers 200 with text; anything
 * else is answered with `upstream says: <prompt>`.
 */
export const startFakeOpenAi = async (options: FakeOpenAiOptions = {}) => {
  const received: Received[] = [];
  const seen = new Map<string, number>();
  const answered = new Map<string, string[]>();
  const hanging = new Set<ServerResponse>();
  let abandoned = 0;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let body: Received['body'];
    try {
      let text = '';
      for await (const chunk of req) text += chunk;
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      body = JSON.parse(text) as Received['body'];
    } catch {
      // A caller killed mid-request: what arrived is no call.
      return void res.destroy();
    }
    received.push({ authorization: req.headers.authorization, body });
    // A caller that gives up (an aborted call) closes the connection before the answer is written.
    res.on('close', () => {
      if (!res.writableEnded) abandoned++;
    });
    const prompt = body.messages.at(-1)?.content ?? '';
    const count = (seen.get(prompt) ?? 0) + 1;
    seen.set(prompt, count);
    const delay = typeof options.delayMs === 'function' ? options.delayMs() : (options.delayMs ?? 0);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    const json = (status: number, payload: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(payload));
    if (prompt === 'rate-limit-once' && count === 1)
      return json(429, { error: { message: 'slow down' } }, { 'retry-after': '0' });
    if (prompt === 'always-500') return json(500, { error: { message: 'the model crashed' } });
    if (prompt === 'hang') return void hanging.add(res);
    if (prompt === 'malformed') return json(200, { id: 'x', object: 'chat.completion', choices: [] });
    if (prompt === 'not-json') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('hello?');
    const answer = `upstream says: ${prompt}${options.numbered ? ` #${count}` : ''}`;
    answered.set(prompt, [...(answered.get(prompt) ?? []), answer]);
    return json(200, {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 0,
      model: body.model,
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: answer } }],
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    /** How many calls a prompt got (retries included). */
    calls: (prompt: string) => seen.get(prompt) ?? 0,
    /** Calls whose caller closed the connection before the answer (aborted calls). */
    abandoned: () => abandoned,
    /** Every prompt the server was called with. */
    prompts: () => [...seen.keys()],
    /** The successful answers a prompt was given, in order (an answer may be lost if its caller died). */
    answers: (prompt: string) => answered.get(prompt) ?? [],
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};
