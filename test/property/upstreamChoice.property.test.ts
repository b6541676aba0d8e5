import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { affinitySlack, chooseUpstream, fullness, type UpstreamStanding } from '../../src/domain/upstreamChoice.js';

const standing = fc
  .record({
    places: fc.integer({ min: 1, max: 32 }),
    weight: fc.constantFrom(0.5, 1, 2, 3),
    load: fc.double({ min: 0, max: 1.2, noNaN: true }),
    state: fc.constantFrom<UpstreamStanding['state']>('in_service', 'in_service', 'out_of_service', 'trying'),
  })
  .map(({ places, weight, load, state }) => ({ places, weight, state, inFlight: Math.floor(load * places) }));
const fleet = fc
  .array(standing, { minLength: 1, maxLength: 8 })
  .map((list): UpstreamStanding[] => list.map((u, i) => ({ ...u, name: `u${i}` })));

describe('The upstream choice, for any fleet (property)', () => {
  it('never exceeds places, never picks an upstream out of service or tried, and affinity costs at most the slack', () => {
    fc.assert(
      fc.property(
        fleet,
        fc.option(fc.integer({ min: 0, max: 0xffffffff }), { nil: undefined }),
        fc.array(fc.nat(7), { maxLength: 3 }),
        (upstreams, key, triedAt) => {
          const tried = new Set(triedAt.map((i) => `u${i}`));
          const chosen = chooseUpstream(upstreams, key, tried);
          const open = upstreams.filter(
            (u) =>
              !tried.has(u.name) &&
              u.inFlight < u.places &&
              (u.state === 'in_service' || (u.state === 'trying' && u.inFlight === 0)),
          );
          if (chosen === undefined) {
            expect(open).toEqual([]);
            return;
          }
          const it = upstreams.find((u) => u.name === chosen) as UpstreamStanding;
          expect(it.inFlight + 1).toBeLessThanOrEqual(it.places);
          expect(it.state).not.toBe('out_of_service');
          expect(tried.has(chosen)).toBe(false);
          if (it.state === 'trying') expect(it.inFlight).toBe(0);
          const least = Math.min(...open.map(fullness));
          expect(fullness(it) - least).toBeLessThanOrEqual(affinitySlack + 1e-9);
        },
      ),
      { numRuns: 2_000 },
    );
  });
  it('keeps an affine upstream only while it is at most a quarter of its places fuller than the least full', () => {
    const loaded = fc
      .array(
        fc.record({ places: fc.integer({ min: 1, max: 32 }), load: fc.double({ min: 0, max: 0.99, noNaN: true }) }),
        {
          minLength: 2,
          maxLength: 6,
        },
      )
      .map((list): UpstreamStanding[] =>
        list.map(({ places, load }, i) => ({
          name: `u${i}`,
          places,
          weight: 1,
          inFlight: Math.floor(load * places),
          state: 'in_service',
        })),
      );
    fc.assert(
      fc.property(loaded, fc.integer({ min: 0, max: 0xffffffff }), (upstreams, key) => {
        const chosen = upstreams.find((u) => u.name === chooseUpstream(upstreams, key)) as UpstreamStanding;
        expect(fullness(chosen) - Math.min(...upstreams.map(fullness))).toBeLessThanOrEqual(affinitySlack + 1e-9);
      }),
      { numRuns: 2_000 },
    );
  });
});
