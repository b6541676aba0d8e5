/**
 * Which of a model's upstreams a call goes to (contract 19), decided in the claim (inside the store's write, so places
 * are exact across processes and nodes) and in a failover. Pure: the caller gives each upstream's places, weight,
 * calls in flight (all processes) and health, the upstreams this attempt already tried, and the request's affinity key.
 */

/** An upstream's health as the store holds it (upstreamHealth.ts): `trying` once its cool-down is over. */
export type UpstreamState = 'in_service' | 'out_of_service' | 'trying';

/** One upstream as the choice sees it. */
export type UpstreamStanding = {
  readonly name: string;
  /** Calls it takes at once, in all processes (Infinity: no bound). */
  readonly places: number;
  readonly weight: number;
  readonly inFlight: number;
  readonly state: UpstreamState;
};

/** An upstream as the claiming process's config gives it (places absent: no bound; weight absent: 1). Plain data:
 * it travels in the claim command, to a writer process too. */
export type UpstreamPlace = { readonly name: string; readonly places?: number | undefined; readonly weight?: number };

/** The config's upstreams as the choice sees them, with their calls in flight and their state. */
export const standingsOf = (
  places: readonly UpstreamPlace[],
  inFlight: (upstream: string) => number,
  state: (upstream: string) => UpstreamState = () => 'in_service',
): UpstreamStanding[] =>
  places.map((upstream) => ({
    name: upstream.name,
    places: upstream.places ?? Number.POSITIVE_INFINITY,
    weight: upstream.weight ?? 1,
    inFlight: inFlight(upstream.name),
    state: state(upstream.name),
  }));

/** How much fuller than the least full the affine upstream may be, as a share of its places. */
export const affinitySlack = 0.25;

/** Whether the upstream may take one more call now: in service with a free place, or `trying` with none in flight
 * (one call, its trial). */
export const takesACall = (upstream: UpstreamStanding): boolean => {
  if (upstream.inFlight >= upstream.places) return false;
  if (upstream.state === 'out_of_service') return false;
  return upstream.state === 'in_service' || upstream.inFlight === 0;
};

/** In flight over places (0 for an unbounded upstream). */
export const fullness = (upstream: UpstreamStanding): number =>
  Number.isFinite(upstream.places) ? upstream.inFlight / upstream.places : 0;

/** A 32-bit mix (murmur3's finalizer): spreads close inputs apart. */
const mix = (value: number): number => {
  let h = value >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
};

/** FNV-1a over a string's UTF-16 code units, 32 bits. */
export const fnv1a = (text: string, seed = 0x811c9dc5): number => {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
};

/** The weighted rendezvous score of an upstream for a key (highest random weight): `-weight / ln(u)`, u in (0, 1). */
export const rendezvousScore = (key: number, name: string, weight: number): number => {
  const u = (mix(fnv1a(name) ^ mix(key)) + 0.5) / 4_294_967_296;
  return -weight / Math.log(u);
};

const byName = (a: UpstreamStanding, b: UpstreamStanding) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * The upstream a call goes to, or undefined when none may take it. Among those that may take a call and were not
 * tried in this attempt: the rendezvous winner for `key` while it is not fuller than the least full by more than a
 * quarter of its places (so a shared prompt prefix keeps landing where it is cached, while load stays even);
 * otherwise, or without a key, the least full, in flight over weighted places (ties: by name, so every process
 * decides alike).
 */
export const chooseUpstream = (
  upstreams: readonly UpstreamStanding[],
  key: number | undefined,
  tried: ReadonlySet<string> = new Set(),
): string | undefined => {
  const open = upstreams.filter((upstream) => !tried.has(upstream.name) && takesACall(upstream));
  if (open.length === 0) return undefined;
  let leastFull = open[0] as UpstreamStanding;
  let least = Number.POSITIVE_INFINITY;
  let leastShare = Number.POSITIVE_INFINITY;
  for (const upstream of open) {
    leastShare = Math.min(leastShare, fullness(upstream));
    const load = fullness(upstream) / upstream.weight;
    if (load < least || (load === least && byName(upstream, leastFull) < 0)) {
      least = load;
      leastFull = upstream;
    }
  }
  if (key === undefined) return leastFull.name;
  let affine = open[0] as UpstreamStanding;
  let best = Number.NEGATIVE_INFINITY;
  for (const upstream of open) {
    const score = rendezvousScore(key, upstream.name, upstream.weight);
    if (score > best) {
      best = score;
      affine = upstream;
    }
  }
  return fullness(affine) - leastShare <= affinitySlack ? affine.name : leastFull.name;
};
