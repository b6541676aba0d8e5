import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** One request the receiver got. */
export type Received = {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  /** The TLS server name (SNI) the client sent, for HTTPS. */
  readonly servername: string | undefined;
};

/** A certificate for `webhooks.test` (self-signed, valid for a century) and its key, for an HTTPS receiver. */
export const webhookTls = {
  cert: readFileSync(new URL('./webhookTls/cert.pem', import.meta.url)),
  key: readFileSync(new URL('./webhookTls/key.pem', import.meta.url)),
};

/**
 * A webhook receiver on 127.0.0.1 (plain HTTP, or HTTPS with `webhookTls`) that behaves by the path it is sent to:
 * - `/ok` answers 200 (a query is ignored) (`/status/<n>` answers `<n>`);
 * - `/redirect` answers 302 to `/ok`;
 * - `/hang` reads the request and never answers;
 * - `/huge` answers 200 and sends bytes until the client goes (counted in `hugeBytesSent`);
 * - anything else answers 404.
 * Every request is kept (`received`), with its body read to the end first; `closedHanging` counts hanging requests
 * whose connection the client closed.
 */
export const startWebhookReceiver = async (options: { readonly tls?: boolean } = {}) => {
  const received: Received[] = [];
  const counters = { closedHanging: 0, hugeBytesSent: 0 };
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const path = request.url ?? '';
    received.push({
      path,
      headers: request.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      servername: (request.socket as Partial<TLSSocket>).servername || undefined,
    });
    const route = path.split('?')[0];
    const status = /^\/status\/(\d{3})$/.exec(route ?? '');
    if (route === '/ok') response.end('thanks');
    else if (status !== null) response.writeHead(Number(status[1])).end();
    else if (route === '/redirect') response.writeHead(302, { location: '/ok' }).end();
    else if (route === '/hang') response.on('close', () => counters.closedHanging++);
    else if (route === '/huge') {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      const block = Buffer.alloc(64 * 1024, 'x');
      const write = () => {
        while (!response.destroyed && counters.hugeBytesSent < 1024 ** 3) {
          counters.hugeBytesSent += block.length;
          if (!response.write(block)) return void response.once('drain', write);
        }
      };
      write();
    } else response.writeHead(404).end();
  };
  const listener = (request: IncomingMessage, response: ServerResponse) => void handle(request, response);
  const server: Server = options.tls ? createHttpsServer(webhookTls, listener) : createHttpServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    received,
    counters,
    /** The URL of `path` on this receiver, by IP address. */
    url: (path: string) => `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}${path}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
