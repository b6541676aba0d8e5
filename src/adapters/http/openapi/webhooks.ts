import { z } from 'zod';
import { type IdKind, idForms } from '../../../domain/identifiers.js';
import type { WebhookEventType } from '../../../domain/webhook/envelope.js';
import { jsonContent, jsonSchema, ref } from './components.js';

/**
 * The webhooks of the OpenAPI document (issue 30): what airs POSTs to an account's endpoints, an OpenAPI 3.1
 * `webhooks` entry per event, with its body's schema and the Standard Webhooks headers.
 */

/** The pattern of an id of kind `kind`, as identifiers.ts defines its form. */
const idPattern = (kind: IdKind): RegExp => {
  const { prefix, lengths } = idForms[kind];
  return new RegExp(`^${prefix}(?:${lengths.map((length) => `[A-Za-z0-9_-]{${length}}`).join('|')})$`);
};

/** When each event is sent, and what `data.id` names. */
const webhookEventWhen: Readonly<Record<WebhookEventType, string>> = {
  'response.completed': 'A Response (a request made by `POST /v1/responses`) completed.',
  'response.failed': 'A Response failed for good, after the attempts airs makes (`processing.maxAttempts`).',
  'response.cancelled':
    'A Response was cancelled (`POST /v1/responses/{id}/cancel`, or a waiting create whose caller went away).',
  'batch.completed': 'A batch finished every line; its output and error files are written.',
  'batch.failed': 'A batch’s input file was refused (its lines are not valid); no line was run.',
  'batch.expired': 'A batch’s completion window passed before every line finished; its files hold the lines that did.',
  'batch.cancelled': 'A cancelled batch stopped; its files hold the lines that finished before.',
  'request.completed':
    'A request completed, whichever face made it (`/v1/ai`, `/v1/chat/completions`, `/v1/responses`); a batch’s ' +
    'lines make none (their batch’s event is the one).',
  'request.failed': 'A request failed for good, after the attempts airs makes (`processing.maxAttempts`).',
  'request.cancelled': 'A request was cancelled before it finished.',
  'request.expired': 'A request reached the end of its lifetime (`requestTtlSeconds`) still queued or processing.',
};

/** What `data.id` of an event of `type` is: the Response's, the batch's or the request's id. */
const webhookDataKind = (type: WebhookEventType): IdKind =>
  type.startsWith('response.') ? 'response' : type.startsWith('batch.') ? 'batch' : 'request';

/** The body of a delivery of `type`: OpenAI's event envelope (domain/webhook/envelope.ts). */
export const webhookEventSchema = (type: WebhookEventType) =>
  z
    .object({
      id: z
        .string()
        .regex(idPattern('webhookEvent'))
        .meta({
          description:
            'The event’s id, `evt_…`: made from what it is about, the same in every attempt and redelivery, and the ' +
            'same on every node. Dedupe on it (or on `webhook-id`, one per endpoint).',
        }),
      object: z.literal('event'),
      created_at: z
        .number()
        .int()
        .nonnegative()
        .meta({ description: 'When the event happened (the ending), in unix seconds; the same in every attempt.' }),
      type: z.literal(type),
      data: z
        .looseObject({
          id: z
            .string()
            .regex(idPattern(webhookDataKind(type)))
            .meta({
              description: `The ${webhookDataKind(type)}’s id (\`${idForms[webhookDataKind(type)].prefix}…\`): fetch it for the rest.`,
            }),
        })
        .meta({ description: 'What the event is about. Other fields may be added.' }),
    })
    .meta({ description: `\`${type}\`: ${webhookEventWhen[type]}` });

/** `response.completed` → `WebhookResponseCompleted`, the name of its body's schema (as OpenAI names them). */
export const webhookSchemaName = (type: WebhookEventType): string =>
  `Webhook${type
    .split('.')
    .map((part) => `${part[0]?.toUpperCase()}${part.slice(1)}`)
    .join('')}`;

/** The Standard Webhooks headers of every delivery (app/webhooks/signing.ts). */
const webhookHeaders = {
  'webhook-id': {
    description:
      'The delivery’s id, `wh_…` (one per event and endpoint): the same on every retry and redelivery, so a ' +
      'receiver that has seen it can answer 2xx and do nothing.',
    schema: z.string().regex(idPattern('webhookDelivery')),
  },
  'webhook-timestamp': {
    description:
      'When this attempt was signed, in unix seconds: each retry is signed anew. Refuse one far from now (the ' +
      '`openai` SDK allows 5 minutes) against replays.',
    schema: z.string().regex(/^\d{1,12}$/),
  },
  'webhook-signature': {
    description:
      'Standard Webhooks signatures, space-separated: `v1,<base64 of HMAC-SHA256(key, "<webhook-id>.' +
      '<webhook-timestamp>.<body>")>`, the key being the base64 after `whsec_` in the endpoint’s secret. Two during ' +
      'the 24 hours after a rotation (the old and the new secret); accept the delivery if any one matches. ' +
      '`client.webhooks.unwrap(body, headers)` of the `openai` SDK checks it.',
    schema: z.string().regex(/^v1,[A-Za-z0-9+/]{43}=(?: v1,[A-Za-z0-9+/]{43}=)*$/),
  },
} as const;

export const webhookHeaderParameters = Object.fromEntries(
  Object.entries(webhookHeaders).map(([name, header]) => [
    name,
    { name, in: 'header', required: true, description: header.description, schema: jsonSchema(header.schema) },
  ]),
);

/** One `webhooks` entry: the POST airs makes to an endpoint whose filter takes `type` (no filter: every type). */
export const webhookOperation = (type: WebhookEventType) => ({
  post: {
    operationId: `webhook${webhookSchemaName(type).slice('Webhook'.length)}`,
    summary: `${type}`,
    description:
      `${webhookEventWhen[type]} POSTed to each enabled endpoint of the account whose events include \`${type}\` ` +
      '(an endpoint added without `--events` gets every type), signed per Standard Webhooks. Delivered at least ' +
      'once; not in any order.',
    tags: ['Webhooks'],
    security: [],
    parameters: Object.keys(webhookHeaders).map((name) => ref('parameters', name)),
    requestBody: { required: true, content: jsonContent(webhookSchemaName(type)) },
    responses: {
      '2XX': {
        description:
          'Acknowledged: any 2xx answered within 10 seconds counts as delivered. At most 64 KiB of the answer is ' +
          'read; its body is not kept.',
      },
      default: {
        description:
          'Anything else is a failed attempt: another status (a 3xx too: redirects are not followed), no status ' +
          'within 10 seconds, a connection refused or broken. It is retried with exponential backoff and jitter ' +
          'for up to 72 hours after the event (`webhooks.retentionHours`), with the same `webhook-id` and body. ' +
          'An endpoint that has failed for 3 days is disabled until `airs webhooks enable`.',
      },
    },
  },
});
