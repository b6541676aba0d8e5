import { timeText, utcMachine } from './format.js';

/**
 * A moment as `2026-11-23 19:30:05.120 UTC` (format.ts's `timeText`, the one form on every page), machine-readable in
 * `datetime`; the page's script writes how long ago it was beside it (`3 min ago`). `seconds` is what earlier pages
 * asked for and is now always given: every time shows its milliseconds.
 */
export const Time = ({ at }: { at: number; seconds?: boolean }) => (
  <time dateTime={utcMachine(at)} data-ago="">
    {timeText(at)}
  </time>
);

/** A moment that may not have come yet (a key never used, an endpoint never delivered to): `never` then. */
export const TimeOrNever = ({ at }: { at: number | undefined }) =>
  at === undefined ? <span class="muted">never</span> : <Time at={at} />;
