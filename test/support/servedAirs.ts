import { startFakeOpenAi } from './fakeOpenAi.js';
import { createAccountWithKey, fileSandboxes, type ServerProcess, startServer } from './processes.js';

/**
 * A real `airs serve` (a child process on 127.0.0.1) for the client-library tests, with the fake OpenAI upstream of
 * `fakeOpenAi.ts` behind its `llm` model, and an account's key on the `scale` plan. Models:
 * - `echo`: answers the last user message at once;
 * - `slow`: an echo that takes a minute (to stream or cancel while it waits);
 * - `doomed`: an echo whose attempts always time out, so its requests fail;
 * - `llm`: the `openai` provider against the fake upstream (upstream model `tiny-chat`), which streams, calls tools
 *   and reports usage; no retries inside an attempt, so a failed call is a failed attempt, and two attempts per
 *   request, so a retry is an attempt that sends the stored request again;
 * plus the extra models given (a function of the fake upstream's base URL for models of it).
 */
export type ServedAirs = {
  readonly server: ServerProcess;
  /** The server's root URL, without a trailing slash (clients take `${url}/v1`). */
  readonly url: string;
  readonly key: string;
  /** The server's sandbox (its config, data directory and CLI). */
  readonly box: ReturnType<ReturnType<typeof fileSandboxes>>;
  readonly upstream: Awaited<ReturnType<typeof startFakeOpenAi>>;
  /** The bodies the upstream received whose last message was `prompt`, in order. */
  sentFor(prompt: string): Record<string, unknown>[];
  stop(): Promise<void>;
};

export const servedAirs = () => {
  const newBox = fileSandboxes();
  return async (
    label: string,
    extra: readonly Record<string, unknown>[] | ((baseUrl: string) => readonly Record<string, unknown>[]) = [],
  ): Promise<ServedAirs> => {
    const upstream = await startFakeOpenAi();
    // Models of the fake upstream are given its base URL.
    const extraModels = typeof extra === 'function' ? extra(upstream.baseUrl) : extra;
    const box = newBox(label);
    box.writeConfig({
      models: [
        { id: 'echo', provider: 'echo' },
        { id: 'slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 },
        { id: 'doomed', provider: 'echo', delayMs: 60_000, timeoutMs: 1 },
        {
          id: 'llm',
          provider: 'openai',
          baseUrl: upstream.baseUrl,
          upstreamModel: 'tiny-chat',
          timeoutMs: 30_000,
          maxRetries: 0,
        },
        ...extraModels,
      ],
      processing: { concurrency: 8, maxAttempts: 2 },
    });
    let key: string;
    let server: ServerProcess;
    try {
      ({ key } = await createAccountWithKey(box, `${label}@example.com`, 'scale'));
      server = await startServer(box);
    } catch (error) {
      await upstream.close();
      throw error;
    }
    return {
      server,
      url: server.url,
      key,
      box,
      upstream,
      sentFor: (prompt) =>
        upstream.received.filter((call) => call.body.messages.at(-1)?.content === prompt).map((call) => call.body),
      stop: async () => {
        await server.stop();
        await upstream.close();
      },
    };
  };
};
