import type { z } from 'zod';
import {
  adminAccountCreateSchema,
  adminAccountListSchema,
  adminAccountPatchSchema,
  adminAccountSchema,
  adminCreatedKeySchema,
  adminKeyCreateSchema,
  adminKeyListSchema,
  adminKeySchema,
} from './bodies.js';

/**
 * The admin API's part of the OpenAPI document (openapi.ts mounts it): its paths, its schemas (from the zod schemas
 * the routes parse and answer with, bodies.ts) and its security scheme, the admin key.
 */

type Json = Record<string, unknown>;

const ref = (kind: 'schemas' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` });
const json = (schemaName: string) => ({ 'application/json': { schema: ref('schemas', schemaName) } });
const error = (description: string, headers: Json = {}) => ({ description, headers, content: json('Error') });
const answer = (description: string, schemaName: string, headers: Json = {}) => ({
  description,
  headers,
  content: json(schemaName),
});

const security = [{ adminKey: [] }];
const tags = ['Admin'];

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes the create safe to retry: a repeat by the same admin key with the same key answers what the first made ' +
    '(`Idempotent-Replayed: true`) and creates nothing; with another body, `422 idempotency_key_reused`. Such keys ' +
    'do not expire.',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
};
const pathId = (description: string) => ({
  name: 'id',
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});

/** What every admin route may answer besides its own statuses. */
const refusals = {
  '401': error('No admin key, not `Bearer <key>`, unknown or revoked (`unauthorized`); an admin key is required.', {
    'WWW-Authenticate': { ...ref('headers', 'WWW-Authenticate'), required: true },
  }),
  '403': error('An account’s API key: valid, but not for the admin API (`forbidden`).'),
  '429': error(
    'Too many failed admin authentications from this client address (10 in 15 minutes; `rate_limited`, ' +
      '`details.budget` `admin_auth`): every call from there, a good key’s too, until `Retry-After`.',
    { 'Retry-After': { ...ref('headers', 'Retry-After'), required: true } },
  ),
  '503': error('The server is stopping, or its write queue is full; retry after `Retry-After`.', {
    'Retry-After': { ...ref('headers', 'Retry-After'), required: true },
  }),
};
const badBody = (what: string) =>
  error(
    `${what} Malformed JSON, a field of the wrong type or unknown (named in \`details.param\`), a body that is not ` +
      'JSON, or a refusal of the rules said in the message.',
  );
const tooLarge = error('The body is larger than 16 KiB (refused without reading it all).');
const replayed = { 'Idempotent-Replayed': ref('headers', 'Idempotent-Replayed') };
const methods = (allow: string) =>
  `Needs an admin key (\`airs admin-keys create\`). Any other method answers \`405 method_not_allowed\` with \`Allow: ${allow}\`.`;

export const adminPaths: Json = {
  '/v1/admin/accounts': {
    description: methods('POST, GET'),
    post: {
      operationId: 'adminCreateAccount',
      summary: 'Create an account',
      tags,
      security,
      parameters: [idempotencyKey],
      requestBody: { required: true, content: json('AdminAccountCreate') },
      responses: {
        '201': answer('The account, made (or made before with this `Idempotency-Key`).', 'AdminAccount', replayed),
        '400': badBody('An email taken or not an email, or an unknown plan.'),
        '413': tooLarge,
        '422': error('The `Idempotency-Key` was used by this admin key with another body (`idempotency_key_reused`).'),
        ...refusals,
      },
    },
    get: {
      operationId: 'adminListAccounts',
      summary: 'List accounts by id, a page at a time',
      tags,
      security,
      parameters: [
        {
          name: 'limit',
          in: 'query',
          required: false,
          description: 'Accounts in the page: 1 to 100 (20 when absent).',
          schema: { type: 'integer', minimum: 1, maximum: 100 },
        },
        {
          name: 'after',
          in: 'query',
          required: false,
          description: 'The `last_id` of the page before: the page starts after it.',
          schema: { type: 'string', maxLength: 100 },
        },
      ],
      responses: {
        '200': answer('A page of accounts.', 'AdminAccountList'),
        '400': error('`limit` not a whole number from 1 to 100, or `after` longer than an id.'),
        ...refusals,
      },
    },
  },
  '/v1/admin/accounts/{id}': {
    description: methods('GET, PATCH'),
    parameters: [pathId('The account’s id (`acct_…`).')],
    get: {
      operationId: 'adminRetrieveAccount',
      summary: 'Retrieve an account',
      tags,
      security,
      responses: {
        '200': answer('The account.', 'AdminAccount'),
        '404': error('No such account (`not_found`).'),
        ...refusals,
      },
    },
    patch: {
      operationId: 'adminUpdateAccount',
      summary: 'Change an account’s plan, suspend or resume it',
      tags,
      security,
      requestBody: { required: true, content: json('AdminAccountPatch') },
      responses: {
        '200': answer('The account as it is now.', 'AdminAccount'),
        '400': badBody('An unknown plan.'),
        '404': error('No such account (`not_found`).'),
        '413': tooLarge,
        ...refusals,
      },
    },
  },
  '/v1/admin/accounts/{id}/keys': {
    description: methods('POST, GET'),
    parameters: [pathId('The account’s id (`acct_…`).')],
    post: {
      operationId: 'adminCreateKey',
      summary: 'Create an API key of the account (shown once)',
      tags,
      security,
      parameters: [idempotencyKey],
      requestBody: { required: true, content: json('AdminKeyCreate') },
      responses: {
        '201': answer(
          'The key, with the key itself: shown in this answer only (and again to a repeat with the same ' +
            '`Idempotency-Key` by the same admin key).',
          'AdminCreatedKey',
          replayed,
        ),
        '400': badBody('A name empty or over 100 characters, a suspended account, or its plan’s `maxKeys` reached.'),
        '404': error('No such account (`not_found`).'),
        '413': tooLarge,
        '422': error('The `Idempotency-Key` was used by this admin key with another body (`idempotency_key_reused`).'),
        ...refusals,
      },
    },
    get: {
      operationId: 'adminListKeys',
      summary: 'List the account’s API keys (never the keys)',
      tags,
      security,
      responses: {
        '200': answer('The account’s keys, revoked ones too.', 'AdminKeyList'),
        '404': error('No such account (`not_found`).'),
        ...refusals,
      },
    },
  },
  '/v1/admin/keys/{id}': {
    description: methods('DELETE'),
    parameters: [pathId('The key’s id (`key_…`).')],
    delete: {
      operationId: 'adminRevokeKey',
      summary: 'Revoke an API key: refused from its very next call on, in every process',
      tags,
      security,
      responses: {
        '200': answer('The key, revoked (again: a revoked key stays as it was).', 'AdminKey'),
        '404': error('No such key (`not_found`).'),
        ...refusals,
      },
    },
  },
};

export const adminSchemas = (jsonSchema: (schema: z.ZodType, io?: 'input' | 'output') => Json): Json => ({
  AdminAccountCreate: jsonSchema(adminAccountCreateSchema, 'input'),
  AdminAccountPatch: jsonSchema(adminAccountPatchSchema, 'input'),
  AdminKeyCreate: jsonSchema(adminKeyCreateSchema, 'input'),
  AdminAccount: jsonSchema(adminAccountSchema),
  AdminAccountList: jsonSchema(adminAccountListSchema),
  AdminKey: jsonSchema(adminKeySchema),
  AdminCreatedKey: jsonSchema(adminCreatedKeySchema),
  AdminKeyList: jsonSchema(adminKeyListSchema),
});

export const adminSecurityScheme = {
  type: 'http',
  scheme: 'bearer',
  description: 'An admin key (`airs admin-keys create`): `sk_admin_` and 43 base64url characters.',
};

export const adminTag = {
  name: 'Admin',
  description:
    'Accounts and their API keys, for an operator’s backend: admin keys only (an account’s key answers `403`); ' +
    'every change is in the log naming the admin key (`airs replay --account`).',
};
