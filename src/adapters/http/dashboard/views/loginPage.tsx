import { CredentialFields } from './CredentialFields.js';
import { CsrfField } from './CsrfField.js';
import { plural } from './format.js';
import { Layout } from './Layout.js';
import { Notice } from './Notice.js';
import { renderDocument } from './render.js';
import type { LoginView } from './viewModels.js';

/** `GET /dashboard/login`; with `error` after a failed login, with `throttledMinutes` when logins are throttled. */
export const loginPage = ({ csrf, email, error, throttledMinutes }: LoginView): string =>
  renderDocument(
    <Layout title="Log in" narrow>
      <h1>Log in</h1>
      {throttledMinutes !== undefined && (
        <Notice kind="warning">
          <p>
            <strong>Too many failed logins.</strong> Wait {plural(Math.max(1, Math.ceil(throttledMinutes)), 'minute')}{' '}
            and try again.
          </p>
        </Notice>
      )}
      {error !== undefined && (
        <Notice kind="error">
          <p>{error}</p>
        </Notice>
      )}
      <form class="card" method="post" action="/dashboard/login">
        <CsrfField token={csrf} />
        <CredentialFields email={email} newPassword={false} />
        <button type="submit">Log in</button>
      </form>
      <p>
        New here? <a href="/dashboard/signup">Create an account</a>: the free plan works at once, no card needed.
      </p>
    </Layout>,
  );
