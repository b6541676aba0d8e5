import type { DeliveryContext } from './deliveryMachine.js';

export type DeliveryStatus = 'none' | 'waiting' | 'sending' | 'delivered' | 'gave_up';

/** Where a delivery stands: the machine's state. */
export type DeliveryState = { readonly status: DeliveryStatus; readonly context: DeliveryContext };
