import { type IncomingMessage, request } from 'node:http';
import { Readable } from 'node:stream';
import { frameReader } from './sse.js';

/** A POST over a real socket whose answer is read as it arrives, and whose connection the test can drop. */
export type OpenCall = {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  /** The answer's server-sent events, frame by frame. */
  readonly frames: ReturnType<typeof frameReader>;
  /** The whole answer as text (do not mix with `frames`). */
  text(): Promise<string>;
  /** Drops the connection, as a client that goes away. */
  drop(): void;
};

/**
 * POSTs JSON over its own connection (no keep-alive pool) and resolves once the answer's head arrives. `sent`
 * resolves once the request is written, for calls whose answer the test does not wait for.
 */
export const postOverSocket = (url: string, path: string, key: string, body: unknown) => {
  const payload = Buffer.from(JSON.stringify(body));
  const outgoing = request(`${url}${path}`, {
    method: 'POST',
    agent: false,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': payload.length,
    },
  });
  const answered = new Promise<OpenCall>((resolve, reject) => {
    outgoing.on('response', (response) => {
      resolve({
        status: response.statusCode ?? 0,
        headers: response.headers,
        frames: frameReader(Readable.toWeb(response) as ReadableStream<Uint8Array>),
        text: async () => {
          let text = '';
          for await (const chunk of response) text += chunk;
          return text;
        },
        drop: () => outgoing.destroy(),
      });
    });
    outgoing.on('error', reject);
  });
  // A caller that drops its connection before the answer never reads it: not an unhandled rejection.
  answered.catch(() => undefined);
  outgoing.end(payload);
  return {
    answered,
    /** Drops the connection before any answer came (a waiting caller that goes away). */
    drop: () => outgoing.destroy(),
  };
};
