import * as Context from 'effect/Context';

/** Wall-clock time in epoch milliseconds. The domain never reads a clock; the app passes `now` in. */
export interface ClockShape {
  now(): number;
}

export class AppClock extends Context.Service<AppClock, ClockShape>()('airs/Clock') {}

export const systemClock: ClockShape = { now: () => Date.now() };

/** A clock that moves only when told to: for tests of expiry, retries and rate limits. */
export class ManualClock implements ClockShape {
  constructor(private current = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current;
  }
  set(time: number): void {
    this.current = time;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}
