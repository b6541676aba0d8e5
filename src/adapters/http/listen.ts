import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type H3, serve } from 'h3';
import type { Logger } from 'pino';

/** A whole HTTP/1.1 answer in the contract's error shape, for what is answered below h3 (on the raw socket). */
const rawErrorResponse = (status: string, code: string, message: string, extra = ''): string => {
  const body = JSON.stringify({ error: { code, message } });
  return `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`;
};

/** Answers for requests Node's HTTP parser rejects before h3 sees them (oversized headers, a garbled line). */
const parserErrorResponse = (error: NodeJS.ErrnoException): string =>
  error.code === 'HPE_HEADER_OVERFLOW'
    ? rawErrorResponse('431 Request Header Fields Too Large', 'invalid_request', 'request headers are too large')
    : rawErrorResponse('400 Bad Request', 'invalid_request', 'the request is not valid HTTP/1.1');

const sendJson = (res: ServerResponse, status: number, code: string, message: string) => {
  const body = JSON.stringify({ error: { code, message } });
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
  });
  res.end(body);
};

const hasHostHeader = (raw: readonly string[]) => {
  for (let i = 0; i < raw.length; i += 2)
    if ((raw[i] as string).length === 4 && raw[i]?.toLowerCase() === 'host') return true;
  return false;
};

/**
 * What Node answers by itself, below h3, in the contract's shape instead of an empty body or a dropped connection:
 * an HTTP/1.1 request without `Host` (RFC 9112 asks for a 400), an `Expect` other than `100-continue` (417), and
 * `CONNECT` (405: airs is no proxy).
 */
/**
 * One `debug` line per answered call: method, path, the polled `req_id`, status and latency. Off at the default
 * level: a line per call costs the hot path more than a few percent (docs/decisions.md), and the events that matter
 * (errors, faults, lifecycle) are logged at info and above anyway.
 */
const logAccess = (log: Logger, req: IncomingMessage, res: ServerResponse) => {
  const started = performance.now();
  res.once('finish', () => {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const reqId = query === -1 ? null : new URLSearchParams(url.slice(query)).get('req_id');
    log.debug(
      {
        method: req.method,
        path: path.slice(0, 200),
        reqId: reqId?.slice(0, 128),
        status: res.statusCode,
        ms: Math.round((performance.now() - started) * 10) / 10,
      },
      'answered',
    );
  });
};

const answerBelowH3 = (server: Server & { requireHostHeader: boolean }, log: Logger | undefined) => {
  const accessLog = log?.isLevelEnabled('debug') === true ? log : undefined;
  // Node would answer an empty 400 itself; the check moves in front of srvx's handler instead.
  server.requireHostHeader = false;
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.httpVersionMinor === 1 && req.httpVersionMajor === 1 && !hasHostHeader(req.rawHeaders)) {
      sendJson(res, 400, 'invalid_request', 'the Host header is required in HTTP/1.1');
      return;
    }
    if (accessLog !== undefined) logAccess(accessLog, req, res);
    for (const handler of handlers) handler(req, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
    sendJson(
      res,
      417,
      'invalid_request',
      `Expect: ${String(req.headers.expect).slice(0, 100)} is not supported; only 100-continue is`,
    ),
  );
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    socket.end(
      rawErrorResponse(
        '405 Method Not Allowed',
        'method_not_allowed',
        'CONNECT is not supported: airs is not a proxy',
        'Allow: GET, POST\r\n',
      ),
    );
  });
};

/**
 * Serves the app on a real socket: srvx (h3's server) without its own signal handling (the CLI drains itself),
 * plus the contract's error shape for what Node's parser refuses.
 */
export const listen = async (
  app: H3,
  options: {
    readonly port: number;
    readonly hostname: string;
    readonly maxBodyBytes: number;
    /** Access lines go here at `debug` (none when the level is higher). */
    readonly log?: Logger;
  },
) => {
  // The app reads bodies from Node's request itself (requestBody.ts); srvx's limit guards any other reader.
  const server = serve(app, {
    port: options.port,
    hostname: options.hostname,
    silent: true,
    gracefulShutdown: false,
    maxRequestBodySize: options.maxBodyBytes,
  });
  // srvx serves plain HTTP/1.1 here: its server is Node's http.Server (with the property its types lack).
  const node = server.node?.server as (Server & { requireHostHeader: boolean }) | undefined;
  if (node !== undefined) answerBelowH3(node, options.log);
  node?.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
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
