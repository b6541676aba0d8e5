import { z } from 'zod';
import { requestedTiers, serviceTiers } from '../domain/serviceTier.js';

/** `service_tier` as every submit's body takes it (contract 20); `/v1/ai`'s messages name their field, OpenAI's
 * faces name it in `param`. */
export const serviceTierFieldNamed = (named: boolean) =>
  z
    .enum(requestedTiers, { error: `${named ? 'service_tier ' : ''}must be one of ${requestedTiers.join(', ')}` })
    .nullish()
    .meta({
      description:
        'The service tier (`auto`, `default`, `flex`, `priority`). `auto` or absent: the plan’s `defaultServiceTier`. ' +
        'A tier the plan does not allow is served at the best allowed tier below it; the answer says the tier used.',
    });
export const serviceTierField = serviceTierFieldNamed(false);

/** The tier an answer says the request is served at (every face's answer carries it). */
export const servedTierField = z
  .enum(serviceTiers)
  .meta({ description: 'The service tier the request is served at (contract 20).' });
