import { randomBytes } from 'node:crypto';
import { Context, Layer } from 'effect';

/** Makers of identifiers and secrets. */
export interface IdsShape {
  /** `req_` + 128 random bits, base64url: unguessable, URL-safe. */
  requestId(): string;
  accountId(): string;
  keyId(): string;
  /** `sk_` + 256 random bits, base64url: the secret shown once. */
  apiKey(): string;
}

export class Ids extends Context.Service<Ids, IdsShape>()('airs/Ids') {}

const random = (bytes: number) => randomBytes(bytes).toString('base64url');

export const randomIds: IdsShape = {
  requestId: () => `req_${random(16)}`,
  accountId: () => `acct_${random(12)}`,
  keyId: () => `key_${random(12)}`,
  apiKey: () => `sk_${random(32)}`,
};

export const RandomIdsLayer = Layer.succeed(Ids, randomIds);
