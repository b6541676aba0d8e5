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
    expect(await checkUpstream(baseUrl, undefined, 'llama-3-8b', 300)).toEqual({
      problem: { kind: 'timeout', afterMs: 300 },
    });
  });

  it('reads a bounded part of an endless answer, and says it could not confirm the model', async () => {
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
    expect(await checkUpstream(baseUrl, undefined, 'llama-3-8b', 3_000)).toEqual({
      unconfirmed: 'its /models answer is larger than 1 MiB',
    });
    // Well under what an endless answer would have sent in the check's 3 s.
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });

  it('sends the model’s key as the model’s calls do, and names the status of a refusal', async () => {
    const seen: (string | undefined)[] = [];
    const baseUrl = await serve((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      res.writeHead(403).end();
    });
    expect(await checkUpstream(`${baseUrl}/`, 'sk-check', 'llama-3-8b', 3_000)).toEqual({
      problem: { kind: 'status', status: 403 },
    });
    expect(seen).toEqual(['GET /v1/models Bearer sk-check']);
  });

  it('finds an upstream that lists the model serving it, and one that lists other models not serving it, naming a few of those', async () => {
    const listing = (ids: readonly string[]) =>
      serve((_req, res) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ object: 'list', data: ids.map((id) => ({ id, object: 'model' })) })),
      );
    const vllm = await listing(['meta-llama/Llama-3.1-8B-Instruct']);
    expect(await checkUpstream(vllm, undefined, 'meta-llama/Llama-3.1-8B-Instruct', 3_000)).toEqual({});
    expect(await checkUpstream(vllm, undefined, 'llama-wrongname', 3_000)).toEqual({
      problem: {
        kind: 'modelNotServed',
        upstreamModel: 'llama-wrongname',
        served: ['meta-llama/Llama-3.1-8B-Instruct'],
        more: false,
      },
    });
    // Ollama lists the tag it serves a bare name as.
    const ollama = await listing(['llama3:latest', 'qwen2:7b']);
    expect(await checkUpstream(ollama, undefined, 'llama3', 3_000)).toEqual({});
    expect(await checkUpstream(ollama, undefined, 'qwen2', 3_000)).toMatchObject({
      problem: { kind: 'modelNotServed' },
    });
    // Many models, and ids made to break a log line: a few are named, each short and on one line.
    const crowded = await listing([`evil\n${'x'.repeat(300)}`, ...Array.from({ length: 50 }, (_, i) => `m${i}`)]);
    const found = await checkUpstream(crowded, undefined, 'absent', 3_000);
    expect(found.problem).toMatchObject({ kind: 'modelNotServed', more: true });
    const served = (found.problem as { served: readonly string[] }).served;
    expect(served).toHaveLength(5);
    expect(served[0]).toBe(`evil ${'x'.repeat(95)}`);
  });

  it('says it could not confirm the model when the upstream answers something that is not a list of models', async () => {
    const notAList = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>hi</h1>'));
    expect(await checkUpstream(notAList, undefined, 'llama-3-8b', 3_000)).toEqual({
      unconfirmed: 'its /models answer is not JSON',
    });
    const noData = await serve((_req, res) => res.writeHead(200).end('{"models":["llama-3-8b"]}'));
    expect(await checkUpstream(noData, undefined, 'llama-3-8b', 3_000)).toEqual({
      unconfirmed: 'its /models answer is not a list of models',
    });
  });
});
