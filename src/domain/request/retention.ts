import type { RequestStatus } from './state.js';

/**
 * Which statuses keep text beside the log (the claim check): the prompt while the request waits or is processed, the
 * response once it is completed; nothing once it failed, was cancelled or expired (retention).
 */
export const holdsText = (status: RequestStatus): boolean =>
  status === 'waiting' || status === 'processing' || status === 'completed';
