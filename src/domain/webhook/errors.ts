import { Data } from 'effect';

/**
 * A move the webhook delivery machine does not allow in the delivery's current state (deliveryMachine.ts), in the
 * style of domain/errors.ts. It lives here until deliveries are decided inside the store's write: the shared
 * writer's IPC codec (adapters/ipc/outcomeCodec.ts) covers every class of domain/errors.ts, and learns this one
 * when it moves there.
 */
export class DeliveryLifecycleViolation extends Data.TaggedError('DeliveryLifecycleViolation')<{
  readonly deliveryId: string;
  readonly from: string;
  readonly event: string;
  readonly message: string;
}> {}
