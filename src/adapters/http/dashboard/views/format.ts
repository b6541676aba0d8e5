/** Text forms of numbers and times, the same on every page and every machine (no locale, always UTC). */

/** `2026-11-23 19:30 UTC`, what people read. */
export const utcText = (ms: number): string => {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
};

/** `2026-11-23 19:30:05 UTC`: where seconds matter (a request's timings). */
export const utcSecondsText = (ms: number): string => {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
};

/** `2026-11-23T19:30:05Z`, for `<time datetime>`. */
export const utcMachine = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19)}Z`;

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
