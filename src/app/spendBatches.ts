import type { Decision } from '../domain/rateLimit/gcra.js';
import type { Spend, StoreShape } from '../ports/Store.js';

type Waiting = {
  readonly spend: Spend;
  readonly resolve: (d: Decision) => void;
  readonly reject: (e: unknown) => void;
};

/**
 * Spends of many callers in one write of the store: every call (submit and poll) spends, and a write per spend costs
 * more than the rest of a poll (LMDB: a write transaction of the limiter environment; PostgreSQL: a transaction). The
 * calls handled in one turn of the event loop are decided together, in the order they came, at the end of that turn
 * (`setImmediate`: after the turn's I/O callbacks, before the next wait for I/O), each still against the state the
 * store holds then, so limits stay exact across processes. A lone call waits for nothing but the end of its turn.
 */
export const spendBatches = (store: Pick<StoreShape, 'spend'>) => {
  let waiting: Waiting[] = [];
  const flush = () => {
    const batch = waiting;
    waiting = [];
    store.spend(batch.map((each) => each.spend)).then(
      (decisions) =>
        batch.forEach((each, i) => {
          const decision = decisions[i];
          if (decision === undefined) each.reject(new Error('the store answered no spend'));
          else each.resolve(decision);
        }),
      (error: unknown) => {
        for (const each of batch) each.reject(error);
      },
    );
  };
  return (spend: Spend): Promise<Decision> =>
    new Promise<Decision>((resolve, reject) => {
      if (waiting.length === 0) setImmediate(flush);
      waiting.push({ spend, resolve, reject });
    });
};
