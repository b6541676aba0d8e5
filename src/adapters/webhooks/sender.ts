import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { connectionFailure } from '../models/connectionFailure.js';
import type { ConnectionPools } from './connections.js';
import { checkDestination, type Destination, type DestinationPolicy, type Resolver } from './destination.js';

/**
 * One attempt at delivering a webhook: a POST of the body to the endpoint's URL, safe by default. The host is
 * resolved and every address checked (`checkDestination`), then the connection is made to the address checked, with
 * the URL's host name in the Host header and TLS's SNI (and the certificate checked against it): no second lookup, so
 * a name that resolves to a public address when checked and to 127.0.0.1 when connecting gains nothing. No redirect
 * is followed (a 3xx is a failed attempt: following one would lead anywhere, unchecked), at most `maxAnswerBytes` of
 * the answer are read, and the whole attempt, resolving included, ends within `timeoutMs`. It never throws: it
 * returns what happened, for the delivery log and the retry decision.
 */

export type SenderOptions = DestinationPolicy & {
  /** The bound on the whole attempt: resolving, connecting, sending and the answer's status line. */
  readonly timeoutMs?: number;
  /** The most bytes of the answer's body read; the rest is never read (the connection is closed). */
  readonly maxAnswerBytes?: number;
  /** How host names are resolved; the system's resolver unless a test gives another. */
  readonly resolve?: Resolver;
  /** Certificates trusted besides the system's: a receiver with a private CA (and the tests). */
  readonly ca?: string | Buffer | readonly (string | Buffer)[];
  /** Kept-alive connections by checked address (connections.ts); absent: one connection per attempt. */
  readonly connections?: ConnectionPools;
};

export const defaultSendTimeoutMs = 10_000;
export const defaultMaxAnswerBytes = 64 * 1024;

export type DeliveryRequest = {
  readonly url: string;
  /** The body, exactly the text that was signed. */
  readonly body: string;
  /** The signature headers (`signWebhook`) and any others; content type and length are set here. */
  readonly headers: Readonly<Record<string, string>>;
};

/**
 * How an attempt ended:
 * - `delivered`: a 2xx;
 * - `rejected`: another status (4xx, 5xx, 1xx);
 * - `redirected`: a 3xx, not followed;
 * - `refused`: the rules forbid the URL or an address its host resolves to (nothing was sent);
 * - `unreachable`: the host could not be resolved or connected to, TLS failed, or the connection broke before a
 *   status;
 * - `timeout`: no status within the time allowed.
 */
export type DeliveryOutcome = 'delivered' | 'rejected' | 'redirected' | 'refused' | 'unreachable' | 'timeout';

export type DeliveryAttempt = {
  readonly delivered: boolean;
  readonly outcome: DeliveryOutcome;
  /** The answer's status, when one came. */
  readonly status: number | undefined;
  /** From the start of the attempt to the status (or to the failure). */
  readonly latencyMs: number;
  /** What went wrong, in words for the delivery log (never a header sent: they hold signatures); none if delivered. */
  readonly error: string | undefined;
  /** The address connected to (or that would have been), when the host was resolved. */
  readonly address: string | undefined;
  /** Bytes of the answer's body read, at most `maxAnswerBytes`. */
  readonly answerBytes: number;
  /** Whether the answer was longer than `maxAnswerBytes`, and the rest left unread. */
  readonly answerCut: boolean;
};

/** A lookup that answers every name with the address already checked: the connection goes nowhere else. */
const pinnedLookup =
  (address: string, family: 4 | 6): LookupFunction =>
  (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };

const outcomeOfStatus = (status: number): DeliveryOutcome =>
  status >= 200 && status < 300 ? 'delivered' : status >= 300 && status < 400 ? 'redirected' : 'rejected';

const wordsOfStatus = (status: number): string | undefined => {
  const outcome = outcomeOfStatus(status);
  if (outcome === 'delivered') return undefined;
  if (outcome === 'redirected') return `answered ${status}, a redirect, which is not followed`;
  return `answered ${status}`;
};

