import { utcMachine, utcText } from './format.js';

/** A moment as `2026-11-23 19:30 UTC`, machine-readable in `datetime`. */
export const Time = ({ at }: { at: number }) => <time dateTime={utcMachine(at)}>{utcText(at)}</time>;
