import { describe, expect, it } from 'vitest';
import { cliJson, createAccountWithKey, fileSandboxes, startServer } from '../support/processes.js';

const newBox = fileSandboxes();

const submitWithKey = async (url: string, key: string, idempotencyKey: string, prompt: string) => {
  const response = await fetch(`${url}/v1/ai`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ model: 'echo', prompt }),
  });
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    body: (await response.json()) as { request_id?: string; error?: { code: string } },
  };
};

describe('an Idempotency-Key across a SIGKILL and restart of the server', () => {
  it('still answers a repeat with the request acknowledged before the kill, and still refuses another body', {
    timeout: 30_000,
  }, async () => {
    const box = newBox('airs-idem-restart');
    const { key } = await createAccountWithKey(box, 'idem@example.com', 'scale');
    const first = await startServer(box);
    const made = await submitWithKey(first.url, key, 'retry-me', 'a prompt');
    expect(made.status).toBe(202);
    // Killed right after the 202: the key was committed with the request, so it survives.
    await first.stop('SIGKILL');

    const second = await startServer(box);
    try {
      const again = await submitWithKey(second.url, key, 'retry-me', 'a prompt');
      expect(again).toMatchObject({ status: 202, replayed: 'true', body: { request_id: made.body.request_id } });
      const other = await submitWithKey(second.url, key, 'retry-me', 'another prompt');
      expect(other).toMatchObject({ status: 422, body: { error: { code: 'idempotency_key_reused' } } });
    } finally {
      await second.stop();
    }
    const replay = await cliJson<{ events: Array<{ type: string; idempotencyKey?: string }> }>(box, [
      'replay',
      '--json',
    ]);
    expect(replay.events.filter((e) => e.type === 'RequestQueued')).toEqual([
      expect.objectContaining({ idempotencyKey: 'retry-me' }),
    ]);
    const verified = await cliJson<{ differences: string[] }>(box, ['replay', '--verify', '--json']);
    expect(verified.differences).toEqual([]);
  });
});
