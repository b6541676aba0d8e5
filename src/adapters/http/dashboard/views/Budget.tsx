import { grouped, shortWait } from './format.js';
import type { BudgetView } from './viewModels.js';

/** One rate-limit budget now: a meter, what is left of the limit, and when it is whole again. */
export const Budget = ({ id, label, budget }: { id: string; label: string; budget: BudgetView }) => {
  const { remaining, limit, resetSeconds } = budget;
  return (
    <div class="budget">
      <div class="line">
        <span id={`${id}-label`}>
          <strong>{label}</strong>
        </span>
        <span>
          {grouped(remaining)} of {grouped(limit)} left this minute
        </span>
      </div>
      <meter
        id={id}
        aria-labelledby={`${id}-label`}
        min={0}
        max={limit}
        low={limit / 10}
        optimum={limit}
        value={remaining}
      >
        {grouped(remaining)} of {grouped(limit)}
      </meter>
      <p class="hint">{remaining >= limit ? 'Full budget available.' : `Full again ${shortWait(resetSeconds)}.`}</p>
    </div>
  );
};
