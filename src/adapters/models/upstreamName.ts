/**
 * The upstream as the log and the event log name it: its base URL without user, password, query or fragment (where
 * a credential could hide; the key itself travels in a header and is never part of it).
 */
export const upstreamName = (baseUrl: string): string => {
  try {
    const url = new URL(baseUrl);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.href.replace(/\/$/, '').slice(0, 200);
  } catch {
    return '(an invalid base URL)';
  }
};
