import { connect } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, listen, startTestApp, type TestApp } from '../support/testApp.js';

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

/** The answer's status line and its JSON body. */
const parsed = (answer: string) => ({
  statusLine: answer.slice(0, answer.indexOf('\r\n')),
  body: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string } },
});

describe('Requests that Node’s HTTP parser refuses or answers by itself', () => {
  let app: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  const logLines: Array<{ level: number; msg: string; err?: unknown }> = [];
  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line)) });
    app = await startTestApp({ logger });
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

  it('an HTTP/1.1 request without Host gets 400 in the contract’s shape (Node alone answers an empty 400)', async () => {
    const answer = parsed(await raw(server.url, 'GET /v1/ai?req_id=x HTTP/1.1\r\n\r\n'));
    expect(answer.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(answer.body).toEqual({
      error: { code: 'invalid_request', message: 'the Host header is required in HTTP/1.1' },
    });
  });

  it('an Expect other than 100-continue gets 417 in the contract’s shape', async () => {
    const answer = parsed(await raw(server.url, 'GET /v1/ai HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\n\r\n'));
    expect(answer.statusLine).toBe('HTTP/1.1 417 Expectation Failed');
    expect(answer.body.error).toEqual({
      code: 'invalid_request',
      message: 'Expect: bogus is not supported; only 100-continue is',
    });
  });

  it('CONNECT gets 405 with Allow in the contract’s shape instead of a closed connection', async () => {
    const text = await raw(server.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    const answer = parsed(text);
    expect(answer.statusLine).toBe('HTTP/1.1 405 Method Not Allowed');
    expect(text).toContain('Allow: GET, POST');
    expect(answer.body.error.code).toBe('method_not_allowed');
  });

  it('a body that is not valid UTF-8 is refused with 400 instead of being stored with U+FFFD in it', async () => {
    const { key } = await app.account();
    const body = Buffer.concat([Buffer.from('{"model":"echo","prompt":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    const response = await fetch(`${server.url}/v1/ai`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: { code: 'invalid_request', message: 'body is not valid UTF-8' } });
    // A real U+FFFD, sent as valid UTF-8, is text like any other.
    const valid = await fetch(`${server.url}/v1/ai`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'echo', prompt: 'caf\ufffd' }),
    });
    expect(valid.status).toBe(202);
  });

  it('a client that drops its connection mid-body is logged as one info line without an error, and the server keeps serving', async () => {
    const { key } = await app.account();
    const { hostname, port } = new URL(server.url);
    await new Promise<void>((resolve) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          `POST /v1/ai HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":"echo","pro`,
        );
        setTimeout(() => socket.destroy(), 100);
      });
      socket.on('close', () => resolve());
    });
    const logged = await eventually(
      async () => logLines.find((line) => line.msg.includes('closed its connection')),
      5_000,
    );
    expect(logged?.level).toBe(30);
    expect(logLines.filter((line) => line.level >= 50)).toEqual([]);
    const posted = await fetch(`${server.url}/v1/ai`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'echo', prompt: 'still here' }),
    });
    expect(posted.status).toBe(202);
  });
});
