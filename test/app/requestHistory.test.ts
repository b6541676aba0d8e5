import { afterEach, describe, expect, it } from 'vitest';
import { requestHistory } from '../../src/app/requestHistory.js';
import { ManualClock, systemClock } from '../../src/ports/Clock.js';
import { submit } from '../support/submit.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

/** A request's history read from the log for its dashboard page: whole when the log allows, bounded always. */

let app: TestApp;
afterEach(() => app.stop());

const submitted = async (key: string, prompt: string) => {
  const reqId = await submit(app, key, { prompt });
  return eventually(async () => {
    const state = await app.store.reads.request(reqId);
    return state?.status === 'completed' ? state : undefined;
  });
};

describe('A request’s history from the log', () => {
  it('is entered near the request’s creation, not at the log’s start, and ends with the view it reached', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 27, 6));
    app = await startTestApp({ clock });
    const { key } = await app.account();
    for (let i = 0; i < 30; i++) await submitted(key, `before ${i}`);
    // Past the minute of slack the search allows for writers' clocks: what came before is not read.
    clock.advance(120_000);
    const state = await submitted(key, 'this one');
    const history = await requestHistory(app.store.reads, state, { maxEventsRead: 10_000, maxEntries: 100 });
    expect(history.entries.map((entry) => entry.event.type)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestCompleted',
    ]);
    expect(history.entries.map((entry) => entry.state)).toEqual(['waiting', 'processing', 'completed']);
    expect(history.cutShort).toBe(false);
    // Ninety-odd events came before it; only its own three are read.
    expect(await app.store.reads.lastSeq()).toBeGreaterThan(90);
    expect(history.eventsRead).toBe(3);
  });

  it('stops at its bounds and says it was cut short', async () => {
    app = await startTestApp({ clock: systemClock });
    const { key } = await app.account();
    const state = await submitted(key, 'bounded');
    for (let i = 0; i < 5; i++) await submitted(key, `after ${i}`);
    const fewEvents = await requestHistory(app.store.reads, state, { maxEventsRead: 2, maxEntries: 100 });
    expect(fewEvents.eventsRead).toBe(2);
    expect(fewEvents.cutShort).toBe(true);
    const fewEntries = await requestHistory(app.store.reads, state, { maxEventsRead: 10_000, maxEntries: 1 });
    expect(fewEntries.entries.map((entry) => entry.event.type)).toEqual(['RequestQueued']);
    expect(fewEntries.cutShort).toBe(true);
  });
});
