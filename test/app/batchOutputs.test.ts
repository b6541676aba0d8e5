import { describe, expect, it } from 'vitest';
import { answerReadChars } from '../../src/app/batches/outputFiles.js';
import { systemClock } from '../../src/ports/Clock.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { batchWhen, chatLines, createBatch, fileContent, isEnded, uploadLines } from '../support/batches.js';
import { call } from '../support/processes.js';
import { servedTestApps } from '../support/testApp.js';

/**
 * Issue 40: a batch's output file is written a line at a time, a long answer a piece at a time (no answer's size, nor
 * their number, makes one string of a file's part: at 8 MiB an answer, 64 of them in one piece passed what a string
 * may hold), its answers read a bounded number of characters at a time; and the batch's steps hand the event loop
 * back every few milliseconds. On the memory store, in real time, with the echo model (it answers the prompt).
 */

/** What the store was asked for while the app ran: the largest piece handed to a file's write, and answers read. */
const watched = () => {
  const seen = { largestPiece: 0, largestAnswerRead: 0, pieces: 0 };
  const wrap = (store: StoreShape): StoreShape => ({
    ...store,
    files: {
      ...store.files,
      write: (blobId, chunks, maxBytes, now) =>
        store.files.write(
          blobId,
          (async function* () {
            for await (const chunk of chunks) {
              seen.pieces++;
              seen.largestPiece = Math.max(seen.largestPiece, chunk.byteLength);
              yield chunk;
            }
          })(),
          maxBytes,
          now,
        ),
    },
    reads: {
      ...store.reads,
      requestsWithText: async (reqIds) => {
        const read = await store.reads.requestsWithText(reqIds);
        const chars = read.reduce((sum, request) => sum + (request?.text?.length ?? 0), 0);
        seen.largestAnswerRead = Math.max(seen.largestAnswerRead, chars);
        return read;
      },
    },
  });
  return { seen, wrap };
};

describe('a batch’s output, written as a stream', () => {
  const startApp = servedTestApps();

  it('goes to the store a line, or a piece of a long answer, at a time, byte for byte the JSON of each line', async () => {
    const { seen, wrap } = watched();
    const { app, served } = await startApp({ clock: systemClock, wrapStore: wrap });
    const { key } = await app.account('enterprise');
    // Twenty answers of some 200,000 characters that JSON writes longer (quotes, backslashes, a control character),
    // with pairs of surrogates where a piece of 65,536 characters would cut them.
    const prompt = (i: number) =>
      `${'a'.repeat(65_535)}😀${'"\\'.repeat(20_000)}\u0001${'é'.repeat(50_000)}😀${i}${'z'.repeat(i * 1_000)}`;
    // And one whose line alone is larger than any piece: 170,000 characters that JSON writes six bytes each.
    const prompts = [...Array.from({ length: 20 }, (_, i) => prompt(i)), '\u0001'.repeat(170_000)];
    const fileId = await uploadLines(served.url, key, chatLines('echo', prompts));
    const { id } = await createBatch(served.url, key, fileId);
    const ended = await batchWhen(served.url, key, id, isEnded, 120_000);
    expect(ended).toMatchObject({ status: 'completed', request_counts: { total: 21, completed: 21, failed: 0 } });
    const text = (await fileContent(served.url, key, ended.output_file_id as string)).toString('utf8');
    const lines = text.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(21);
    const answers = new Map<string, string>();
    for (const line of lines) {
      const parsed = JSON.parse(line) as {
        custom_id: string;
        response: { body: { choices: { message: { content: string } }[] } };
      };
      // Exactly the JSON of the whole line: pieces escaped apart join into what one JSON.stringify writes.
      expect(JSON.stringify(parsed)).toBe(line);
      answers.set(parsed.custom_id, parsed.response.body.choices[0]?.message.content ?? '');
    }
    prompts.forEach((asked, i) => {
      expect(answers.get(`c${i}`)).toBe(asked);
    });
    console.log(
      `batch output: ${text.length} characters in ${seen.pieces} pieces, the largest ${seen.largestPiece} bytes; answers read at most ${seen.largestAnswerRead} characters at once`,
    );
    // A piece is at most 65,536 characters of an answer escaped (six bytes each at worst) and the rest of its line.
    expect(seen.largestPiece).toBeLessThanOrEqual(6 * 65_537 + 4_096);
    // Answers are read a bounded number of characters at a time: 20 of 200,000 are never read at once.
    expect(seen.largestAnswerRead).toBeLessThanOrEqual(answerReadChars);
  }, 180_000);

  it('answers other calls while a batch of 20,000 lines is validated: the pass hands the event loop back', async () => {
    // The validation's pass over the input file, seen from the store: from its first read of the file to its end.
    let inputFile: string | undefined;
    const pass = { reads: 0, running: false };
    const { app, served } = await startApp({
      clock: systemClock,
      wrapStore: (store) => ({
        ...store,
        files: {
          ...store.files,
          read: (blobId) => {
            if (blobId !== inputFile || ++pass.reads > 1) return store.files.read(blobId);
            return (async function* () {
              pass.running = true;
              try {
                yield* store.files.read(blobId);
              } finally {
                pass.running = false;
              }
            })();
          },
        },
      }),
    });
    const { key } = await app.account('enterprise');
    const lines = chatLines(
      'echo',
      Array.from({ length: 20_000 }, (_, i) => `line ${i}`),
    );
    inputFile = await uploadLines(served.url, key, lines);
    const url = served.url;
    // Calls one after another, each answered only when the event loop gets a turn; counted while the pass runs.
    let answeredDuringPass = 0;
    let asking = true;
    const asker = (async () => {
      while (asking) {
        await fetch(`${url}/healthz`).then((answer) => answer.arrayBuffer());
        if (pass.running) answeredDuringPass++;
      }
    })();
    const { id } = await createBatch(url, key, inputFile);
    for (;;) {
      const view = await app.store.reads.batch(id);
      if (view !== undefined && view.state.status !== 'validating') break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    asking = false;
    await asker;
    console.log(`20,000 lines validated: ${answeredDuringPass} calls answered while the pass ran`);
    expect(pass.reads).toBeGreaterThan(0);
    expect((await call(url, 'GET', `/v1/batches/${id}`, key)).body.status).toBe('in_progress');
    // Without handing the event loop back, the pass is one turn of it: no call is answered until it ends.
    expect(answeredDuringPass).toBeGreaterThan(0);
  }, 180_000);
});
