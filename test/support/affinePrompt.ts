import { affinityKeyOf } from '../../src/domain/promptAffinity.js';
import { chooseUpstream } from '../../src/domain/upstreamChoice.js';

/**
 * A `/v1/ai` prompt whose affinity lands on `upstream` among `upstreams`, all idle with equal places: found by the
 * choice itself, so a test that needs its first call on one upstream does not assume a hash.
 */
export const promptAffineTo = (upstream: string, upstreams: readonly string[]): string => {
  const idle = upstreams.map((name) => ({ name, places: 4, weight: 1, inFlight: 0, state: 'in_service' as const }));
  for (let i = 0; i < 1_000; i++) {
    const prompt = `which replica? ${i}`;
    if (chooseUpstream(idle, affinityKeyOf('', prompt)) === upstream) return prompt;
  }
  throw new Error(`no prompt of a thousand lands on ${upstream}`);
};
