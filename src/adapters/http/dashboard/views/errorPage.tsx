import { Layout } from './Layout.js';
import { renderDocument } from './render.js';
import type { ErrorView } from './viewModels.js';

/** The page for a refused or failed dashboard call: 403 (bad CSRF token), 404, 413 (a form too large), 429 (logins throttled), 500. */
export const errorPage = ({ status, title, message, loggedIn, csrf, email }: ErrorView): string =>
  renderDocument(
    <Layout title={title} session={loggedIn ? { csrf, email } : undefined} narrow={!loggedIn}>
      <p class="muted">Error {status}</p>
      <h1>{title}</h1>
      <p>{message}</p>
      <p>
        {loggedIn ? (
          <a class="button" href="/dashboard">
            Back to the overview
          </a>
        ) : (
          <a class="button" href="/dashboard/login">
            Go to the login page
          </a>
        )}
      </p>
    </Layout>,
  );
