import { AccountLimits } from './AccountLimits.js';
import { Budget } from './Budget.js';
import { grouped, keyLimit, planTitle } from './format.js';
import { Layout } from './Layout.js';
import { PlanTable } from './PlanTable.js';
import { renderDocument } from './render.js';
import type { OverviewView } from './viewModels.js';

/** `GET /dashboard`: plan and its limits, keys used of allowed, the rate-limit budgets now, the last day's usage. */
export const overviewPage = (view: OverviewView): string => {
  const { csrf, email, plan, plans, limits, tokensUsed, keysUsed, maxKeys, rate, requestsLast24h, tokensByDay } = view;
  return renderDocument(
    <Layout title="Overview" session={{ csrf, email }} current="overview">
      <h1>Overview</h1>
      <div class="grid">
        <section class="card" aria-labelledby="plan-h">
          <h2 id="plan-h">Plan</h2>
          <p class="stat">{planTitle(plan)}</p>
          <p class="muted">
            {grouped(limits.submitsPerMinute)} submits and {grouped(limits.pollsPerMinute)} polls per minute
          </p>
        </section>
        <section class="card" aria-labelledby="keys-h">
          <h2 id="keys-h">API keys</h2>
          <p class="stat">
            {grouped(keysUsed)} <span class="muted">of {keyLimit(maxKeys)}</span>
          </p>
          <p>
            <a href="/dashboard/keys">Manage keys</a>
          </p>
        </section>
        <section class="card" aria-labelledby="usage-h">
          <h2 id="usage-h">Requests, last 24 hours</h2>
          <p class="stat">{grouped(requestsLast24h)}</p>
          <p>
            <a href="/dashboard/requests">See requests</a>
          </p>
        </section>
      </div>
      <section class="card" aria-labelledby="tokens-h">
        <h2 id="tokens-h">Tokens per day</h2>
        <p class="hint">
          What your completed requests' models read and wrote, by day (UTC): the model's own count, or words for the
          echo models.
        </p>
        <table id="tokens">
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col" class="num">
                Input
              </th>
              <th scope="col" class="num">
                Output
              </th>
              <th scope="col" class="num">
                Total
              </th>
            </tr>
          </thead>
          <tbody>
            {tokensByDay.map(({ day, inputTokens, outputTokens }) => (
              <tr>
                <td>{new Date(day).toISOString().slice(0, 10)}</td>
                <td class="num">{grouped(inputTokens)}</td>
                <td class="num">{grouped(outputTokens)}</td>
                <td class="num">{grouped(inputTokens + outputTokens)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section class="card" aria-labelledby="rate-h">
        <h2 id="rate-h">Rate limits now</h2>
        <p class="hint">
          Counted across all your keys and every face of the API. Submits: <code>POST /v1/ai</code>,{' '}
          <code>/v1/responses</code>, <code>/v1/chat/completions</code>, <code>/v1/batches</code> and{' '}
          <code>/v1/files</code>, and deleting a file. Polls: reading requests, responses, batches, files and models,
          and cancelling. The whole minute's budget may be used at once.
        </p>
        <Budget id="rate-submits" label="Submits (all faces)" budget={rate.submits} />
        <Budget id="rate-polls" label="Polls (all faces)" budget={rate.polls} />
      </section>
      <AccountLimits plan={plan} limits={limits} used={tokensUsed} />
      <section class="card" aria-labelledby="plans-h">
        <h2 id="plans-h">Plans</h2>
        <PlanTable plans={plans} current={plan} />
        <p class="hint">Plan changes are made by the service's operator: to change plans, ask your operator.</p>
      </section>
    </Layout>,
  );
};
