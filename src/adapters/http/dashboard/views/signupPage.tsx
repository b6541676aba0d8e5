import { CredentialFields } from './CredentialFields.js';
import { CsrfField } from './CsrfField.js';
import { Layout } from './Layout.js';
import { Notice } from './Notice.js';
import { renderDocument } from './render.js';
import type { SignupView } from './viewModels.js';

/** `GET /dashboard/signup`, and the answer to a refused signup (with `error` and the email kept). */
export const signupPage = ({ csrf, email, error }: SignupView): string =>
  renderDocument(
    <Layout title="Create your account" narrow>
      <h1>Create your account</h1>
      <p>
        You start on the <strong>free plan</strong> and can use it at once: no card, no payment details.
      </p>
      {error !== undefined && (
        <Notice kind="error">
          <p>{error}</p>
        </Notice>
      )}
      <form class="card" method="post" action="/dashboard/signup">
        <CsrfField token={csrf} />
        <CredentialFields email={email} newPassword={true} />
        <button type="submit">Create account</button>
      </form>
      <p>
        Already have an account? <a href="/dashboard/login">Log in</a>
      </p>
    </Layout>,
  );
