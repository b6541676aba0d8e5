import { utcMachine, utcSecondsText, utcText } from './format.js';

/** A moment as `2026-11-23 19:30 UTC` (with `seconds`, `19:30:05`), machine-readable in `datetime`. */
export const Time = ({ at, seconds }: { at: number; seconds?: boolean }) => (
  <time dateTime={utcMachine(at)}>{seconds === true ? utcSecondsText(at) : utcText(at)}</time>
);
