import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A chat completions body as an upstream receives it. */
export type UpstreamBody = {
  readonly model: string;
  readonly messages: readonly Record<string, unknown>[];
  readonly stream?: boolean;
  readonly tools?: readonly { type: string; function: { name: string } }[];
  readonly response_format?: { type: string };
  readonly [field: string]: unknown;
};

/**
 * A chat completions upstream on 127.0.0.1 for the Responses face's tests (tool calls, structured output, live
 * streaming). It answers by what it is sent:
 * - tools given and the last message from the user: one call of the first tool, `{"city": <the user's text>}`;
 * - the last message a tool's output: `the tool said: <output>`;
 * - a `json_schema` response format: `{"city":"Paris","temperature":21}`;
 * - the user's text `pieces: a|b|c`: the answer `abc`, streamed as the pieces `a`, `b`, `c`;
 * - the user's text `hold`: streams `held ` at once, and the rest (`released`) only once `release()` is called
 *   (answered whole, the answer waits for `release()`);
 * - the user's text `cut`: `cut sho`, stopped by the token limit (`finish_reason: length`);
 * - the user's text `break`: streams `partial `, then drops the connection (answered whole: drops it at once);
 * - anything else: `upstream says: <text>`.
 * Streamed answers (`stream: true`) come as chunks with the usage last; whole ones with usage 7 in, 3 out.
 */
export const startToolUpstream = async () => {
  const received: UpstreamBody[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const server = createServer(async (req, res: ServerResponse) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    // `airs serve` checks each upstream at start (`GET {baseUrl}/models`): a model list answers it.
    if (req.method === 'GET' && req.url?.endsWith('/models'))
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data: [] }));
    let body: UpstreamBody;
    try {
      body = JSON.parse(text) as UpstreamBody;
    } catch {
      // A caller stopped mid-request: what arrived is no call.
      return void res.destroy();
    }
    received.push(body);
    const last = body.messages.at(-1) ?? {};
    const said = typeof last.content === 'string' ? last.content : '';
    const calls =
      (body.tools?.length ?? 0) > 0 && last.role === 'user'
        ? [
            {
              id: `call_${received.length}`,
              type: 'function',
              function: { name: body.tools?.[0]?.function.name ?? '', arguments: JSON.stringify({ city: said }) },
            },
          ]
        : [];
    let pieces: string[];
    if (calls.length > 0) pieces = [];
    else if (last.role === 'tool') pieces = [`the tool said: ${said}`];
    else if (body.response_format?.type === 'json_schema') pieces = ['{"city":"Paris",', '"temperature":21}'];
    else if (said.startsWith('pieces: ')) pieces = said.slice('pieces: '.length).split('|');
    else if (said === 'hold') pieces = ['held ', 'released'];
    else if (said === 'cut') pieces = ['cut sho'];
    else pieces = [`upstream says: ${said}`];
    const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
    const finish_reason = calls.length > 0 ? 'tool_calls' : said === 'cut' ? 'length' : 'stop';
    const base = { id: 'chatcmpl-up', created: 0, model: body.model };
    if (said === 'break' && body.stream !== true) return void res.destroy();
    if (body.stream !== true) {
      if (said === 'hold') await released;
      const message = { role: 'assistant', content: calls.length > 0 ? null : pieces.join(''), tool_calls: calls };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [
            { index: 0, message: calls.length > 0 ? message : { ...message, tool_calls: undefined }, finish_reason },
          ],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...extra })}\n\n`);
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    if (said === 'break') {
      chunk([{ index: 0, delta: { content: 'partial ' }, finish_reason: null }]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return void res.destroy();
    }
    for (const [i, piece] of pieces.entries()) {
      if (said === 'hold' && i === 1) await released;
      chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]);
      // Each piece its own write, so that the caller hears them one by one.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    for (const [index, call] of calls.entries()) {
      chunk([
        {
          index: 0,
          delta: {
            tool_calls: [
              { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
            ],
          },
          finish_reason: null,
        },
      ]);
      chunk([
        {
          index: 0,
          delta: { tool_calls: [{ index, function: { arguments: call.function.arguments } }] },
          finish_reason: null,
        },
      ]);
    }
    chunk([{ index: 0, delta: {}, finish_reason }]);
    chunk([], { usage });
    res.end('data: [DONE]\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    release: () => release(),
    close: async () => {
      release();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};
