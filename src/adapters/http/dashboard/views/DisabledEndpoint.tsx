import { CsrfField } from './CsrfField.js';
import { Notice } from './Notice.js';
import { Time } from './Time.js';
import type { WebhookEndpointRow } from './viewModels.js';
import { webhookPath } from './WebhookTable.js';

/** The notice a disabled endpoint gets (issue 30: webhooks must not stop silently), with its Enable button. */
export const DisabledEndpoint = ({ csrf, row }: { csrf: string; row: WebhookEndpointRow }) => (
  <Notice kind="warning">
    <p>
      <code>{row.url}</code> was disabled after failing for 3 days
      {row.disabledAt !== undefined && (
        <>
          {' on '}
          <Time at={row.disabledAt} />
        </>
      )}
      ; enable it to receive deliveries again. Deliveries it missed can be sent again from its delivery log (Redeliver).
    </p>
    <form method="post" action={webhookPath(row.id, 'enable')}>
      <CsrfField token={csrf} />
      <button type="submit">Enable this endpoint</button>
    </form>
  </Notice>
);
