import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { connectionFault, isConnectionLoss } from '../../../src/adapters/postgres/faults.js';
import { createCommitter, defaultCommitterLimits } from '../../../src/app/Committer.js';
import { createStorageHealth } from '../../../src/app/StorageHealth.js';
import { Unavailable } from '../../../src/domain/errors.js';
import { ManualClock } from '../../../src/ports/Clock.js';
import { StorageFault, type StoreShape, StoreUnreachable } from '../../../src/ports/Store.js';
import { submitCommand } from '../../support/commands.js';

const withCode = (code: string, message = code) => Object.assign(new Error(message), { code });

const logged = () => {
  const lines: { msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { lines, logger };
};

describe('a PostgreSQL database that cannot be reached', () => {
  it('is told from a failed statement by the error: socket errors, lost connections as pg reports them, SQLSTATE class 08 and 57P01-57P03', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', '08006', '08001', '57P01', '57P02', '57P03'])
      expect(isConnectionLoss(withCode(code)), code).toBe(true);
    for (const code of ['23505', '40001', '42P01', '53100', '57014'])
      expect(isConnectionLoss(withCode(code)), code).toBe(false);
    expect(isConnectionLoss(new Error('no code'))).toBe(false);
    // pg's own errors for a connection that went away carry no code.
    for (const message of [
      'Connection terminated unexpectedly',
      'Connection terminated',
      'Connection terminated due to connection timeout',
      'Client has encountered a connection error and is not queryable',
      'timeout exceeded when trying to connect',
    ])
      expect(isConnectionLoss(new Error(message)), message).toBe(true);
    for (const message of ['Client was closed and is not queryable', 'Cannot use a pool after calling end on the pool'])
      expect(isConnectionLoss(new Error(message)), message).toBe(false);
    // Under a cause (the pool wraps its connect timeout), and in an AggregateError (a name with several addresses).
    expect(isConnectionLoss(new Error('wrapped', { cause: new Error('Connection terminated unexpectedly') }))).toBe(
      true,
    );
    expect(isConnectionLoss(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], ''))).toBe(true);
    expect(isConnectionLoss(new AggregateError([withCode('23505')], ''))).toBe(false);
    expect(isConnectionLoss(undefined)).toBe(false);
    expect(connectionFault(withCode('57P01', 'terminating connection'))).toBeInstanceOf(StoreUnreachable);
    // A disk fault stays what it is; anything else passes unchanged.
    const disk = new StorageFault('disk full');
    expect(connectionFault(disk)).toBe(disk);
    const other = withCode('23505');
    expect(connectionFault(other)).toBe(other);
  });

  it('makes the node not ready while its ping fails and ready again when it answers, each change said once in the log', async () => {
    const { lines, logger } = logged();
    let up = false;
    const health = createStorageHealth(
      {
        minFreeBytes: 0,
        readFreeBytes: async () => 0,
        ping: async () => {
          if (!up) throw new StoreUnreachable('the PostgreSQL database cannot be reached: connect ECONNREFUSED');
        },
      },
      logger,
      new ManualClock(0),
    );
    await health.ping();
    await health.ping();
    expect(health.problem()).toMatch(/^the database cannot be reached \(.*ECONNREFUSED\)$/);
    up = true;
    await health.ping();
    expect(health.problem()).toBeUndefined();
    expect(lines.map((line) => line.msg)).toEqual([
      'the database cannot be reached: calls that need it answer 503 and /readyz is not ready until it is back',
      'the database can be reached again',
    ]);
  });

  it('answers the API callers of a batch it could not commit with 503 and Retry-After, and workers with the fault', async () => {
    const { logger } = logged();
    const health = createStorageHealth({ minFreeBytes: 0, readFreeBytes: async () => 0 }, logger, new ManualClock(0));
    const store = {
      commit: async () => {
        throw new StoreUnreachable('the PostgreSQL database cannot be reached: Connection terminated unexpectedly');
      },
    } as unknown as StoreShape;
    const committer = createCommitter(store, defaultCommitterLimits, health);
    const [api, worker] = await Promise.allSettled([
      committer.send(submitCommand('req_000001'), { fromApi: true }),
      committer.send(submitCommand('req_000002')),
    ]);
    expect(api.status).toBe('fulfilled');
    const refusal = (api as PromiseFulfilledResult<unknown>).value;
    expect(refusal).toBeInstanceOf(Unavailable);
    expect((refusal as Unavailable).retryAfterSeconds).toBe(5);
    expect((refusal as Unavailable).message).toMatch(/cannot reach its database/);
    expect(worker.status).toBe('rejected');
    expect((worker as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnreachable);
    expect(health.problem()).toMatch(/the database cannot be reached/);
    await committer.stop();
  });
});
