import type { EffectiveLimits } from '../domain/account/limits.js';
import { QuotaExceeded, RateLimited } from '../domain/errors.js';
import { type PlanTable, planLimitsOf } from '../domain/plans.js';
import { hasTokenLimits, type TokenLimits, tokenRefusal, tokenRefusalMessage } from '../domain/tokens/tokenBudget.js';
import type { ReadModel } from '../ports/Store.js';
import type { Principal } from './Auth.js';

/**
 * The token limits that hold for the account: the one place they are read (contract 21). Its effective limits (its
 * plan's, overridden by its own) where the caller resolved them, else its plan's.
 */
export const tokenLimitsOf = (plans: PlanTable, account: TokenAccount): TokenLimits =>
  account.limits ?? planLimitsOf(plans, account.plan);

/** The account a check is for: the caller's (a principal, whose limits authentication resolved), or a batch's. */
export type TokenAccount = Pick<Principal, 'accountId' | 'plan'> & { readonly limits?: EffectiveLimits | undefined };

export type TokenBudgetRefusal = RateLimited | QuotaExceeded;

/**
 * Whether the principal's account may submit now by its tokens (domain/tokens/tokenBudget.ts): one read of its token
 * buckets, none at all for an account without token limits (`undefined` then, with nothing to await: the submit's path
 * stays as it was). Tokens are counted when requests end, never here.
 */
export const createTokenBudget = (deps: {
  readonly reads: Pick<ReadModel, 'tokenUse'>;
  readonly plans: () => PlanTable;
  readonly now: () => number;
}) => {
  const refusalOf = async (principal: TokenAccount, limits: TokenLimits): Promise<TokenBudgetRefusal | undefined> => {
    const now = deps.now();
    const refusal = tokenRefusal(limits, await deps.reads.tokenUse(principal.accountId), now);
    if (refusal === undefined) return undefined;
    if (refusal.kind === 'rate') {
      const retryAfterSeconds = Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
      return new RateLimited({
        message: tokenRefusalMessage(refusal, retryAfterSeconds),
        retryAfterSeconds,
        budget: 'tokens',
      });
    }
    const { budget, limit, used, resetsAt } = refusal;
    const retryAfterSeconds = Math.max(1, Math.ceil((resetsAt - now) / 1000));
    return new QuotaExceeded({
      message: tokenRefusalMessage(refusal, retryAfterSeconds),
      budget,
      limit,
      used,
      resetsAt,
      retryAfterSeconds,
    });
  };
  return {
    /** The refusal a submit of the principal's gets now, if any; `undefined` at once where no token limit holds. */
    check(principal: TokenAccount): Promise<TokenBudgetRefusal | undefined> | undefined {
      const limits = tokenLimitsOf(deps.plans(), principal);
      return hasTokenLimits(limits) ? refusalOf(principal, limits) : undefined;
    },
  };
};

export type TokenBudget = ReturnType<typeof createTokenBudget>;
