import { CsrfField } from './CsrfField.js';
import { grouped, keyLimit } from './format.js';
import { KeyTable } from './KeyTable.js';
import { Layout } from './Layout.js';
import { keyNameMaxLength } from './limits.js';
import { NewKey } from './NewKey.js';
import { Notice } from './Notice.js';
import { renderDocument } from './render.js';
import type { KeysView } from './viewModels.js';

/**
 * `GET /dashboard/keys`, and the answer to a creation (`newKey`, shown in full this once) or to a refused one
 * (`error`).
 */
export const keysPage = ({ csrf, email, keys, maxKeys, newKey, error, deleted }: KeysView): string => {
  // At the limit the form is disabled with its reason beside it; the server still refuses a post (a stale tab).
  const atLimit = maxKeys !== null && keys.length >= maxKeys;
  return renderDocument(
    <Layout title="API keys" session={{ csrf, email }} current="keys">
      <h1>API keys</h1>
      {error !== undefined && (
        <Notice kind="error">
          <p>{error}</p>
        </Notice>
      )}
      {deleted !== undefined && (
        <Notice kind="info">
          <p role="status">
            Key <code>{deleted.prefix}…</code>
            {deleted.name !== undefined && ` (${deleted.name})`} was deleted. API calls with it are refused from now on.
          </p>
        </Notice>
      )}
      {newKey !== undefined && <NewKey value={newKey.key} name={newKey.name} />}
      <section class="card" aria-labelledby="list-h">
        <h2 id="list-h">
          Your keys{' '}
          <span class="muted">
            ({grouped(keys.length)} of {keyLimit(maxKeys)})
          </span>
        </h2>
        {keys.length === 0 ? (
          <div class="empty">
            <p>You have no API keys yet.</p>
            <p>
              Create one below, then send it as <code>Authorization: Bearer KEY</code>.
            </p>
          </div>
        ) : (
          <KeyTable csrf={csrf} keys={keys} />
        )}
      </section>
      <section class="card" aria-labelledby="create-h">
        <h2 id="create-h">Create a key</h2>
        <form class="inline-form" method="post" action="/dashboard/keys">
          <CsrfField token={csrf} />
          <div class="field">
            <label for="key-name">
              Name <span class="muted">(optional)</span>
            </label>
            <input
              id="key-name"
              name="name"
              type="text"
              maxLength={keyNameMaxLength}
              autocomplete="off"
              aria-describedby="key-name-hint"
              disabled={atLimit}
            />
          </div>
          <button type="submit" disabled={atLimit} aria-describedby={atLimit ? 'key-limit' : undefined}>
            Create key
          </button>
          {atLimit && (
            <p class="limit-reason" id="key-limit">
              Your plan allows {keyLimit(maxKeys)} {maxKeys === 1 ? 'key' : 'keys'}; delete one to create another, or
              ask your operator for a larger plan.
            </p>
          )}
        </form>
        <p class="hint" id="key-name-hint">
          A name helps you tell keys apart, such as the app or server that uses it. The key is shown once.
        </p>
      </section>
    </Layout>,
  );
};
