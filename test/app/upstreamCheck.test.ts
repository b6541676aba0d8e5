import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkUpstream } from '../../src/adapters/models/upstreamCheck.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A local server on 127.0.0.1 that answers every call with `handle`. */
const serve = async (handle: Parameters<typeof createServer>[1]) => {
  const server = createServer(handle);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
};

describe('The check of an upstream', () => {
  it('says an upstream that never answers did not answer in time, once its bound has passed', async () => {
    const baseUrl = await serve(() => {});
    expect(await checkUpstream(baseUrl, undefined, 300)).toEqual({ kind: 'timeout', afterMs: 300 });
  });

  it('reads a bounded part of an endless answer, and finds the upstream answering', async () => {
    let written = 0;
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      const more = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    });
    expect(await checkUpstream(baseUrl, undefined, 3_000)).toBeUndefined();
    // Well under what an endless answer would have sent in the check's 3 s.
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });

  it('sends the model’s key as the model’s calls do, and names the status of a refusal', async () => {
    const seen: (string | undefined)[] = [];
    const baseUrl = await serve((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      res.writeHead(403).end();
    });
    expect(await checkUpstream(`${baseUrl}/`, 'sk-check', 3_000)).toEqual({ kind: 'status', status: 403 });
    expect(seen).toEqual(['GET /v1/models Bearer sk-check']);
  });
});
