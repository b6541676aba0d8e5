import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { controlCharacters } from '../domain/identifiers.js';

/**
 * Password hashing with scrypt from node:crypto (memory-hard; no native dependency). A hash is stored as
 * `scrypt$N$r$p$salt$hash` (base64url), so its cost can be raised later and old hashes still verify.
 */

export const minPasswordLength = 12;
/** Long enough for any passphrase, short enough that hashing it cannot be used to load the server. */
export const maxPasswordLength = 1_024;

const cost = { N: 2 ** 15, r: 8, p: 1 } as const;
const keyLength = 32;
// scrypt needs 128 * N * r bytes; Node's default ceiling (32 MiB) is exactly that at N = 2^15, so give it room.
const maxmem = 64 * 1024 * 1024;

const derive = (password: string, salt: Buffer, N: number, r: number, p: number) =>
  new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, keyLength, { N, r, p, maxmem }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );

/** Why a password cannot be used, or undefined. */
export const passwordProblem = (password: string): string | undefined => {
  if (password.length < minPasswordLength)
    return `a password needs at least ${minPasswordLength} characters; this one has ${password.length}`;
  if (password.length > maxPasswordLength) return `a password has at most ${maxPasswordLength} characters`;
  // No keyboard types one, and a NUL cut short by a C string or refused by a database would be a password nobody
  // can give again (contract 18); passwords set before are still checked as they are.
  if (controlCharacters.test(password))
    return 'a password must not contain control characters (line breaks, tabs, NUL)';
  return undefined;
};

export const hashPassword = async (password: string): Promise<string> => {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost.N, cost.r, cost.p);
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64url'), key.toString('base64url')].join('$');
};

/** Whether `password` is the one `stored` was made from; false for anything that is not a hash of ours. */
export const verifyPassword = async (password: string, stored: string): Promise<boolean> => {
  const [scheme, N, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || salt === undefined || hash === undefined) return false;
  if (password.length > maxPasswordLength) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), Number(N), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
};
