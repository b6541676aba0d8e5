import { getQuery, getRouterParam, type H3, type H3Event } from 'h3';
import type { AdminAccounts } from '../../../app/adminAccounts.js';
import { HttpRoute } from '../../../app/Metrics.js';
import { type ApiError, MethodNotAllowed } from '../../../domain/errors.js';
import type { ReadModel } from '../../../ports/Store.js';
import { isApiError } from '../errorResponse.js';
import type { Guard } from '../guard.js';
import { json } from '../jsonAnswer.js';
import { adminAccountRoutes } from './accountRoutes.js';
import type { AdminGuard, AdminRoute } from './adminGuard.js';
import { adminKeyRoutes } from './keyRoutes.js';
import { usageRoute } from './usageRoute.js';

export type AdminMountDeps = {
  readonly accounts: AdminAccounts;
  /** The API's guard (guard.ts): CORS, draining, counts, faults. */
  readonly guard: Guard;
  /** The admin key's guard (adminGuard.ts), inside it. */
  readonly adminGuard: AdminGuard;
  /** Reads a JSON body within `maxAdminBodyBytes` (adminAnswers.ts) and the JSON bounds. */
  readonly readJsonBody: (event: H3Event) => Promise<unknown | ApiError>;
  /** What the usage route reads. */
  readonly reads: Pick<ReadModel, 'usageRows'>;
};

const pathId = (event: H3Event): string => {
  const raw = getRouterParam(event, 'id') ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
};

/** The admin API (product contract 21): accounts and their keys, for an operator's backend. */
export const mountAdmin = (app: H3, deps: AdminMountDeps): void => {
  const routeDeps = { accounts: deps.accounts, readJsonBody: deps.readJsonBody, pathId };
  const accounts = adminAccountRoutes(routeDeps);
  const keys = adminKeyRoutes(routeDeps);

  /** One path, its methods behind both guards, and a 405 (with `Allow`) for any other method. */
  const path = (pattern: string, routes: Readonly<Record<string, AdminRoute>>) => {
    const guarded = new Map(
      Object.entries(routes).map(([method, route]) => [method, deps.guard(deps.adminGuard(route), HttpRoute.other)]),
    );
    const allow = Object.keys(routes);
    const wrongMethod = deps.guard(
      async (event) =>
        new MethodNotAllowed({
          message: `${event.req.method} is not allowed on ${pattern.replace(':id', '{id}')}; use ${allow.join(' or ')}`,
          allow,
        }),
      HttpRoute.other,
    );
    app.all(pattern, (event) => (guarded.get(event.req.method) ?? wrongMethod)(event));
  };
  path('/v1/admin/accounts', { POST: accounts.create, GET: accounts.list });
  path('/v1/admin/accounts/:id', { GET: accounts.retrieve, PATCH: accounts.patch });
  path('/v1/admin/accounts/:id/keys', { POST: keys.create, GET: keys.list });
  path('/v1/admin/keys/:id', { DELETE: keys.revoke });
  path('/v1/admin/usage', {
    GET: async (event, headers) => {
      const page = await usageRoute(getQuery(event), { reads: deps.reads });
      return isApiError(page) ? page : json(200, page, headers);
    },
  });
};
