import { describe, expect } from 'vitest';
import type { Contract } from '../contract.js';
import { commitOne, createAccount, eventually, submit } from '../fixtures.js';

/**
 * A generous bound for hearing another writer's commit: LMDB's watch of the data file tells within about 10 ms, and
 * its slow poll within 5 s should a notification go missing; PostgreSQL's NOTIFY within milliseconds.
 */
const hearingBoundMs = 10_000;

/** `onChange`: a process hears that another one changed the store, so that it looks at the queue then. */
export const onChangeFeatures = ({ open, itWith, factory }: Contract) =>
  describe('onChange', { timeout: 3 * hearingBoundMs }, () => {
    itWith(
      factory.another,
      'tells a listener on one handle of a commit made through another, and the listener then reads it',
      async (another) => {
        const listening = await open();
        const writing = await another(listening);
        let heard = 0;
        const stop = listening.reads.onChange(() => heard++);
        try {
          await commitOne(writing, submit('req_a'));
          await eventually(() => heard > 0, hearingBoundMs, 'the commit of the other handle was heard');
          expect(await listening.reads.request('req_a')).toMatchObject({ status: 'waiting' });
          const after = heard;
          await commitOne(writing, createAccount(1));
          await eventually(() => heard > after, hearingBoundMs, 'a second commit was heard');
          expect(await listening.reads.accountIdByEmail('user1@example.com')).toBe('acct_1');
        } finally {
          stop();
        }
      },
    );

    itWith(
      factory.anotherProcess,
      'tells a listener of a commit made by another process, and the listener then reads it',
      async (anotherProcess) => {
        const listening = await open();
        const other = await anotherProcess(listening);
        let heard = 0;
        const stop = listening.reads.onChange(() => heard++);
        try {
          await commitOne(other, submit('req_a'));
          await eventually(() => heard > 0, hearingBoundMs, 'the commit of the other process was heard');
          expect(await listening.reads.request('req_a')).toMatchObject({ status: 'waiting' });
          const after = heard;
          await commitOne(other, createAccount(1));
          await eventually(() => heard > after, hearingBoundMs, 'a second commit of the other process was heard');
          expect(await listening.reads.accountIdByEmail('user1@example.com')).toBe('acct_1');
        } finally {
          stop();
        }
      },
    );

    itWith(
      factory.another,
      'stops telling a listener once it has unsubscribed, while one still subscribed hears on',
      async (another) => {
        const listening = await open();
        const writing = await another(listening);
        let stopped = 0;
        let kept = 0;
        const stop = listening.reads.onChange(() => stopped++);
        const keep = listening.reads.onChange(() => kept++);
        try {
          await commitOne(writing, submit('req_a'));
          await eventually(() => stopped > 0 && kept > 0, hearingBoundMs, 'both listeners heard the first commit');
          stop();
          const [stoppedBefore, keptBefore] = [stopped, kept];
          await commitOne(writing, submit('req_b'));
          // Every listener is told of one change at once: once the one still subscribed has heard it, the other
          // would have too.
          await eventually(() => kept > keptBefore, hearingBoundMs, 'the listener still subscribed heard the commit');
          expect(stopped).toBe(stoppedBefore);
        } finally {
          keep();
        }
      },
    );
  });
