import type { AccountLimitKey, EffectiveLimits } from '../../../../domain/account/limits.js';
import type { PlanName } from '../../../../domain/plans.js';
import type { TokensUsed } from '../../../../domain/tokens/tokenBudget.js';
import { grouped, planTitle } from './format.js';

/** Each limit as the overview names it, in the order shown. */
const rows: readonly (readonly [AccountLimitKey, string])[] = [
  ['submitsPerMinute', 'Submits per minute'],
  ['pollsPerMinute', 'Polls per minute'],
  ['maxKeys', 'API keys'],
  ['maxQueued', 'Requests waiting or processing'],
  ['maxProcessing', 'Requests processing at once'],
  ['maxOpenCalls', 'Open calls (streams, waits)'],
  ['maxBatchesInProgress', 'Batches in progress'],
  ['maxFiles', 'Files kept'],
  ['maxFileStorageBytes', 'File storage (bytes)'],
  ['maxConcurrentUploads', 'Uploads at once'],
  ['maxWebhookEndpoints', 'Webhook endpoints'],
  ['tokensPerMinute', 'Tokens per minute'],
  ['tokensPerDay', 'Tokens per day (UTC)'],
  ['tokensPerMonth', 'Tokens per month (UTC)'],
  ['allowedModels', 'Models'],
];

const valueText = (value: EffectiveLimits[AccountLimitKey]): string => {
  if (value === undefined) return 'all';
  if (value === null) return 'unlimited';
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.join(', ');
  return grouped(value as number);
};

/** What is used of a token limit, where the account has one: "1,234 used (12%)". */
const usedText = (key: AccountLimitKey, limits: EffectiveLimits, used: TokensUsed): string | undefined => {
  if (key !== 'tokensPerMinute' && key !== 'tokensPerDay' && key !== 'tokensPerMonth') return undefined;
  const limit = limits[key];
  if (limit === null) return undefined;
  return `${grouped(used[key])} used (${Math.min(100, Math.floor((100 * used[key]) / limit))}%)`;
};

/** The limits the account is held to (contract 21): its plan's, each of its own overrides marked as such, and what it
 * has used of each token budget (tokens of requests that ended; the day and month are UTC's). */
export const AccountLimits = ({
  plan,
  limits,
  used,
}: {
  plan: PlanName;
  limits: EffectiveLimits;
  used: TokensUsed;
}) => (
  <section class="card" aria-labelledby="limits-h">
    <h2 id="limits-h">Your limits</h2>
    <p class="hint">The {planTitle(plan)} plan's, except those marked "set for your account" by your operator.</p>
    <table id="limits">
      <tbody>
        {rows.map(([key, label]) => (
          <tr data-limit={key} class={limits.own.includes(key) ? 'own' : undefined}>
            <th scope="row">{label}</th>
            <td class="num">{valueText(limits[key])}</td>
            <td class="num" data-used={key}>
              {usedText(key, limits, used)}
            </td>
            <td>{limits.own.includes(key) && <span class="muted">set for your account</span>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  </section>
);
