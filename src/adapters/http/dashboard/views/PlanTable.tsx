import { type BuiltInPlanName, type PlanName, planNames } from '../../../../domain/plans.js';
import { grouped, keyLimit, planTitle as title } from './format.js';
import type { PlanRow } from './viewModels.js';

/** The four plans side by side, the account's own marked. */
export const PlanTable = ({
  plans,
  current,
}: {
  plans: Readonly<Record<BuiltInPlanName, PlanRow>>;
  current: PlanName;
}) => (
  <div class="table-wrap">
    <table>
      <caption class="visually-hidden">Plans and their limits</caption>
      <thead>
        <tr>
          <th scope="col">Plan</th>
          <th scope="col" class="num">
            API keys
          </th>
          <th scope="col" class="num">
            Submits / minute
          </th>
          <th scope="col" class="num">
            Polls / minute
          </th>
        </tr>
      </thead>
      <tbody>
        {planNames.map((plan) => (
          <tr class={plan === current ? 'current' : undefined}>
            <th scope="row">
              {title(plan)}
              {plan === current && <span class="muted"> (your plan)</span>}
            </th>
            <td class="num">{keyLimit(plans[plan].maxKeys)}</td>
            <td class="num">{grouped(plans[plan].submitsPerMinute)}</td>
            <td class="num">{grouped(plans[plan].pollsPerMinute)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);
