import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, startTestApp, type TestApp } from '../support/testApp.js';

/** Sends one request with `Connection: close` over a raw socket; resolves with the answer's status line. */
const statusLine = (url: string, request: string) =>
  new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('end', () => resolve(answer.slice(0, answer.indexOf('\r\n'))));
    socket.on('error', reject);
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer')));
  });

const get = (path: string, headers = '') => `GET ${path} HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`;

describe('HTTP status lines', () => {
  let app: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    app = await startTestApp();
    server = await listen(app);
  });
  afterAll(async () => {
    await server.close();
    await app.stop();
  });

  it('carry the standard reason phrase for what the routes answer: 200, 202, 401, 404 and 503', async () => {
    const { key } = await app.account();
    expect(await statusLine(server.url, get('/healthz'))).toBe('HTTP/1.1 200 OK');
    const body = JSON.stringify({ model: 'echo', prompt: 'a status line' });
    expect(
      await statusLine(
        server.url,
        `POST /v1/ai HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ),
    ).toBe('HTTP/1.1 202 Accepted');
    expect(await statusLine(server.url, get('/v1/ai?req_id=req_x'))).toBe('HTTP/1.1 401 Unauthorized');
    expect(await statusLine(server.url, get('/no-such-page'))).toBe('HTTP/1.1 404 Not Found');
    app.stopAccepting();
    expect(await statusLine(server.url, get('/readyz'))).toBe('HTTP/1.1 503 Service Unavailable');
  });
});
