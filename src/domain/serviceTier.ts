/**
 * Service tiers (contract 20), as OpenAI names them: what a request says matters about when it runs. Per model, due
 * `priority` work starts before `default`, and `default` before `flex`; `flex` runs only on workers nothing else of
 * its model wants. A request is stored with the tier it is served at (absent: `default`).
 */
export const serviceTiers = ['flex', 'default', 'priority'] as const;
export type ServiceTier = (typeof serviceTiers)[number];
/** What a submit may ask for: a tier, or `auto` (its plan's `defaultServiceTier`). */
export const requestedTiers = ['auto', ...serviceTiers] as const;
export type RequestedTier = (typeof requestedTiers)[number];

const rank = (tier: ServiceTier) => serviceTiers.indexOf(tier);

/**
 * The tier a request is served at: what it asked for (`auto` or nothing: the plan's default), else, when its plan does
 * not allow that tier, the best allowed tier below it, else the plan's lowest allowed tier.
 */
export const tierServed = (
  asked: RequestedTier | undefined,
  allowed: readonly ServiceTier[],
  planDefault: ServiceTier,
): ServiceTier => {
  const wanted = asked === undefined || asked === 'auto' ? planDefault : asked;
  if (allowed.includes(wanted)) return wanted;
  const below = allowed.filter((tier) => rank(tier) < rank(wanted)).sort((a, b) => rank(b) - rank(a))[0];
  if (below !== undefined) return below;
  return [...allowed].sort((a, b) => rank(a) - rank(b))[0] ?? 'default';
};

/** The tier a stored request is served at: `default` when it carries none (and for requests of older versions). */
export const tierOf = (context: { readonly serviceTier?: 'priority' | 'flex' | undefined }): ServiceTier =>
  context.serviceTier ?? 'default';
