/**
 * Child process: the webhook receiver of `--only=webhooks`, a bare `node:http` server on 127.0.0.1 that answers every
 * post `200` as soon as its body has arrived and records, by `webhook-id`, when the post arrived (its headers, epoch
 * ms, the clock the server's events carry), how many times, and the event's `data.id` (the request it is about).
 *
 * Run with an IPC channel: prints `webhook receiver listening on http://127.0.0.1:PORT`, then answers
 * `{type: 'count'}` with `{posts, distinct}` and `{type: 'take'}` with every receipt so far.
 */
import { createServer } from 'node:http';

export type Receipt = {
  readonly webhookId: string;
  /** `data.id` of the body: the `req_…` id the event is about ('' when the body was not an event). */
  readonly dataId: string;
  readonly type: string;
  /** When the first post with this id arrived, epoch ms. */
  readonly at: number;
  /** Posts with this id (1: delivered exactly once). */
  readonly count: number;
};

export type ReceiverAsk = { readonly type: 'count' } | { readonly type: 'take' };
export type ReceiverAnswer =
  | { readonly type: 'count'; readonly posts: number; readonly distinct: number }
  | { readonly type: 'take'; readonly receipts: readonly Receipt[]; readonly malformed: number };

// Bounds on what a post may hold: a delivery's body is a few hundred bytes, its id under 100 characters.
const maxBodyBytes = 64 * 1024;
const maxIdLength = 200;

type Entry = { webhookId: string; dataId: string; type: string; at: number; count: number };
const receipts = new Map<string, Entry>();
let posts = 0;
/** Posts without a usable `webhook-id`, or whose body was not an event. */
let malformed = 0;

const parseEvent = (body: string): { dataId: string; type: string } | undefined => {
  try {
    const event = JSON.parse(body) as { type?: unknown; data?: { id?: unknown } };
    return typeof event.type === 'string' && typeof event.data?.id === 'string'
      ? { dataId: event.data.id, type: event.type }
      : undefined;
  } catch {
    return undefined;
  }
};

const server = createServer((request, response) => {
  const at = Date.now();
  const header = request.headers['webhook-id'];
  const chunks: Buffer[] = [];
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= maxBodyBytes) chunks.push(chunk);
  });
  request.on('end', () => {
    response.writeHead(200, { 'content-length': '0' });
    response.end();
    posts++;
    const event = size <= maxBodyBytes ? parseEvent(Buffer.concat(chunks).toString('utf8')) : undefined;
    if (typeof header !== 'string' || header.length > maxIdLength || event === undefined) {
      malformed++;
      return;
    }
    const seen = receipts.get(header);
    if (seen === undefined) receipts.set(header, { webhookId: header, ...event, at, count: 1 });
    else seen.count++;
  });
});
// A delivery's connection is kept alive by the sender; never let an idle one hold the receiver up.
server.keepAliveTimeout = 30_000;

const send = process.send?.bind(process);
if (send === undefined) throw new Error('webhookReceiver runs as a child with an IPC channel');
process.on('message', (ask: ReceiverAsk) => {
  if (ask.type === 'count') send({ type: 'count', posts, distinct: receipts.size } satisfies ReceiverAnswer);
  else send({ type: 'take', receipts: [...receipts.values()], malformed } satisfies ReceiverAnswer);
});
process.on('disconnect', () => process.exit(0));
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`webhook receiver listening on http://127.0.0.1:${port}\n`);
});
