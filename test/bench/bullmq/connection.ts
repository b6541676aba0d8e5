/** How BullMQ reaches Redis in the bench: ioredis, BullMQ's usual driver, given plain connection options. */
import type { ConnectionOptions } from 'bullmq';

export const driver = () => 'ioredis' as const;

/** Connection options for one Queue or Worker (each opens its own connection). */
export const connectionFor = (port: number): ConnectionOptions => ({
  host: '127.0.0.1',
  port,
  maxRetriesPerRequest: null,
});
