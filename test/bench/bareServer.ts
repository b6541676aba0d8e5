/**
 * Child process: the baseline. A bare `node:http` server answering the same two routes as airs with fixed bodies
 * of the same shape, and nothing else: no auth, no rate limit, no validation, no storage. The POST body is read to
 * its end before the answer, as airs does.
 *
 * Usage: PORT=0 node bareServer.js   (prints `bare listening on http://127.0.0.1:PORT/`)
 */
import { createServer } from 'node:http';

const reqId = 'req_AAAAAAAAAAAAAAAAAAAAAA';
const accepted = JSON.stringify({ request_id: reqId, model: 'echo' });
const completed = JSON.stringify({ req_id: reqId, status: 'completed', model: 'echo', response: 'hello' });
const notFound = JSON.stringify({ error: { code: 'not_found', message: 'no such path' } });

const send = (res: import('node:http').ServerResponse, status: number, body: string) => {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
};

const server = createServer((req, res) => {
  const path = req.url?.split('?')[0];
  if (path === '/v1/ai' && req.method === 'POST') {
    req.on('data', () => {});
    req.on('end', () => send(res, 202, accepted));
    return;
  }
  if (path === '/v1/ai' && req.method === 'GET') return send(res, 200, completed);
  req.resume();
  send(res, 404, notFound);
});

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  process.stdout.write(`bare listening on http://127.0.0.1:${port}/\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.on('SIGINT', () => server.close(() => process.exit(0)));
