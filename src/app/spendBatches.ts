import type { Decision } from '../domain/rateLimit/gcra.js';
import type { Spend, StoreShape } from '../ports/Store.js';
import { callBatches } from '../storage/callBatches.js';

/**
 * Spends of many callers in one write of the store: every call (submit and poll) spends, and a write per spend costs
 * more than the rest of a poll (LMDB: a write transaction of the limiter environment; PostgreSQL: a transaction). The
 * spends of one turn, and those that come while a write is in flight (a PostgreSQL transaction takes a few round
 * trips), are decided together in the next write, in the order they came, each still against the state the store
 * holds then, so limits stay exact across processes (callBatches.ts).
 */
export const spendBatches = (store: Pick<StoreShape, 'spend'>): ((spend: Spend) => Promise<Decision>) =>
  callBatches((spends: readonly Spend[]) => store.spend(spends));
