import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got, its body read to the end. */
export type Posted = {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  /** When it arrived (Date.now()). */
  readonly at: number;
};

/** How the receiver answers one post: a status (after `delayMs`), or never (`hang`: the client must give up). */
export type Answer = number | 'hang' | { readonly status: number; readonly delayMs: number };

/**
 * A webhook receiver on 127.0.0.1 (plain HTTP) whose answers a test scripts per post (`answer(post, index)`, the
 * index counting the posts to the same path), that counts the posts open at once per path, and that can be closed and
 * started again on the same port (a receiver down for a while).
 */
export const startScriptedReceiver = async (
  options: {
    readonly answer?: (post: Posted, indexOnPath: number) => Answer;
    /** A fixed port (a receiver started again where it was). */
    readonly port?: number;
  } = {},
) => {
  const posted: Posted[] = [];
  /** Every post's opening and closing, in the order they happened (for tests of order, not of time). */
  const happened: { readonly path: string; readonly event: 'opened' | 'closed' }[] = [];
  const open = new Map<string, number>();
  const mostOpen = new Map<string, number>();
  const answer = options.answer ?? (() => 200);
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const path = request.url ?? '';
    open.set(path, (open.get(path) ?? 0) + 1);
    mostOpen.set(path, Math.max(mostOpen.get(path) ?? 0, open.get(path) ?? 0));
    happened.push({ path, event: 'opened' });
    response.on('close', () => {
      open.set(path, (open.get(path) ?? 1) - 1);
      happened.push({ path, event: 'closed' });
    });
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const post = { path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
    const index = posted.filter((one) => one.path === path).length;
    posted.push(post);
    const decided = answer(post, index);
    if (decided === 'hang') return;
    const { status, delayMs } = typeof decided === 'number' ? { status: decided, delayMs: 0 } : decided;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (!response.destroyed) response.writeHead(status).end();
  };
  const server: Server = createServer((request, response) => void handle(request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    posted,
    happened,
    /** Posts to `path` open now, and the most that were open at once. */
    open: (path: string) => open.get(path) ?? 0,
    mostOpen: (path: string) => mostOpen.get(path) ?? 0,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    /** The posts to `path`. */
    to: (path: string) => posted.filter((one) => one.path === path),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

export type ScriptedReceiver = Awaited<ReturnType<typeof startScriptedReceiver>>;
