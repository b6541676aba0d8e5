import { NotFound } from '../../../domain/errors.js';
import { isApiError } from '../errorResponse.js';
import { json } from '../jsonAnswer.js';
import type { AdminRouteDeps } from './accountRoutes.js';
import { asApiError, idempotencyOf, parsed } from './adminAnswers.js';
import type { AdminRoute } from './adminGuard.js';
import { keyJson } from './adminJson.js';
import { adminKeyCreateSchema } from './bodies.js';

/** `/v1/admin/accounts/{id}/keys` and `/v1/admin/keys/{keyId}`. */
export const adminKeyRoutes = (deps: AdminRouteDeps) => {
  const create: AdminRoute = async (event, headers, admin) => {
    const idempotencyKey = idempotencyOf(event);
    if (isApiError(idempotencyKey)) return idempotencyKey;
    const body = await parsed(deps.readJsonBody(event), adminKeyCreateSchema);
    if (isApiError(body)) return body;
    const made = await deps.accounts.createKey(
      admin,
      deps.pathId(event),
      { name: body.name, expiresAt: body.expires_at === undefined ? undefined : body.expires_at * 1000 },
      idempotencyKey,
    );
    if (!('made' in made)) return asApiError(made);
    if (made.replayed) headers['Idempotent-Replayed'] = 'true';
    // The key itself is in this answer only; it is neither stored nor logged.
    return json(201, { ...keyJson(made.made.key), key: made.made.secret }, headers);
  };

  const list: AdminRoute = async (event, headers) => {
    const keys = await deps.accounts.listKeys(deps.pathId(event));
    return keys instanceof NotFound ? keys : json(200, { object: 'list', data: keys.map(keyJson) }, headers);
  };

  const revoke: AdminRoute = async (event, headers, admin) => {
    const revoked = await deps.accounts.revokeKey(admin, deps.pathId(event));
    return 'keyId' in revoked ? json(200, keyJson(revoked), headers) : asApiError(revoked);
  };

  return { create, list, revoke };
};
