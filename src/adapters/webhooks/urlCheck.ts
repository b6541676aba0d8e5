import { checkDestination, type DestinationPolicy, type Resolver, systemResolver } from './destination.js';

/**
 * The check of a webhook URL when an endpoint is added (`airs webhooks add`, the dashboard): what is wrong with it,
 * in words for its owner, or undefined. The rules the sender applies again at each attempt; a host that cannot be
 * resolved now is refused too, as the likeliest cause is a typing mistake.
 */
export const webhookUrlProblem = async (
  url: string,
  policy: DestinationPolicy,
  resolve: Resolver = systemResolver,
): Promise<string | undefined> => {
  const check = await checkDestination(url, policy, resolve);
  return check.ok ? undefined : check.problem;
};
