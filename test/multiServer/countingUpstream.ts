import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One call the upstream received, from its arrival to its end. */
export type UpstreamCall = {
  readonly prompt: string;
  /** `answered`: the whole answer was written; `closed`: the caller went away first (an abort, a killed process). */
  end: 'open' | 'answered' | 'closed';
};

/**
 * An OpenAI-compatible chat-completions upstream on 127.0.0.1 that counts: every call it receives is recorded by its
 * prompt (the last message), from its arrival until it answered or its caller closed the connection. A call that
 * arrives while another call with the same prompt is still open is an overlap: two model calls for one request at
 * once. Answers are `upstream says: <prompt>`, after `delayMs(prompt)` (0 unless set: its slow mode).
 * Not streamed: airs' own API calls a model for a whole answer.
 */
export const startCountingUpstream = async () => {
  const calls: UpstreamCall[] = [];
  const open = new Map<string, number>();
  const overlaps: string[] = [];
  let delayMs: (prompt: string) => number = () => 0;
  const pending = new Set<ServerResponse>();

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let prompt: string;
    try {
      let text = '';
      for await (const chunk of req) text += chunk;
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions' || text === '') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const body = JSON.parse(text) as { model: string; messages: { content: string | null }[]; stream?: boolean };
      if (body.stream === true) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"not streamed here"}}');
        return;
      }
      prompt = body.messages.at(-1)?.content ?? '';
    } catch {
      // A caller that died while sending: what arrived is no call.
      return void res.destroy();
    }
    const call: UpstreamCall = { prompt, end: 'open' };
    calls.push(call);
    if ((open.get(prompt) ?? 0) > 0) overlaps.push(prompt);
    open.set(prompt, (open.get(prompt) ?? 0) + 1);
    pending.add(res);
    // The call is over when its answer is written or its connection closes, whichever comes first.
    const ended = (how: 'answered' | 'closed') => {
      pending.delete(res);
      if (call.end !== 'open') return;
      call.end = how;
      open.set(prompt, (open.get(prompt) ?? 1) - 1);
    };
    res.on('finish', () => ended('answered'));
    res.on('close', () => ended(res.writableFinished ? 'answered' : 'closed'));
    const delay = delayMs(prompt);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    if (res.destroyed) return;
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 0,
        model: 'counted',
        choices: [
          { index: 0, finish_reason: 'stop', message: { role: 'assistant', content: `upstream says: ${prompt}` } },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const ofPrompt = (prompt: string) => calls.filter((call) => call.prompt === prompt);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    /** Every call received so far, in order of arrival. */
    calls: (): readonly UpstreamCall[] => calls,
    /** Calls received with `prompt` (every attempt's call, whatever became of it). */
    callsFor: (prompt: string) => ofPrompt(prompt).length,
    /** Calls still open now. */
    openCalls: () => calls.filter((call) => call.end === 'open').length,
    /** The prompts of calls that arrived while another call with the same prompt was still open. */
    overlaps: (): readonly string[] => overlaps,
    /** How long each call with `prompt` waits before its answer (slow mode); 0 answers at once. */
    setDelay: (delay: number | ((prompt: string) => number)) => {
      delayMs = typeof delay === 'number' ? () => delay : delay;
    },
    close: async () => {
      for (const res of pending) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};

export type CountingUpstream = Awaited<ReturnType<typeof startCountingUpstream>>;
