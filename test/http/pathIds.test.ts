import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { listen, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * Ids in paths are percent-decoded (contract 13): a Hugging Face-style model id behind vLLM (`org/model-x`), which the
 * SDKs send as `org%2Fmodel-x`, names its model, as it does in a create's body.
 */

let app: TestApp | undefined;
let server: Awaited<ReturnType<typeof listen>> | undefined;
afterEach(async () => {
  await server?.close();
  await app?.stop();
  server = undefined;
  app = undefined;
});

describe('Path ids', () => {
  it('are percent-decoded: models.retrieve("org/model-x") of the official SDK finds the model', async () => {
    app = await startTestApp({
      config: {
        models: [
          { id: 'org/model-x', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
          { id: 'with space', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
        ],
      },
    });
    server = await listen(app);
    const { key } = await app.account();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });
    expect(await client.models.retrieve('org/model-x')).toMatchObject({ id: 'org/model-x', object: 'model' });
    expect(await client.models.retrieve('with space')).toMatchObject({ id: 'with space' });
    await expect(client.models.retrieve('org/model-y')).rejects.toMatchObject({
      status: 404,
      message: expect.stringContaining('no model "org/model-y"'),
    });
  });

  // h3 already turns escapes of unreserved characters (all a response id holds) back into them before routing; this
  // holds the face to it whichever layer does it.
  it('are percent-decoded for responses too: an id sent encoded names the same request', async () => {
    app = await startTestApp();
    const { key } = await app.account();
    const created = await app.call('POST', '/v1/responses', {
      key,
      body: { model: 'echo', input: 'encoded', background: true },
    });
    const { id } = (await created.json()) as { id: string };
    const encoded = [...id].map((char) => `%${char.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    const retrieved = await app.call('GET', `/v1/responses/${encoded}`, { key });
    expect(retrieved.status).toBe(200);
    expect(await retrieved.json()).toMatchObject({ id });
  });
});
