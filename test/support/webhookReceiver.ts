import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';

/** A delivery as a receiver saw it: its headers, its body, and what the official SDK's `unwrap` made of it. */
export type ReceivedWebhook = {
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  /** The parsed event when `client.webhooks.unwrap()` accepted it; the SDK's error message when it refused it. */
  readonly verified?: { readonly id: string; readonly type: string; readonly data: { readonly id: string } };
  readonly refused?: string;
};

/**
 * A webhook receiver on 127.0.0.1, as an airs user writes one: it verifies each POST with the official `openai`
 * SDK's `client.webhooks.unwrap(body, headers, secret)` and answers 200 when it accepts it, 400 when the SDK refuses
 * it. Every delivery is kept, refused ones too, so a test can see both.
 */
export const startWebhookReceiver = async (secret: () => string) => {
  const client = new OpenAI({ apiKey: 'unused-by-webhooks' });
  const received: ReceivedWebhook[] = [];
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    try {
      const event = (await client.webhooks.unwrap(body, req.headers as Record<string, string>, secret())) as unknown;
      received.push({ headers: req.headers, body, verified: event as ReceivedWebhook['verified'] });
      res.writeHead(200).end();
    } catch (error) {
      received.push({ headers: req.headers, body, refused: (error as Error).message });
      res.writeHead(400).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};
