import { effectiveLimits } from '../../../domain/account/limits.js';
import { tokensUsed } from '../../../domain/tokens/tokenBudget.js';
import { dayStartOf } from '../../../storage/projection.js';
import { hourMs } from '../../../storage/timeBuckets.js';
import type { DashboardKit } from './pageKit.js';
import { overviewPage } from './views/pages.js';

/** The dashboard's overview (`/dashboard`): the account's plan, limits, budgets, keys and recent usage. */

/** Days of token usage the overview shows, today included. */
const usageDays = 7;
const dayMs = 86_400_000;

export const mountOverviewPage = ({ deps, routes, page }: DashboardKit) => {
  routes.get(
    '/dashboard',
    page(async (_event, { account, csrf }) => {
      const limits = effectiveLimits(deps.config.plans, account);
      const now = deps.clock.now();
      const hourly = await deps.store.reads.requestCountsByHour(account.accountId, now - 24 * hourMs + 1, 24);
      return overviewPage({
        csrf,
        email: account.email,
        plan: account.plan,
        plans: deps.config.plans,
        limits,
        tokensUsed: tokensUsed(await deps.store.reads.tokenUse(account.accountId), now),
        keysUsed: account.activeKeys,
        maxKeys: limits.maxKeys,
        rate: {
          submits: await deps.rateLimiter.peek(account.accountId, limits, 'submits'),
          polls: await deps.rateLimiter.peek(account.accountId, limits, 'polls'),
        },
        requestsLast24h: hourly.reduce((sum, count) => sum + count, 0),
        tokensByDay: await deps.store.reads.usageByDay(
          account.accountId,
          dayStartOf(now) - (usageDays - 1) * dayMs,
          usageDays,
        ),
      });
    }),
  );
};
