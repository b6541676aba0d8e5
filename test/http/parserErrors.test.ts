import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, startTestApp, type TestApp } from '../support/testApp.js';

/** Sends raw bytes and reads the whole answer until the server closes the connection. */
const raw = (url: string, bytes: string) =>
  new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer')));
  });

describe('Requests that Node’s HTTP parser refuses', () => {
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

  it('headers too large for the parser get 431 with the contract’s error shape', async () => {
    const answer = await raw(server.url, `GET /v1/ai HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(answer).toContain('Content-Type: application/json');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'invalid_request', message: 'request headers are too large' },
    });
  });

  it('a garbled request line gets 400 with the contract’s error shape, and the server keeps serving', async () => {
    const answer = await raw(server.url, 'THIS IS NOT HTTP\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error.code).toBe('invalid_request');
    const { key } = await app.account();
    const posted = await fetch(`${server.url}/v1/ai`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'echo', prompt: 'still here' }),
    });
    expect(posted.status).toBe(202);
  });

  it('a path with broken percent-encoding gets 400 with a message that says what is wrong', async () => {
    const response = await fetch(`${server.url}/%zz/%`);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('percent-encoding');
  });
});
