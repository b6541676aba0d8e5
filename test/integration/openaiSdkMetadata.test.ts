import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { createAccountWithKey, fileSandboxes, type ServerProcess, startServer } from '../support/processes.js';

/**
 * `metadata` through the official `openai` SDK against a real `airs serve` on LMDB: `responses.create` with it, then
 * `retrieve`, answer it; it is kept in the data directory (the request's record), so a server started again on the
 * same directory answers it too; beyond OpenAI's bounds the SDK raises its BadRequestError naming `metadata`.
 */

const newBox = fileSandboxes();
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) await server.stop();
});

const serve = async (box: ReturnType<typeof newBox>) => {
  const server = await startServer(box);
  servers.push(server);
  return server;
};

describe('metadata through the official openai SDK', { timeout: 60_000 }, () => {
  it('round-trips on create and retrieve, and survives a restart of the server on the same data directory', async () => {
    const box = newBox('airs-sdk-metadata');
    box.writeConfig({
      models: [
        { id: 'echo', provider: 'echo' },
        { id: 'slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 },
      ],
      // The slow request in flight is taken up again after the restart: the stop need not wait for it.
      shutdownGraceSeconds: 1,
    });
    const { key } = await createAccountWithKey(box, 'metadata@example.com', 'scale');
    const first = await serve(box);
    const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
    const sdk = client(first.url);

    const metadata = { team: 'search', 'trace id': 'abc-123', note: 'ünïcödé ✓' };
    const done = await sdk.responses.create({ model: 'echo', input: 'hello', metadata });
    expect(done.status).toBe('completed');
    expect(done.metadata).toEqual(metadata);
    expect((await sdk.responses.retrieve(done.id)).metadata).toEqual(metadata);

    const queued = await sdk.responses.create({
      model: 'slow',
      input: 'later',
      background: true,
      metadata: { a: 'b' },
    });
    expect(queued.metadata).toEqual({ a: 'b' });
    const plain = await sdk.responses.create({ model: 'echo', input: 'none' });
    expect(plain.metadata).toEqual({});

    expect(await first.stop()).toBe(0);
    const second = await serve(box);
    const again = client(second.url);
    const completedAfter = await again.responses.retrieve(done.id);
    expect(completedAfter).toMatchObject({ status: 'completed', metadata });
    expect((await again.responses.retrieve(queued.id)).metadata).toEqual({ a: 'b' });
    expect((await again.responses.retrieve(plain.id)).metadata).toEqual({});
    const cancelled = await again.responses.cancel(queued.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', metadata: { a: 'b' } });

    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const refused = await again.responses.create({ model: 'echo', input: 'x', metadata: tooMany }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect(refused).toMatchObject({ status: 400, param: 'metadata', type: 'invalid_request_error' });
    expect((refused as Error).message).toMatch(/at most 16 key-value pairs/);
    const tooLong = await again.responses.create({ model: 'echo', input: 'x', metadata: { k: 'v'.repeat(513) } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(tooLong).toMatchObject({ status: 400, param: 'metadata' });
    expect((tooLong as Error).message).toMatch(/at most 512 characters/);
  });
});
