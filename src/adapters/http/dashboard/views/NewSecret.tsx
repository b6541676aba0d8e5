import { Notice } from './Notice.js';

/**
 * An endpoint's signing secret, this once (after an add or a rotation), as a new key is shown (NewKey.tsx): a
 * read-only field and a Copy button the script reveals; with how a receiver verifies deliveries with it.
 */
export const NewSecret = ({ secret, url, rotated }: { secret: string; url: string; rotated: boolean }) => (
  <Notice kind="warning">
    <section class="new-key" aria-labelledby="new-secret-h">
      <h2 id="new-secret-h">{rotated ? 'The new signing secret' : 'Your new webhook endpoint’s signing secret'}</h2>
      <p>
        For <code>{url}</code>. <strong>Copy it now: it will not be shown again.</strong> If you lose it, rotate it to
        get another.
      </p>
      <label for="new-secret">Signing secret</label>
      <div class="copy-row">
        <input id="new-secret" type="text" readOnly value={secret} autocomplete="off" spellcheck={false} />
        <button type="button" data-copy="new-secret" hidden>
          Copy
        </button>
      </div>
      <p class="copied" id="new-secret-status" role="status" aria-live="polite" />
      <p>
        Verify every delivery with the <code>openai</code> SDK:{' '}
        <code>client.webhooks.unwrap(body, headers, secret)</code> checks its signature (give it the body as received,
        before parsing it) and returns the event.
      </p>
      {rotated && <p>The secret it replaces still signs deliveries for 24 hours: each then carries both signatures.</p>}
    </section>
  </Notice>
);
