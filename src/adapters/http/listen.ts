import cluster from 'node:cluster';
import { type IncomingMessage, type Server, ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type H3, serve } from 'h3';
import type { Logger } from 'pino';
import { traceIdFromHeader, traceIdOf } from '../../app/traceContext.js';
import type { HttpLimits } from '../../config.js';
import { accessNoteOf, keepAccessNotes } from './accessNote.js';

/** A whole HTTP/1.1 answer in the contract's error shape, for what is answered below h3 (on the raw socket). */
const rawErrorResponse = (status: string, code: string, message: string, extra = ''): string => {
  const body = JSON.stringify({ error: { code, message } });
  return `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`;
};

/**
 * Answers for requests Node refuses before h3 sees them: oversized headers, a garbled line, and a request whose
 * headers or body did not arrive in time (`http.headersTimeoutSeconds`, `http.requestTimeoutSeconds`).
 */
const parserErrorResponse = (error: NodeJS.ErrnoException): string => {
  if (error.code === 'HPE_HEADER_OVERFLOW')
    return rawErrorResponse('431 Request Header Fields Too Large', 'invalid_request', 'request headers are too large');
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return rawErrorResponse(
      '408 Request Timeout',
      'invalid_request',
      'the request did not arrive in time; send its headers and body promptly',
    );
  return rawErrorResponse('400 Bad Request', 'invalid_request', 'the request is not valid HTTP/1.1');
};

/** Whether an answer to the connection's current request has begun: nothing more may be written then. */
const answerStarted = (socket: Duplex): boolean =>
  (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;

/**
 * Node's answer with the standard reason phrase on its status line (`HTTP/1.1 200 OK`): srvx passes the web
 * Response's `statusText`, empty unless a route set one, and Node writes an empty phrase as given (`HTTP/1.1 200 `),
 * which some clients and proxies log or show as it is.
 */
class ReasonedResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  // biome-ignore lint/suspicious/noExplicitAny: Node's overloads (status, [reason], [headers]) pass through as they are.
  override writeHead(statusCode: number, ...rest: any[]): this {
    if (rest[0] === '') rest[0] = STATUS_CODES[statusCode] ?? 'Unknown';
    return super.writeHead(statusCode, ...(rest as [string]));
  }
}

/** How often Node looks for connections past their headers or request timeout (its default, 30 s, would let a
 * connection stay up to 30 s past its timeout). */
const timeoutCheckMs = 1_000;

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
 * One `debug` line per answered call: method, path, status and latency; the request the route made or read (`reqId`:
 * noted by the route, else the polled `req_id`), the account and the model it noted (accessNote.ts); the trace of an
 * incoming `traceparent` (`callerTraceId`), and the trace airs gives the request's upstream calls (`traceId`,
 * traceContext.ts), so that the two can be joined. Off at the default level: a line per call costs the hot path more
 * than a few percent (docs/decisions.md), and the events that matter (errors, faults, lifecycle) are logged at info
 * and above anyway.
 */
const logAccess = (log: Logger, req: IncomingMessage, res: ServerResponse) => {
  const started = performance.now();
  res.once('finish', () => {
    const url = req.url ?? '';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const note = accessNoteOf(req);
    const polled = query === -1 ? null : new URLSearchParams(url.slice(query)).get('req_id');
    const reqId = (note?.reqId ?? polled ?? undefined)?.slice(0, 128);
    const header = req.headers.traceparent;
    log.debug(
      {
        method: req.method,
        path: path.slice(0, 200),
        reqId,
        account: note?.account,
        model: note?.model,
        status: res.statusCode,
        ms: Math.round((performance.now() - started) * 10) / 10,
        callerTraceId: traceIdFromHeader(typeof header === 'string' ? header : undefined),
        traceId: note?.reqId === undefined ? undefined : traceIdOf(note.reqId),
      },
      'answered',
    );
  });
};

const answerBelowH3 = (server: Server & { requireHostHeader: boolean }, log: Logger | undefined) => {
  const accessLog = log?.isLevelEnabled('debug') === true ? log : undefined;
  if (accessLog !== undefined) keepAccessNotes();
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
 * plus the contract's error shape for what Node's parser refuses. A connection has `limits.headersTimeoutSeconds`
 * to send a request's headers and `limits.requestTimeoutSeconds` for the whole request (then it is answered 408 and
 * closed); an idle kept-alive one is closed after `limits.keepAliveTimeoutSeconds`; past `limits.maxConnections`,
 * a new connection is closed as soon as it is accepted. An answer may take as long as it needs (a waiting create).
 */
export const listen = async (
  app: H3,
  options: {
    readonly port: number;
    readonly hostname: string;
    readonly maxBodyBytes: number;
    readonly limits: HttpLimits;
    /** Access lines go here at `debug` (none when the level is higher). */
    readonly log?: Logger;
  },
) => {
  const { limits } = options;
  // The app reads bodies from Node's request itself (requestBody.ts); srvx's limit guards any other reader.
  const server = serve(app, {
    port: options.port,
    hostname: options.hostname,
    silent: true,
    gracefulShutdown: false,
    // srvx listens exclusively unless told otherwise, and an exclusive listen in a node:cluster worker does not share
    // the primary's handle: the second process of `serve --processes N` found its port in use. Not exclusive, every
    // process serves the one port (the primary hands out the connections; with port 0, one random port for all).
    reusePort: cluster.isWorker,
    maxRequestBodySize: options.maxBodyBytes,
    node: {
      headersTimeout: limits.headersTimeoutSeconds * 1_000,
      requestTimeout: limits.requestTimeoutSeconds * 1_000,
      keepAliveTimeout: limits.keepAliveTimeoutSeconds * 1_000,
      connectionsCheckingInterval: timeoutCheckMs,
      ServerResponse: ReasonedResponse,
    },
  });
  // srvx serves plain HTTP/1.1 here: its server is Node's http.Server (with the property its types lack).
  const node = server.node?.server as (Server & { requireHostHeader: boolean }) | undefined;
  if (node !== undefined) {
    node.maxConnections = limits.maxConnections;
    answerBelowH3(node, options.log);
  }
  node?.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node does itself: no answer over one that has begun (the peer would read garbage), and none to a reset.
    if (socket.writable && error.code !== 'ECONNRESET' && !answerStarted(socket)) {
      // Closed once the answer is written, whatever the peer does: `end()` alone would leave a peer that never
      // finishes its side (a slow sender, say) holding the connection.
      socket.write(parserErrorResponse(error));
      (socket as Duplex & { destroySoon(): void }).destroySoon();
    } else socket.destroy();
  });
  await server.ready();
  const address = server.node?.server?.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    server,
    url: `http://${options.hostname.includes(':') ? `[${options.hostname}]` : options.hostname}:${port}`,
  };
};
