import { InvalidRequest } from '../domain/errors.js';

/** The longest header text read: a whole number of seconds up to a lifetime fits in a few digits. */
const maxHeaderLength = 16;
/** `90` (seconds), `30s`, `5m`, `2h`: digits, then at most one unit. */
const form = /^([0-9]{1,12})([smh]?)$/;
const unitMs: Readonly<Record<string, number>> = { '': 1_000, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * The `Cancel-After` header of a submit (contract 20): absent (`undefined`), the milliseconds after its creation at
 * which the request is cancelled if it has not ended, or why the value is refused. From 1 s to the request's
 * lifetime (`ttlSeconds`): a deadline past its expiry would never come. The message names the header, and
 * `param` names it to the OpenAI face.
 */
export const cancelAfterOf = (
  header: string | null | undefined,
  ttlSeconds: number,
): number | undefined | InvalidRequest => {
  if (header === null || header === undefined) return undefined;
  const refuse = (message: string) => new InvalidRequest({ message, details: { param: 'Cancel-After' } });
  const text = header.trim();
  const parsed = text.length <= maxHeaderLength ? form.exec(text) : null;
  if (parsed === null)
    return refuse(
      'Cancel-After must be a whole number of seconds, minutes or hours (90, 30s, 5m, 2h), from 1 second to the ' +
        `request lifetime (${ttlSeconds} seconds)`,
    );
  const ms = Number(parsed[1]) * (unitMs[parsed[2] ?? ''] ?? 1_000);
  if (ms < 1_000 || ms > ttlSeconds * 1_000)
    return refuse(`Cancel-After is ${text}; it must be from 1 second to the request lifetime (${ttlSeconds} seconds)`);
  return ms;
};

/** What a caller is told of a cancelled request: at its deadline, or as asked. */
export const cancelledWords = (id: string, reason: 'deadline' | undefined): string =>
  reason === 'deadline'
    ? `request ${id} was cancelled: its deadline (Cancel-After) passed before it ended; it will not be processed`
    : `request ${id} was cancelled; it will not be processed`;
