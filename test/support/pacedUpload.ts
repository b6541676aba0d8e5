import { request } from 'node:http';

/**
 * An upload to `POST /v1/files` as a slow client sends it, over a real socket (node:http): the form's head, then the
 * file's bytes a chunk at a time with a pause after each, then its closing boundary; with its size declared
 * (`Content-Length`) or chunked. It stops sending as soon as the server answers, and says how many of the file's bytes
 * it had handed over by then: an upload refused before its bytes were read is answered long before they are all sent.
 */
export type PacedUpload = {
  readonly fileBytes: number;
  /** Declare the body's size (Content-Length); false: chunked. Default true. */
  readonly declare?: boolean;
  readonly chunkBytes?: number;
  readonly pauseMs?: number;
  readonly purpose?: string;
};

export type PacedAnswer = {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Record<string, unknown>;
  /** The file's bytes handed to the socket when the answer's head arrived. */
  readonly sentAtAnswer: number;
  readonly fileBytes: number;
};

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

export const pacedUpload = (url: string, key: string, upload: PacedUpload): Promise<PacedAnswer> => {
  const { fileBytes, declare = true, chunkBytes = 128 * 1024, pauseMs = 100, purpose = 'batch' } = upload;
  const boundary = `airs-paced-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="paced.jsonl"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const chunk = Buffer.alloc(chunkBytes, 'x');
  return new Promise<PacedAnswer>((resolve, reject) => {
    let sent = 0;
    let answered: { status: number; headers: PacedAnswer['headers']; sentAtAnswer: number } | undefined;
    const req = request(`${url}/v1/files`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        ...(declare ? { 'content-length': String(head.length + fileBytes + tail.length) } : {}),
      },
    });
    req.on('response', (response) => {
      answered = { status: response.statusCode ?? 0, headers: response.headers, sentAtAnswer: sent };
      const parts: Buffer[] = [];
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        resolve({ ...(answered as NonNullable<typeof answered>), body: JSON.parse(text), fileBytes });
        req.destroy();
      });
      response.on('error', reject);
    });
    // A server that answered and closed while the body was still being sent: the answer is what counts.
    req.on('error', (error) => {
      if (answered === undefined) reject(error);
    });
    void (async () => {
      req.write(head);
      while (sent < fileBytes && answered === undefined && !req.destroyed) {
        const size = Math.min(chunkBytes, fileBytes - sent);
        req.write(size === chunkBytes ? chunk : chunk.subarray(0, size));
        sent += size;
        await sleep(pauseMs);
      }
      if (answered === undefined && !req.destroyed) req.end(tail);
    })();
  });
};

/** A form sent whole as it is written (malformed ones included), over a real socket. */
export const rawUpload = async (url: string, key: string, boundary: string, body: string) => {
  const response = await fetch(`${url}/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};
