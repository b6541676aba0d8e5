import { Notice } from './Notice.js';

/**
 * The full key, this once: a read-only field (select and copy by hand without JavaScript) and a Copy button the
 * script reveals and wires.
 */
export const NewKey = ({ value, name }: { value: string; name?: string }) => (
  <Notice kind="warning">
    <section class="new-key" aria-labelledby="new-key-h">
      <h2 id="new-key-h">{name === undefined ? 'Your new API key' : `Your new API key “${name}”`}</h2>
      <p>
        <strong>Copy it now: it will not be shown again.</strong> airs keeps only a hash of it. If you lose it, delete
        it and create another.
      </p>
      <label for="new-key">API key</label>
      <div class="copy-row">
        <input id="new-key" type="text" readOnly value={value} autocomplete="off" spellcheck={false} />
        <button type="button" data-copy="new-key" hidden>
          Copy
        </button>
      </div>
      <p class="copied" id="new-key-status" role="status" aria-live="polite" />
    </section>
  </Notice>
);
