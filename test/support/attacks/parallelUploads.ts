import { type Answer, countStatuses, repeatedBytes, uploadFile } from './client.js';

/**
 * Issue 40, finding 3: one free account sends `uploads` large files at once (the issue: 10 of 199 MiB against a
 * 1 GiB quota). Before the fix the quota is decided after the bytes are written: half are refused, but all are
 * written first, and the data file never shrinks. The files are streamed from one reused buffer (never whole here).
 */
export type ParallelUploadsOptions = {
  readonly url: string;
  readonly attackerKey: string;
  readonly uploads: number;
  readonly fileBytes: number;
  readonly timeoutMs: number;
};

export type ParallelUploadsOutcome = {
  readonly statuses: Readonly<Record<string, number>>;
  /** Each upload: status, seconds, and the error's code when refused. */
  readonly each: readonly { readonly status: number; readonly seconds: number; readonly code?: string }[];
  readonly seconds: number;
};

/** One MiB of JSONL lines (a real batch input repeated): what the uploads are made of. */
export const mebibyteOfLines = (): Buffer => {
  const line = Buffer.from(
    `${JSON.stringify({
      custom_id: 'c',
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'echo', messages: [{ role: 'user', content: 'x'.repeat(100) }] },
    })}\n`,
  );
  const chunk = Buffer.alloc(1024 * 1024, 0x0a);
  for (let at = 0; at + line.length <= chunk.length; at += line.length) line.copy(chunk, at);
  return chunk;
};

const codeOf = (answer: Answer): string | undefined => {
  try {
    return (JSON.parse(answer.text) as { error?: { code?: string } }).error?.code ?? undefined;
  } catch {
    return undefined;
  }
};

export const parallelUploads = async (options: ParallelUploadsOptions): Promise<ParallelUploadsOutcome> => {
  const chunk = mebibyteOfLines();
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: options.uploads }, (_, i) =>
      uploadFile(options.url, options.attackerKey, repeatedBytes(options.fileBytes, chunk), {
        filename: `large-${i}.jsonl`,
        fileBytes: options.fileBytes,
        timeoutMs: options.timeoutMs,
      }),
    ),
  );
  return {
    statuses: countStatuses(answers),
    each: answers.map((answer) => ({
      status: answer.status,
      seconds: Math.round(answer.ms / 100) / 10,
      ...(answer.status === 200 ? {} : { code: codeOf(answer) ?? answer.error ?? 'unknown' }),
    })),
    seconds: (performance.now() - started) / 1000,
  };
};
