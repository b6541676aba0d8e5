import type { H3Event } from 'h3';
import type { z } from 'zod';
import type { AdminError } from '../../../app/adminAccounts.js';
import { type ApiError, InvalidRequest, Refused } from '../../../domain/errors.js';
import { isApiError } from '../errorResponse.js';
import { idempotencyKeyOf } from '../idempotencyKey.js';

/** The most bytes an admin body may have: its fields are an email, a plan, a name. */
export const maxAdminBodyBytes = 16_384;

/** A body parsed by its schema, or the first thing wrong with it (named in `details.param`). */
export const parsed = async <S extends z.ZodType>(
  body: Promise<unknown | ApiError>,
  schema: S,
): Promise<z.infer<S> | ApiError> => {
  const read = await body;
  if (isApiError(read)) return read;
  const result = schema.safeParse(read);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const param = issue?.path.join('.') ?? '';
  return new InvalidRequest({
    message: `${param === '' ? 'body' : param}: ${issue?.message ?? 'invalid body'}`,
    ...(param === '' ? {} : { details: { param } }),
  });
};

/** A refusal of the rules (an email taken, a key name too long, the plan's last key) is the caller's to fix: 400. */
export const asApiError = (error: AdminError): ApiError =>
  error instanceof Refused ? new InvalidRequest({ message: error.message }) : error;

/** The `Idempotency-Key` of a create, as the other faces read it (idempotencyKey.ts). */
export const idempotencyOf = (event: H3Event) => idempotencyKeyOf(event.req.headers.get('idempotency-key'));