/** Sends one attempt; see the module's comment. */
export const sendWebhook = async (request: DeliveryRequest, options: SenderOptions = {}): Promise<DeliveryAttempt> => {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? defaultSendTimeoutMs;
  const failed = (outcome: DeliveryOutcome, error: string): DeliveryAttempt => ({
    delivered: false,
    outcome,
    status: undefined,
    latencyMs: Math.round(performance.now() - started),
    error,
    address: undefined,
    answerBytes: 0,
    answerCut: false,
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    // A resolver that never answers must not hold the attempt past its bound either.
    const resolving = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const check = await Promise.race([checkDestination(request.url, options, options.resolve), resolving]);
    clearTimeout(timer);
    if (check === 'timeout') return failed('timeout', `no answer within ${timeoutMs} ms (resolving the host)`);
    if (!check.ok) return failed(check.kind === 'refused' ? 'refused' : 'unreachable', check.problem);
    return await post(check.destination, request, {
      started,
      timeoutMs,
      maxAnswerBytes: options.maxAnswerBytes ?? defaultMaxAnswerBytes,
      ca: options.ca,
      connections: options.connections,
    });
  } catch (error) {
    clearTimeout(timer);
    return failed('unreachable', `could not send: ${connectionFailure(error).detail}`);
  }
};

/**
 * The POST itself, to the address checked. Settles once: at the end of the answer's body or where it is cut, at an
 * error, or at the deadline; the request is destroyed then, so nothing of it outlives the attempt.
 */
const post = (
  destination: Destination,
  request: DeliveryRequest,
  limits: {
    readonly started: number;
    readonly timeoutMs: number;
    readonly maxAnswerBytes: number;
    readonly ca: SenderOptions['ca'];
    readonly connections: SenderOptions['connections'];
  },
): Promise<DeliveryAttempt> => {
  const { url, hostname, address, family } = destination;
  const { started, timeoutMs, maxAnswerBytes } = limits;
  const secure = url.protocol === 'https:';
  const body = Buffer.from(request.body, 'utf8');
  return new Promise<DeliveryAttempt>((resolve) => {
    let status: number | undefined;
    let latencyMs = 0;
    let answerBytes = 0;
    let answerCut = false;
    let settled = false;
    let stop: NodeJS.Timeout | undefined;
    let outgoing: http.ClientRequest | undefined;
    /** `finished`: the answer was read to its end within its bounds, so its connection may serve the next post. */
    const settle = (attempt: Omit<DeliveryAttempt, 'address' | 'answerBytes' | 'answerCut'>, finished = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(stop);
      if (!finished || limits.connections === undefined) outgoing?.destroy();
      resolve({ ...attempt, address, answerBytes, answerCut });
    };
    const settleWithStatus = (known: number, finished = false) =>
      settle(
        {
          delivered: outcomeOfStatus(known) === 'delivered',
          outcome: outcomeOfStatus(known),
          status: known,
          latencyMs,
          error: wordsOfStatus(known),
        },
        finished,
      );
    const settleWithError = (error: unknown) => {
      if (status !== undefined) return settleWithStatus(status);
      settle({
        delivered: false,
        outcome: 'unreachable',
        status: undefined,
        latencyMs: Math.round(performance.now() - started),
        error: `could not deliver to ${address}: ${connectionFailure(error).detail}`,
      });
    };
    // A status that came in time decides the attempt, even if its body is still coming at the deadline.
    stop = setTimeout(
      () => {
        if (status !== undefined) return settleWithStatus(status);
        settle({
          delivered: false,
          outcome: 'timeout',
          status: undefined,
          latencyMs: Math.round(performance.now() - started),
          error: `no answer within ${timeoutMs} ms`,
        });
      },
      Math.max(0, timeoutMs - (performance.now() - started)),
    );
    const requestOptions: https.RequestOptions = {
      method: 'POST',
      hostname,
      port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
      path: `${url.pathname}${url.search}`,
      headers: {
        ...request.headers,
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': 'airs-webhooks',
      },
      lookup: pinnedLookup(address, family),
      // Pooled only by the address this attempt's own check passed (connections.ts); else one connection per attempt.
      agent:
        limits.connections?.agentFor({
          secure,
          hostname,
          port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
          address,
          ca: limits.ca as https.AgentOptions['ca'],
        }) ?? false,
      maxHeaderSize: 16 * 1024,
      ...(secure && limits.ca !== undefined ? { ca: limits.ca as https.RequestOptions['ca'] } : {}),
    };
    const onAnswer = (answer: http.IncomingMessage) => {
      const known = answer.statusCode ?? 0;
      status = known;
      latencyMs = Math.round(performance.now() - started);
      answer.on('data', (chunk: Buffer) => {
        answerBytes += chunk.length;
        if (answerBytes <= maxAnswerBytes) return;
        answerBytes = maxAnswerBytes;
        answerCut = true;
        settleWithStatus(known);
      });
      answer.on('end', () => settleWithStatus(known, !answerCut));
      answer.on('error', () => settleWithStatus(known));
      answer.on('close', () => settleWithStatus(known));
    };
    try {
      outgoing = secure ? https.request(requestOptions, onAnswer) : http.request(requestOptions, onAnswer);
      outgoing.on('error', settleWithError);
      outgoing.end(body);
    } catch (error) {
      // A header Node refuses to send (a line break in it, say) throws here, before anything is sent.
      settleWithError(error);
    }
  });
};
