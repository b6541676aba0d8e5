import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openAiProvider } from '../../src/adapters/models/openai.js';
import { maxWordsChars } from '../../src/adapters/models/upstreamWords.js';
import { causeOf, saidOf } from '../../src/app/upstreamProblems.js';
import { UpstreamFailed } from '../../src/ports/ModelProvider.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** An upstream on 127.0.0.1 that answers every call with `status` and `body`. */
const upstreamAnswering = async (status: number, body: string | Buffer) => {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { baseUrl };
};

/** What one call to `baseUrl` fails with. */
const failureOf = async (baseUrl: string): Promise<UpstreamFailed> => {
  const provider = openAiProvider({
    baseUrl,
    apiKey: undefined,
    upstreamModel: 'llama-wrongname',
    timeoutMs: 5_000,
    maxRetries: 0,
    maxAnswerBytes: 1024 * 1024,
  });
  const error = await provider.generate({ prompt: 'hi', signal: AbortSignal.timeout(10_000) }).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(UpstreamFailed);
  return error as UpstreamFailed;
};

describe("An upstream's own words about a failure", () => {
  it("are kept from vLLM's and OpenAI's error bodies, for the log and the operator, and not told to the caller", async () => {
    const vllm = await upstreamAnswering(
      404,
      JSON.stringify({ object: 'error', message: 'The model `llama-wrongname` does not exist.', code: 404 }),
    );
    const fromVllm = await failureOf(vllm.baseUrl);
    expect(fromVllm.message).toBe(
      `upstream ${vllm.baseUrl} answered 404: The model \`llama-wrongname\` does not exist.`,
    );
    expect(fromVllm.problem).toEqual({
      kind: 'status',
      status: 404,
      said: 'The model `llama-wrongname` does not exist.',
    });
    expect(causeOf(fromVllm.problem)).toBe(
      'answered 404: is `/v1` missing from its baseUrl? (the upstream said: The model `llama-wrongname` does not exist.)',
    );
    // Neither the caller nor `/readyz` (no detail) hears them.
    expect(saidOf(fromVllm.problem)).toBe("the model's upstream refused the request (404)");
    expect(causeOf(fromVllm.problem, false)).toBe('answered 404: is `/v1` missing from its baseUrl?');

    const openai = await upstreamAnswering(
      400,
      JSON.stringify({ error: { message: 'max_tokens is too large', type: 'invalid_request_error' } }),
    );
    expect((await failureOf(openai.baseUrl)).message).toBe(
      `upstream ${openai.baseUrl} answered 400: max_tokens is too large`,
    );

    const empty = await upstreamAnswering(404, '');
    expect((await failureOf(empty.baseUrl)).message).toBe(`upstream ${empty.baseUrl} answered 404 (no body)`);
  });

  it('are bounded and on one line, however much the upstream writes and whatever characters it sends', async () => {
    const long = `line one\nline two\u0000\u001b[31m${'€'.repeat(2_000)}`;
    const noisy = await upstreamAnswering(400, JSON.stringify({ object: 'error', message: long }));
    const { problem, message } = await failureOf(noisy.baseUrl);
    const said = (problem as { said?: string }).said ?? '';
    expect(said.startsWith('line one line two [31m€€€')).toBe(true);
    expect(said.length).toBe(maxWordsChars);
    expect(said.endsWith('…')).toBe(true);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: they are what must not be there.
    expect(message).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);

    // A body of 8 MiB that is no JSON: a bounded part of it is read, and its text is the words.
    const huge = await upstreamAnswering(500, Buffer.alloc(8 * 1024 * 1024, 'a'));
    const failed = await failureOf(huge.baseUrl);
    expect((failed.problem as { said?: string }).said).toHaveLength(maxWordsChars);
  });
});
