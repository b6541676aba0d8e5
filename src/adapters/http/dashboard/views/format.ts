/** Text forms of numbers and times, the same on every page and every machine (no locale, always UTC). */

/**
 * `2026-11-23 19:30:05.120 UTC`: every time the dashboard shows, to the millisecond and in UTC, as the log and the
 * API's traces have it, so that an operator can line a request's events up with them (decisions.md, issue 42).
 */
export const timeText = (ms: number): string => {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)} UTC`;
};

/** `2026-11-23T19:30:05.120Z`, for `<time datetime>` (the page's script reads it to say how long ago it was). */
export const utcMachine = (ms: number): string => new Date(ms).toISOString();

/** `just now`, `12 s ago`, `3 min ago`, `5 h ago`, `2 d ago`, `in 3 min`: how far `ms` is from `now`, roughly. */
export const relativeText = (ms: number, now: number): string => {
  const seconds = Math.round((now - ms) / 1000);
  const size = Math.abs(seconds);
  if (size < 2) return 'just now';
  const amount =
    size < 60
      ? `${size} s`
      : size < 3_600
        ? `${Math.floor(size / 60)} min`
        : size < 86_400
          ? `${Math.floor(size / 3_600)} h`
          : `${Math.floor(size / 86_400)} d`;
  return seconds > 0 ? `${amount} ago` : `in ${amount}`;
};

/** `30,000`: digits grouped by threes. */
export const grouped = (n: number): string => String(Math.trunc(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** `1 minute`, `5 minutes`. */
export const plural = (n: number, one: string, many = `${one}s`): string => `${grouped(n)} ${n === 1 ? one : many}`;

/** `now`, `12 s`, `3 min`: a short wait. */
export const shortWait = (seconds: number): string => {
  const s = Math.max(0, Math.ceil(seconds));
  if (s === 0) return 'now';
  if (s < 60) return `in ${s} s`;
  return `in ${Math.ceil(s / 60)} min`;
};

/** A key limit: `3` or `unlimited`. */
export const keyLimit = (maxKeys: number | null): string => (maxKeys === null ? 'unlimited' : grouped(maxKeys));

/** `14:00` for the clock hour that starts at `ms`. */
export const hourText = (ms: number): string => new Date(ms).toISOString().slice(11, 16);

/** `Starter` for `starter`. */
export const planTitle = (plan: string): string => plan.charAt(0).toUpperCase() + plan.slice(1);
