import type { Socket } from 'node:net';
import { type H3, serve } from 'h3';

/** Answers for requests Node's HTTP parser rejects before h3 sees them (oversized headers, a garbled line). */
const parserErrorResponse = (error: NodeJS.ErrnoException): string => {
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
  const message = tooLarge ? 'request headers are too large' : 'the request is not valid HTTP/1.1';
  const body = JSON.stringify({ error: { code: 'invalid_request', message } });
  return `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
};

/**
 * Serves the app on a real socket: srvx (h3's server) without its own signal handling (the CLI drains itself),
 * plus the contract's error shape for what Node's parser refuses.
 */
export const listen = async (
  app: H3,
  options: { readonly port: number; readonly hostname: string; readonly maxBodyBytes: number },
) => {
  // srvx then reads a body straight from Node's request into one buffer and stops at the limit (see app.ts).
  const server = serve(app, {
    port: options.port,
    hostname: options.hostname,
    silent: true,
    gracefulShutdown: false,
    maxRequestBodySize: options.maxBodyBytes,
  });
  server.node?.server?.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (socket.writable && error.code !== 'ECONNRESET') socket.end(parserErrorResponse(error));
    else socket.destroy();
  });
  await server.ready();
  const address = server.node?.server?.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    server,
    url: `http://${options.hostname.includes(':') ? `[${options.hostname}]` : options.hostname}:${port}`,
  };
};
