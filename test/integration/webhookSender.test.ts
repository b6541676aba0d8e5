import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Resolver } from '../../src/adapters/webhooks/destination.js';
import { sendWebhook } from '../../src/adapters/webhooks/sender.js';
import { webhookUrlProblem } from '../../src/adapters/webhooks/urlCheck.js';
import { newWebhookSecret, signWebhook } from '../../src/app/webhooks/signing.js';
import { webhookBody } from '../../src/domain/webhook/envelope.js';
import { webhookEventId } from '../../src/domain/webhook/eventTypes.js';
import { startWebhookReceiver, type WebhookReceiver, webhookTls } from '../support/webhookReceiver.js';

// Issue 30, "Safe by default" and "OpenAI's envelope": one delivery attempt, sent over a real socket to a receiver
// on 127.0.0.1 that checks it with the official `openai` SDK. Only https, only public addresses (each checked once,
// and the connection made to it), no redirects, at most 64 KiB of the answer, a bound on the time.

const secret = newWebhookSecret();
const signed = () => {
  const id = webhookEventId(`req_${randomBytes(26).toString('base64url').slice(0, 34)}`, 'request.completed');
  const body = webhookBody({ id, type: 'request.completed', createdAtMs: Date.now(), data: { id: 'req_abc' } });
  return { id, body, headers: signWebhook({ id, timestampMs: Date.now(), body, secrets: [secret] }) };
};
/** What the tests' receivers need: plain http on 127.0.0.1. */
const local = { allowHttp: true, allowPrivateNetworks: true };

/** A resolver that answers from a table, counting the questions it is asked. */
const tableResolver = (table: Record<string, string[][]>) => {
  const asked: string[] = [];
  const resolve: Resolver = async (hostname) => {
    const answers = table[hostname];
    const answer = answers?.[Math.min(asked.filter((name) => name === hostname).length, answers.length - 1)];
    asked.push(hostname);
    if (answer === undefined)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, asked };
};

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver.close();
});

describe('sending a webhook', () => {
  it('a 2xx is delivered, and what arrives is the signed body, accepted by the openai SDK', async () => {
    const { id, body, headers } = signed();
    const before = receiver.received.length;
    const attempt = await sendWebhook({ url: receiver.url('/ok?from=airs'), body, headers }, local);
    expect(attempt).toMatchObject({ delivered: true, outcome: 'delivered', status: 200, error: undefined });
    expect(attempt.address).toBe('127.0.0.1');
    expect(attempt.latencyMs).toBeGreaterThanOrEqual(0);
    const arrived = receiver.received[before];
    expect(arrived?.path).toBe('/ok?from=airs');
    expect(arrived?.body).toBe(body);
    expect(arrived?.headers['content-type']).toBe('application/json');
    const event = await new OpenAI({ apiKey: 'x', webhookSecret: secret }).webhooks.unwrap(
      arrived?.body ?? '',
      arrived?.headers as Record<string, string>,
    );
    expect(event).toMatchObject({ id, object: 'event', type: 'request.completed', data: { id: 'req_abc' } });
  });

  it('a 500 is not delivered, and says so', async () => {
    const attempt = await sendWebhook({ ...signed(), url: receiver.url('/status/500') }, local);
    expect(attempt).toMatchObject({ delivered: false, outcome: 'rejected', status: 500, error: 'answered 500' });
  });

  it('a 302 is a failed attempt, and the redirect is not followed', async () => {
    const before = receiver.received.length;
    const attempt = await sendWebhook({ ...signed(), url: receiver.url('/redirect') }, local);
    expect(attempt).toMatchObject({ delivered: false, outcome: 'redirected', status: 302 });
    expect(attempt.error).toMatch(/302, a redirect, which is not followed/);
    expect(receiver.received.slice(before).map((request) => request.path)).toEqual(['/redirect']);
  });

  it('a receiver that never answers ends the attempt at the time allowed, and its connection is closed', async () => {
    const closedBefore = receiver.counters.closedHanging;
    const attempt = await sendWebhook({ ...signed(), url: receiver.url('/hang') }, { ...local, timeoutMs: 300 });
    expect(attempt).toMatchObject({ delivered: false, outcome: 'timeout', status: undefined });
    expect(attempt.error).toBe('no answer within 300 ms');
    expect(attempt.latencyMs).toBeGreaterThanOrEqual(290);
    expect(attempt.latencyMs).toBeLessThan(10_000);
    await vi.waitFor(() => expect(receiver.counters.closedHanging).toBe(closedBefore + 1));
  });

  it('an answer that never ends is read to 64 KiB and no further; its 200 still counts', async () => {
    const attempt = await sendWebhook({ ...signed(), url: receiver.url('/huge') }, local);
    expect(attempt).toMatchObject({ delivered: true, status: 200, answerBytes: 64 * 1024, answerCut: true });
  });

  it('a closed port is a failed attempt that says why, never an exception', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const attempt = await sendWebhook({ ...signed(), url: `http://127.0.0.1:${port}/ok` }, local);
    expect(attempt).toMatchObject({ delivered: false, outcome: 'unreachable', status: undefined });
    expect(attempt.error).toMatch(/ECONNREFUSED/);
  });

  it('a resolver that never answers is bounded by the same time', async () => {
    const attempt = await sendWebhook(
      { ...signed(), url: 'https://never.example/hook' },
      { timeoutMs: 200, resolve: () => new Promise(() => {}) },
    );
    expect(attempt).toMatchObject({ delivered: false, outcome: 'timeout' });
  });
});

