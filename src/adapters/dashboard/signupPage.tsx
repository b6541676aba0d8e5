import { CsrfField } from './CsrfField.js';
import { Layout } from './Layout.js';
import { emailMaxLength, passwordMaxLength, passwordMinLength } from './limits.js';
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
        <div class="field">
          <label for="email">Email</label>
          <input
            id="email"
            name="email"
            type="email"
            autocomplete="email"
            required
            maxLength={emailMaxLength}
            value={email ?? ''}
          />
        </div>
        <div class="field">
          <label for="password">Password</label>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="new-password"
            required
            minLength={passwordMinLength}
            maxLength={passwordMaxLength}
            aria-describedby="password-hint"
          />
          <p class="hint" id="password-hint">
            At least {passwordMinLength} characters.
          </p>
        </div>
        <button type="submit">Create account</button>
      </form>
      <p>
        Already have an account? <a href="/dashboard/login">Log in</a>
      </p>
    </Layout>,
  );
