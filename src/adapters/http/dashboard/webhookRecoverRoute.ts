import type * as Effect from 'effect/Effect';
import * as Result from 'effect/Result';
import type { H3Event } from 'h3';
import type { WebhooksShape } from '../../../app/webhooks/Webhooks.js';
import type { WebhookEndpointState } from '../../../domain/webhook/endpoint.js';
import { hourMs } from '../../../storage/timeBuckets.js';
import { recoverWindows } from './views/webhookPage.js';

/** What the recover route needs of the dashboard's routes (routes.ts): its helpers, so it answers as they do. */
export type RecoverRouteDeps<Visitor, Answer> = {
  readonly post: (path: string, handler: (event: H3Event) => unknown) => void;
  readonly action: (
    change: (event: H3Event, who: Visitor, form: URLSearchParams) => Promise<Answer>,
  ) => (event: H3Event) => unknown;
  readonly ownEndpoint: (event: H3Event, who: Visitor) => Promise<WebhookEndpointState | undefined>;
  readonly accountOf: (who: Visitor) => string;
  readonly notFound: (event: H3Event, who: Visitor) => Answer;
  readonly seeOther: (event: H3Event, location: string) => Answer;
  /** The endpoint's page with a refusal on it (400). */
  readonly refused: (event: H3Event, who: Visitor, endpoint: WebhookEndpointState, message: string) => Promise<Answer>;
  readonly webhooks: WebhooksShape;
  readonly run: WebhooksRun;
  readonly now: () => number;
  readonly logRecovered: (accountId: string, endpointId: string, redelivered: number) => void;
};

type WebhooksRun = <A, E>(effect: Effect.Effect<A, E>) => Promise<Result.Result<A, E>>;

/**
 * `POST /dashboard/webhooks/:id/recover` (issue 42): the endpoint's deliveries that gave up, for events in the window
 * the form names (one of `recoverWindows`, nothing else), sent again through the Webhooks service (bounded per call:
 * app/webhooks/recover.ts); then back to the endpoint's page, which says how many (a redirect: a reload sends nothing).
 */
export const mountWebhookRecover = <Visitor, Answer>(deps: RecoverRouteDeps<Visitor, Answer>) => {
  deps.post(
    '/dashboard/webhooks/:id/recover',
    deps.action(async (event, who, form) => {
      const endpoint = await deps.ownEndpoint(event, who);
      if (endpoint === undefined) return deps.notFound(event, who);
      const window = recoverWindows.find((one) => String(one.hours) === form.get('hours'));
      if (window === undefined) return deps.refused(event, who, endpoint, 'Choose how far back to recover.');
      const accountId = deps.accountOf(who);
      const since = deps.now() - window.hours * hourMs;
      const recovered = await deps.run(deps.webhooks.recover(accountId, endpoint.endpointId, since));
      if (Result.isFailure(recovered)) {
        const message = recovered.failure.message;
        return deps.refused(event, who, endpoint, `${message.charAt(0).toUpperCase()}${message.slice(1)}.`);
      }
      const { redelivered, more } = recovered.success;
      deps.logRecovered(accountId, endpoint.endpointId, redelivered);
      const query = `recovered=${redelivered}${more ? '&more=1' : ''}`;
      return deps.seeOther(event, `/dashboard/webhooks/${encodeURIComponent(endpoint.endpointId)}?${query}`);
    }),
  );
};
