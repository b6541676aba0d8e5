import type { z } from 'zod';

/**
 * What the bodies' zod schemas (chat/wireFormat.ts, wireFormat.ts) share to say their faults in airs's words:
 * a value shown in a message, and faults restated where zod reports a union as a whole.
 */

/** A value as a refusal shows it: its JSON, cut at 50 characters. */
export const shown = (value: unknown) => (JSON.stringify(value) ?? String(value)).slice(0, 50);

/** Absent: missing or null (OpenAI's clients send null for an unset field). */
export const absent = (value: unknown): value is undefined | null => value === undefined || value === null;

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A surrogate half alone is not text: storage would turn it into U+FFFD and the echo would differ. */
export const brokenUnicode = /\p{Cs}/u;

export type RawIssue = z.core.$ZodRawIssue;

/**
 * Faults restated: a schema's own fault (keyed by its definition, which `.meta` and the like keep) and what airs
 * says instead, from the fault and the value at fault. Applied by a field that holds such schemas, once it was read
 * with faults (restatingFaults): a field read without one pays nothing for them.
 */
const restatements = new WeakMap<object, (issue: RawIssue) => readonly RawIssue[] | undefined>();

export const restated = <T extends z.ZodType>(
  schema: T,
  restate: (issue: RawIssue) => readonly RawIssue[] | undefined,
) => {
  restatements.set(schema._zod.def, restate);
  return schema;
};

/** Each fault that has a restatement replaced by it, at the same place. */
const restateFaults = (payload: z.core.ParsePayload) => {
  for (let i = payload.issues.length - 1; i >= 0; i--) {
    const issue = payload.issues[i] as RawIssue;
    const instead = issue.inst && restatements.get(issue.inst._zod.def)?.(issue);
    if (instead === undefined) continue;
    // A union's "no such option" fault stands at its discriminator; the restatement speaks of the union's value.
    const at = (issue.path ?? []).slice(0, issue.code === 'invalid_union' && issue.discriminator ? -1 : undefined);
    payload.issues.splice(i, 1, ...instead.map((fault) => ({ ...fault, path: [...at, ...(fault.path ?? [])] })));
  }
};

/**
 * `schema`, with the restatements of the faults under it applied. Not on the body as a whole: zod skips such a rule
 * there once any field's fault ends the read (`z.int`'s does).
 */
export const restatingFaults = <T extends z.ZodType>(schema: T) =>
  schema.superRefine((_, payload) => restateFaults(payload), { when: (payload) => payload.issues.length > 0 });

/**
 * A union refused as a whole, with its own message (zod's way), unless option `index` failed only in a way `inside`
 * accepts: then that fault is the one reported, where it is.
 */
export const reportedInside = <T extends z.ZodType>(
  union: T,
  index: number,
  inside: (issue: z.core.$ZodIssue) => boolean,
) =>
  restated(union, (issue) => {
    const faults = issue.code === 'invalid_union' ? (issue.errors[index] ?? []) : [];
    return faults.length > 0 && faults.every(inside) ? (faults as RawIssue[]) : undefined;
  });
