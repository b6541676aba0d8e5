import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { batchEndpoints } from '../../src/adapters/http/openai/batchEndpoints.js';
import { type BatchRunnerDeps, linesOf } from '../../src/app/batches/batchWork.js';
import type { BatchView } from '../../src/domain/batch/state.js';
import { chatLines } from '../support/batches.js';
import { openStoreOf } from '../support/testStore.js';

/**
 * Issue 40: a line whose check throws (a bug of the route's code, not the line's fault) is that line's error, with
 * the reason, and the pass goes on: validation ends (the batch fails with it) instead of failing the same way at
 * every try. Logged once per pass, however many lines throw.
 */
describe('a batch line whose check throws', () => {
  it('is the line’s invalid_request error naming the reason, the other lines checked as ever, logged once', async () => {
    const store = openStoreOf('memory');
    try {
      const lines = chatLines('echo', ['fine', 'boom', 'boom', 'also fine']);
      const text = `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`;
      await store.files.write(
        'file-input',
        (async function* () {
          yield Buffer.from(text);
        })(),
        1_000_000,
        1,
      );
      const logged: { level: number; msg: string }[] = [];
      const deps = {
        store,
        log: pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
        endpoints: {
          ...batchEndpoints,
          check: (endpoint: string, body: unknown) => {
            const content = (body as { messages: { content: string }[] }).messages[0]?.content;
            if (content === 'boom') throw new RangeError('Maximum call stack size exceeded');
            return batchEndpoints.check(endpoint, body);
          },
        },
        rules: { modelIds: ['echo'], maxPromptChars: 1_000_000, maxPromptBytes: 1_048_576 },
        providerOf: () => 'echo',
        jsonBounds: { maxDepth: 64, maxValues: 100_000 },
        maxLineBytes: 4_194_304,
      } as unknown as BatchRunnerDeps;
      const view = {
        state: {
          status: 'validating',
          context: { batchId: 'batch_x', inputFileId: 'file-input', endpoint: '/v1/chat/completions' },
        },
      } as unknown as BatchView;
      const checked = [];
      for await (const line of linesOf(deps, view)) checked.push(line);
      expect(
        checked.map((line) => ('code' in line ? [line.line, line.code, line.message] : [line.line, 'ok'])),
      ).toEqual([
        [1, 'ok'],
        [2, 'invalid_request', 'line 2 could not be checked: RangeError: Maximum call stack size exceeded'],
        [3, 'invalid_request', 'line 3 could not be checked: RangeError: Maximum call stack size exceeded'],
        [4, 'ok'],
      ]);
      expect(
        logged.filter((line) => line.msg === 'a batch line could not be checked').map((line) => line.level),
      ).toEqual([40]);
    } finally {
      await store.close();
    }
  });
});
