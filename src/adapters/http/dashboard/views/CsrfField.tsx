/** The hidden CSRF token every state-changing form carries (its field name is `csrf`). */
export const CsrfField = ({ token }: { token: string }) => <input type="hidden" name="csrf" value={token} />;
