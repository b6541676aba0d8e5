import { emailMaxLength, passwordMaxLength, passwordMinLength } from './limits.js';

/** The email and password fields of the signup and login forms; a new password says its rule and asks for it. */
export const CredentialFields = ({ email, newPassword }: { email: string | undefined; newPassword: boolean }) => (
  <>
    <div class="field">
      <label for="email">Email</label>
      <input
        id="email"
        name="email"
        type="email"
        autocomplete={newPassword ? 'email' : 'username'}
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
        autocomplete={newPassword ? 'new-password' : 'current-password'}
        required
        minLength={newPassword ? passwordMinLength : undefined}
        maxLength={passwordMaxLength}
        aria-describedby={newPassword ? 'password-hint' : undefined}
      />
      {newPassword && (
        <p class="hint" id="password-hint">
          At least {passwordMinLength} characters.
        </p>
      )}
    </div>
  </>
);
