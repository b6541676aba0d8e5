import { afterAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { createAccountWithKey, killChildren, runCli, sandbox, startServer } from '../support/processes.js';

describe('An openai model configured in the config file', () => {
  const cleanups: Array<() => unknown> = [];
  afterAll(async () => {
    await killChildren();
    for (const cleanup of cleanups) await cleanup();
  });

  it('answers `airs ask` end to end through a running server and a local OpenAI-compatible upstream', async () => {
    const upstream = await startFakeOpenAi();
    cleanups.push(() => upstream.close());
    process.env.E2E_UPSTREAM_KEY = 'sk-e2e-upstream';
    const box = sandbox('airs-openai');
    delete process.env.E2E_UPSTREAM_KEY;
    cleanups.push(() => box.remove());
    box.writeConfig({
      models: [
        {
          id: 'local-llm',
          provider: 'openai',
          baseUrl: upstream.baseUrl,
          upstreamModel: 'tiny',
          apiKeyEnv: 'E2E_UPSTREAM_KEY',
        },
      ],
      pollIntervalSeconds: 1,
    });
    const { key } = await createAccountWithKey(box, 'llm@example.com');
    const server = await startServer(box);
    // Without the key in its environment the server refuses to start, naming the variable.
    const noKey = sandbox('airs-openai-nokey');
    cleanups.push(() => noKey.remove());
    noKey.writeConfig({
      models: [
        { id: 'm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 't', apiKeyEnv: 'E2E_MISSING_KEY' },
      ],
    });
    const refused = await runCli(noKey, ['serve']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('E2E_MISSING_KEY is not set');
    const asked = await runCli(box, ['ask', '--model', 'local-llm', '--url', server.url, '--key', key, 'Say hi'], {
      timeoutMs: 30_000,
    });
    expect(asked.stderr).toBe('');
    expect(asked.code).toBe(0);
    expect(asked.stdout).toBe('upstream says: Say hi\n');
    expect(upstream.received.at(-1)).toMatchObject({
      authorization: 'Bearer sk-e2e-upstream',
      body: { model: 'tiny' },
    });
  }, 60_000);
});
