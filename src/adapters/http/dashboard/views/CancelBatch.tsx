import { CsrfField } from './CsrfField.js';

/**
 * The Cancel button of a batch that a cancel would stop (validating or in progress): a POST with the session's CSRF
 * token, behind a confirmation (a `<details>`, as deleting a key is), since lines not yet run are then never run.
 */
export const CancelBatch = ({ batchId, csrf }: { batchId: string; csrf: string }) => (
  <details class="confirm">
    <summary>Cancel…</summary>
    <p>
      Cancel batch <code>{batchId}</code>? Lines not started are never run; lines running finish. Its output and error
      files are written once it has stopped.
    </p>
    <form method="post" action={`/dashboard/batches/${encodeURIComponent(batchId)}/cancel`}>
      <CsrfField token={csrf} />
      <button type="submit" class="danger">
        Cancel this batch
      </button>
    </form>
  </details>
);
