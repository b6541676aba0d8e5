import { describe, expect, it } from 'vitest';
import { redactedUrl, redactUrlsIn, secretsOf, withoutSecrets } from '../../../src/adapters/postgres/redactedUrl.js';

// Contract 18, "Secrets in URLs": a database URL is shown with every secret masked, the rest as written.

describe('redactedUrl', () => {
  it.each([
    ['no secret', 'postgres://airs@db.internal:5432/airs', 'postgres://airs@db.internal:5432/airs'],
    ['the user part', 'postgres://airs:S3cret@db.internal:5432/airs', 'postgres://airs:***@db.internal:5432/airs'],
    ['?password=', 'postgres://airs@db:5432/airs?password=S3cret', 'postgres://airs@db:5432/airs?password=***'],
    [
      '?sslpassword=',
      'postgres://db/airs?sslmode=require&sslpassword=S3cret',
      'postgres://db/airs?sslmode=require&sslpassword=***',
    ],
    [
      'mixed case',
      'postgres://db/airs?PassWord=S3cret&SSLPASSWORD=S3cret2',
      'postgres://db/airs?PassWord=***&SSLPASSWORD=***',
    ],
    [
      'several parameters, the others kept',
      'postgres://u:pw1@db:6432/airs?application_name=x&password=pw2&sslmode=verify-full&sslrootcert=/etc/ca.pem&api_key=k&client_secret=s&auth_token=t&passfile=/p&sslkey=/k.pem',
      'postgres://u:***@db:6432/airs?application_name=x&password=***&sslmode=verify-full&sslrootcert=/etc/ca.pem&api_key=***&client_secret=***&auth_token=***&passfile=***&sslkey=***',
    ],
    ['a percent-encoded name', 'postgres://db/airs?pass%77ord=S3cret&a=b', 'postgres://db/airs?pass%77ord=***&a=b'],
    [
      'a percent-encoded value',
      'postgres://u:p%40ss%2Fw@db/airs?password=a%26b%3Dc',
      'postgres://u:***@db/airs?password=***',
    ],
    ['a name with a +', 'postgres://db/airs?my+key=S3cret', 'postgres://db/airs?my+key=***'],
    ['postgresql://', 'postgresql://u:S3cret@db/airs?password=S3cret', 'postgresql://u:***@db/airs?password=***'],
    [
      'another scheme, masked the same way',
      'mysql://u:S3cret@db/airs?password=x',
      'mysql://u:***@db/airs?password=***',
    ],
    ['an upper-case scheme', 'POSTGRES://u:S3cret@db/airs', 'postgres://u:***@db/airs'],
    ['an IPv6 host', 'postgres://u:S3cret@[::1]:5432/airs?password=x', 'postgres://u:***@[::1]:5432/airs?password=***'],
    ['an IPv6 host, no port', 'postgres://u:S3cret@[2001:db8::1]/airs', 'postgres://u:***@[2001:db8::1]/airs'],
    [
      'a socket directory in the query',
      'postgres:///airs?host=/var/run/postgresql&password=S3cret',
      'postgres:///airs?host=/var/run/postgresql&password=***',
    ],
    [
      'an empty secret value',
      'postgres://db/airs?password=&sslmode=disable',
      'postgres://db/airs?password=&sslmode=disable',
    ],
    ['a user without a password', 'postgres://u:@db/airs', 'postgres://u@db/airs'],
    ['an unencoded @ in the password', 'postgres://u:p@ss@db/airs', 'postgres://u:***@db/airs'],
    ['an unencoded # in a password', 'postgres://db/airs?password=ab#cd', 'postgres://db/airs?password=***#***'],
    ['an unencoded / in the password, read as the path', 'postgres://u:12/ss@db/airs', 'postgres://u:12/***'],
    ['an unencoded ? in the password, read as the query', 'postgres://u:12?ss@db/airs', 'postgres://u:12?***'],
  ])('%s', (_, url, shown) => {
    expect(redactedUrl(url)).toBe(shown);
  });

  it.each([
    ['not a URL', 'S3cret-not-a-url', 'postgres://…'],
    ['a bad port', 'postgres://u:S3cret@db:99999/airs?password=S3cret', 'postgres://…'],
    ['an unclosed IPv6 host', 'postgresql://u:S3cret@[::1/airs', 'postgresql://…'],
    [
      'no host after @ (node-postgres accepts it)',
      'postgres://u:S3cret@/airs?host=/tmp&password=S3cret',
      'postgres://…',
    ],
    ['a bad password in the port place', 'postgres://u:S3cret/x@db/airs', 'postgres://…'],
    ['no //', 'postgres:u:S3cret@db/airs', 'postgres://…'],
    ['empty', '', 'postgres://…'],
  ])('never shows a URL it cannot parse: %s', (_, url, shown) => {
    expect(redactedUrl(url)).toBe(shown);
  });

  it('is the same when applied again', () => {
    for (const url of [
      'postgres://u:S3cret@db/airs?password=x&a=b#c',
      'postgres://u:12/ss@db/airs',
      'postgres://u:S3cret@db:99999/airs',
    ]) {
      const once = redactedUrl(url);
      expect(redactUrlsIn(once)).toBe(once);
    }
  });
});

describe('withoutSecrets', () => {
  it('takes the password and secret parameters out of a message, as written and decoded', () => {
    const url = 'postgres://u:p%40ssword1@db/airs?sslpassword=key%20two&application_name=airs';
    expect(secretsOf(url)).toEqual(expect.arrayContaining(['p%40ssword1', 'p@ssword1', 'key%20two', 'key two']));
    expect(withoutSecrets('refused p@ssword1 and key two and p%40ssword1 for airs', url)).toBe(
      'refused *** and *** and *** for airs',
    );
  });

  it('redacts a database URL quoted in a message', () => {
    expect(withoutSecrets('cannot open "postgres://u:S3cret@db/airs?token=T0ken": refused')).toBe(
      'cannot open "postgres://u:***@db/airs?token=***": refused',
    );
  });

  it('leaves a short value alone rather than garble the message', () => {
    expect(withoutSecrets('password authentication failed for user "u"', 'postgres://u:pa@db/airs')).toBe(
      'password authentication failed for user "u"',
    );
  });
});