describe('what a webhook may not be sent to', () => {
  const httpOnly = { allowHttp: true };
  it.each([
    ['127.0.0.1', (port: number) => `http://127.0.0.1:${port}/ok`, /^127\.0\.0\.1 is a loopback address/],
    ['10.x', () => 'http://10.1.2.3/ok', /^10\.1\.2\.3 is a private \(RFC 1918\) address/],
    ['the metadata service', () => 'http://169.254.169.254/latest/meta-data/', /is a cloud metadata address/],
    ['::1', (port: number) => `http://[::1]:${port}/ok`, /^::1 is a loopback address/],
    [
      '::ffff:127.0.0.1',
      (port: number) => `http://[::ffff:127.0.0.1]:${port}/ok`,
      /^::ffff:7f00:1 is an IPv4-mapped form of a loopback address/,
    ],
    ['a name for 127.0.0.1', (port: number) => `http://localhost:${port}/ok`, /^localhost resolves to \S+, a loopback/],
  ])('%s is refused, at connect time and when added, and nothing is sent', async (_, urlOf, words) => {
    const before = receiver.received.length;
    const url = urlOf(receiver.port);
    const attempt = await sendWebhook({ ...signed(), url }, httpOnly);
    expect(attempt).toMatchObject({ delivered: false, outcome: 'refused', status: undefined });
    expect(attempt.error).toMatch(words);
    expect(attempt.error).toMatch(/webhooks\.allowPrivateNetworks/);
    expect(await webhookUrlProblem(url, httpOnly)).toMatch(words);
    expect(receiver.received.length).toBe(before);
  });

  it('http:// is refused unless the operator allows it, and nothing is sent', async () => {
    const before = receiver.received.length;
    const url = receiver.url('/ok');
    const attempt = await sendWebhook({ ...signed(), url }, { allowPrivateNetworks: true });
    expect(attempt).toMatchObject({ delivered: false, outcome: 'refused' });
    expect(attempt.error).toMatch(/must start with https:\/\/.*webhooks\.allowHttp/);
    expect(await webhookUrlProblem(url, { allowPrivateNetworks: true })).toMatch(/https:\/\//);
    expect(receiver.received.length).toBe(before);
  });

  it('a name that resolves to a public and a private address is refused, whichever a client would pick', async () => {
    const { resolve } = tableResolver({ 'mixed.test': [['8.8.8.8', '127.0.0.1']] });
    const attempt = await sendWebhook({ ...signed(), url: 'https://mixed.test/hook' }, { resolve });
    expect(attempt).toMatchObject({ outcome: 'refused' });
    expect(attempt.error).toMatch(/^mixed\.test resolves to 127\.0\.0\.1, a loopback address/);
  });

  it.each([
    ['a user and password', 'https://user:pw@example.com/hook', /user name or password/],
    ['another scheme', 'ftp://example.com/hook', /https:\/\//],
    ['no URL at all', 'example.com/hook', /absolute URL/],
    ['a URL too long', `https://example.com/${'a'.repeat(3_000)}`, /at most 2048 characters/],
    ['a host that does not resolve', 'https://nowhere.test/hook', /nowhere\.test could not be resolved \(ENOTFOUND\)/],
  ])('%s is refused when an endpoint is added', async (_, url, words) => {
    expect(await webhookUrlProblem(url, {}, tableResolver({}).resolve)).toMatch(words);
  });

  it('a public address is accepted when added', async () => {
    const { resolve } = tableResolver({
      'hooks.example': [['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']],
    });
    expect(await webhookUrlProblem('https://hooks.example/in', {}, resolve)).toBeUndefined();
    expect(await webhookUrlProblem('https://8.8.8.8/in', {}, resolve)).toBeUndefined();
  });
});

describe('https delivery to the address checked', () => {
  let tlsReceiver: WebhookReceiver;
  beforeAll(async () => {
    tlsReceiver = await startWebhookReceiver({ tls: true });
  });
  afterAll(async () => {
    await tlsReceiver.close();
  });

  it('connects to the address its one lookup gave, sending the host name as Host and SNI (no DNS rebinding)', async () => {
    // A name that resolves to the receiver when checked, and elsewhere on any later lookup.
    const { resolve, asked } = tableResolver({ 'webhooks.test': [['127.0.0.1'], ['10.9.9.9']] });
    const { body, headers } = signed();
    const url = `https://webhooks.test:${tlsReceiver.port}/ok`;
    const attempt = await sendWebhook(
      { url, body, headers },
      { allowPrivateNetworks: true, resolve, ca: webhookTls.cert },
    );
    expect(attempt).toMatchObject({ delivered: true, status: 200, address: '127.0.0.1' });
    expect(asked).toEqual(['webhooks.test']);
    const arrived = tlsReceiver.received.at(-1);
    expect(arrived?.headers.host).toBe(`webhooks.test:${tlsReceiver.port}`);
    expect(arrived?.servername).toBe('webhooks.test');
    await new OpenAI({ apiKey: 'x', webhookSecret: secret }).webhooks.unwrap(
      arrived?.body ?? '',
      arrived?.headers as Record<string, string>,
    );
  });

  it('a certificate for another name is a failed attempt: TLS is checked against the URL’s host', async () => {
    const attempt = await sendWebhook(
      { ...signed(), url: tlsReceiver.url('/ok') },
      { allowPrivateNetworks: true, ca: webhookTls.cert },
    );
    expect(attempt).toMatchObject({ delivered: false, outcome: 'unreachable' });
    expect(attempt.error).toMatch(/altnames|certificate/i);
  });

  it('a certificate no trusted authority signed is a failed attempt', async () => {
    const { resolve } = tableResolver({ 'webhooks.test': [['127.0.0.1']] });
    const url = `https://webhooks.test:${tlsReceiver.port}/ok`;
    const attempt = await sendWebhook({ ...signed(), url }, { allowPrivateNetworks: true, resolve });
    expect(attempt).toMatchObject({ delivered: false, outcome: 'unreachable' });
    expect(attempt.error).toMatch(/certificate/i);
  });
});

describe('kept-alive connections (connections.ts)', () => {
  /** A receiver counting the connections it accepts: `/huge` answers more than 64 KiB. */
  const counting = async () => {
    const { createServer: createHttpServer } = await import('node:http');
    let connections = 0;
    const server = createHttpServer((incoming, answer) => {
      incoming.resume();
      incoming.on('end', () => {
        if (incoming.url === '/huge') answer.end('x'.repeat(200 * 1024));
        else answer.end('ok');
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    return {
      url: (path: string) => `http://hooks.test:${port}${path}`,
      connections: () => connections,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  };

  it('reuses one connection for posts whose own checks came to the same address, and never one cut at 64 KiB', async () => {
    const { createConnectionPools } = await import('../../src/adapters/webhooks/connections.js');
    const server = await counting();
    const connections = createConnectionPools();
    const { resolve, asked } = tableResolver({ 'hooks.test': [['127.0.0.1']] });
    const options = { ...local, resolve, connections };
    try {
      for (let i = 0; i < 3; i++)
        expect(await sendWebhook({ ...signed(), url: server.url('/ok') }, options)).toMatchObject({ delivered: true });
      // Each post checked the name afresh, and all three went over one connection to the address it gave.
      expect(asked).toEqual(['hooks.test', 'hooks.test', 'hooks.test']);
      expect(server.connections()).toBe(1);
      // An answer cut at the bound leaves its connection unusable: it is closed, and the next post opens another.
      expect(await sendWebhook({ ...signed(), url: server.url('/huge') }, options)).toMatchObject({ answerCut: true });
      expect(await sendWebhook({ ...signed(), url: server.url('/ok') }, options)).toMatchObject({ delivered: true });
      expect(server.connections()).toBe(2);
      // Without pools, one connection per post.
      await sendWebhook({ ...signed(), url: server.url('/ok') }, { ...local, resolve });
      await sendWebhook({ ...signed(), url: server.url('/ok') }, { ...local, resolve });
      expect(server.connections()).toBe(4);
    } finally {
      connections.close();
      await server.close();
    }
  });
});
