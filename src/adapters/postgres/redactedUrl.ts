/*
 * A database URL without its secrets, for lines a person reads (logs, messages): contract 18, "Secrets in URLs". No
 * dependencies: the CLI names a database without loading the PostgreSQL client.
 *
 * What is masked (`***`): the password of the user part; the value of every query parameter whose name (as written,
 * or percent-decoded as node-postgres decodes it) contains `pass`, `pwd`, `secret`, `token`, `key` or `cred` in any
 * case (`password` and `sslpassword`, which the client and libpq read, `passfile`, `sslkey`, an `api_key`, an OAuth
 * `client_secret`...); the fragment (node-postgres ignores it: there it can only be the rest of a password with a
 * `#` in it). A path or a query parameter without a value that holds an `@` is the rest of a password with a `/` or a
 * `?` in it, misread as the path or the query: masked as well. The scheme, user, host, port, database and the other
 * parameters stay as written, so a person sees where the URL points. A URL that cannot be parsed is never shown: only
 * its scheme, `postgres://…`.
 */

const masked = '***';

/** Whether a query parameter's name says that its value is a secret. */
const secretName = /pass|pwd|secret|token|key|cred/i;

/** A query parameter's name as node-postgres reads it (URLSearchParams: `+` is a space, `%xx` decoded). */
const decodedName = (raw: string): string => {
  try {
    return [...new URLSearchParams(`${raw}=`).keys()][0] ?? raw;
  } catch {
    return raw;
  }
};

const isSecretParameter = (name: string) => secretName.test(name) || secretName.test(decodedName(name));

/** The scheme alone, for a URL that cannot be parsed. */
const placeholder = (url: string): string => {
  const scheme = /^(postgres(?:ql)?):/i.exec(url)?.[1]?.toLowerCase();
  return `${scheme ?? 'postgres'}://…`;
};

/** The query (`?a=b&…`, as the URL parser gave it), each secret parameter's value masked, the others as written. */
const redactedQuery = (search: string): string => {
  if (search === '' || search === '?') return search;
  const parts = search
    .slice(1)
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=');
      if (equals < 0) return part.includes('@') ? masked : part;
      const name = part.slice(0, equals);
      return isSecretParameter(name) && equals < part.length - 1 ? `${name}=${masked}` : part;
    });
  return `?${parts.join('&')}`;
};

/** `url` with its password and every secret query parameter masked; never throws, never shows an unparsed URL. */
export const redactedUrl = (url: string): string => {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return placeholder(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return placeholder(url);
  }
  try {
    const scheme = parsed.protocol;
    const user = parsed.username;
    const credentials =
      user === '' && parsed.password === '' ? '' : `${user}${parsed.password === '' ? '' : `:${masked}`}@`;
    const path = parsed.pathname.includes('@') ? `/${masked}` : parsed.pathname;
    const fragment = parsed.hash === '' ? '' : `#${masked}`;
    return `${scheme}//${credentials}${parsed.host}${path}${redactedQuery(parsed.search)}${fragment}`;
  } catch {
    return placeholder(url);
  }
};

/**
 * The secret values `url` carries (its password, the secret query parameters' values), as written and decoded: what
 * `withoutSecrets` takes out of a message. Values shorter than 4 characters are left out: taking out every `ab` would
 * make a message unreadable, and such a value is no secret worth the name.
 */
export const secretsOf = (url: string): readonly string[] => {
  const found = new Set<string>();
  const add = (value: string) => {
    for (const each of [value, safeDecode(value)]) if (each.length >= 4) found.add(each);
  };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Unparsed: whatever follows the scheme could be a secret; the caller's message never quotes the URL whole, so
    // its parts after `//` are taken out, each run of characters between separators.
    for (const piece of url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').split(/[/:@?&=#]/)) add(piece);
    return longestFirst(found);
  }
  if (parsed.password !== '') add(parsed.password);
  for (const part of parsed.search.slice(1).split('&')) {
    const equals = part.indexOf('=');
    if (equals > 0 && isSecretParameter(part.slice(0, equals))) add(part.slice(equals + 1));
  }
  return longestFirst(found);
};

/** Longest first: a secret that holds another is taken out whole. */
const longestFirst = (values: Set<string>) => [...values].sort((a, b) => b.length - a.length);

const safeDecode = (value: string): string => {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
};

/** `text` (a message from the PostgreSQL client, a reason) with every secret of `url` in it masked, and any database
 * URL in it redacted. */
export const withoutSecrets = (text: string, url?: string): string => {
  let out = redactUrlsIn(text);
  if (url !== undefined) for (const secret of secretsOf(url)) out = out.split(secret).join(masked);
  return out;
};

/** `text` with every `postgres://` or `postgresql://` URL in it redacted (up to the next white space or quote). */
export const redactUrlsIn = (text: string): string =>
  text.replace(/postgres(?:ql)?:\/\/[^\s"'<>`]*/gi, (found) => (found.endsWith('://…') ? found : redactedUrl(found)));
