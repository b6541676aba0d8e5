import type { H3Event } from 'h3';
import type { AdminAccounts } from '../../../app/adminAccounts.js';
import { type ApiError, InvalidRequest, NotFound } from '../../../domain/errors.js';
import { isPlanName, type PlanTable } from '../../../domain/plans.js';
import { isApiError } from '../errorResponse.js';
import { json } from '../jsonAnswer.js';
import { asApiError, idempotencyOf, parsed } from './adminAnswers.js';
import type { AdminRoute } from './adminGuard.js';
import { accountJson } from './adminJson.js';
import { adminAccountCreateSchema, adminAccountPatchSchema } from './bodies.js';

export type AdminRouteDeps = {
  readonly accounts: AdminAccounts;
  /** The body as JSON, within `maxAdminBodyBytes` and the JSON bounds. */
  readonly readJsonBody: (event: H3Event) => Promise<unknown | ApiError>;
  /** The path's `:id`, decoded. */
  readonly pathId: (event: H3Event) => string;
};

/** Accounts listed at once at most, and when `limit` is absent. */
const listLimits = { max: 100, fallback: 20 };

/** A plan the config has now (the four built-in ones and those the config defines). */
const planOf = (plans: PlanTable, plan: string | undefined) => {
  if (plan === undefined || isPlanName(plans, plan)) return plan;
  return new InvalidRequest({
    message: `plan: unknown plan "${plan}"; plans are ${Object.keys(plans).join(', ')}`,
    details: { param: 'plan' },
  });
};

/** `/v1/admin/accounts` and `/v1/admin/accounts/{id}`. */
export const adminAccountRoutes = (deps: AdminRouteDeps) => {
  const create: AdminRoute = async (event, headers, admin) => {
    const idempotencyKey = idempotencyOf(event);
    if (isApiError(idempotencyKey)) return idempotencyKey;
    const body = await parsed(deps.readJsonBody(event), adminAccountCreateSchema);
    if (isApiError(body)) return body;
    const plan = planOf(deps.accounts.plans(), body.plan);
    if (isApiError(plan)) return plan;
    const made = await deps.accounts.createAccount(
      admin,
      { email: body.email, plan: plan ?? 'free', limits: body.limits },
      idempotencyKey,
    );
    if (!('made' in made)) return asApiError(made);
    if (made.replayed) headers['Idempotent-Replayed'] = 'true';
    return json(201, accountJson(made.made), headers);
  };

  const list: AdminRoute = async (event, headers) => {
    const given = event.url.searchParams.get('limit');
    const limit = given === null ? listLimits.fallback : Number(given);
    if (!Number.isInteger(limit) || limit < 1 || limit > listLimits.max)
      return new InvalidRequest({
        message: `limit must be a whole number from 1 to ${listLimits.max}`,
        details: { param: 'limit' },
      });
    const after = event.url.searchParams.get('after') ?? undefined;
    if (after !== undefined && after.length > 100)
      return new InvalidRequest({ message: 'after must be an account id', details: { param: 'after' } });
    const page = await deps.accounts.listAccounts({ limit, after });
    return json(
      200,
      {
        object: 'list',
        data: page.data.map(accountJson),
        has_more: page.hasMore,
        last_id: page.data.at(-1)?.accountId ?? null,
      },
      headers,
    );
  };

  const retrieve: AdminRoute = async (event, headers) => {
    const account = await deps.accounts.account(deps.pathId(event));
    return account instanceof NotFound ? account : json(200, accountJson(account), headers);
  };

  const patch: AdminRoute = async (event, headers, admin) => {
    const body = await parsed(deps.readJsonBody(event), adminAccountPatchSchema);
    if (isApiError(body)) return body;
    const plan = planOf(deps.accounts.plans(), body.plan);
    if (isApiError(plan)) return plan;
    const changed = await deps.accounts.patchAccount(admin, deps.pathId(event), {
      plan,
      limits: body.limits,
      suspended: body.suspended,
    });
    return 'accountId' in changed ? json(200, accountJson(changed), headers) : asApiError(changed);
  };

  return { create, list, retrieve, patch };
};
