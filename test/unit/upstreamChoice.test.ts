import { describe, expect, it } from 'vitest';
import { affinityKeyOf } from '../../src/domain/promptAffinity.js';
import { chooseUpstream, type UpstreamStanding } from '../../src/domain/upstreamChoice.js';

const up = (name: string, inFlight: number, places = 8, fields: Partial<UpstreamStanding> = {}): UpstreamStanding => ({
  name,
  places,
  weight: 1,
  inFlight,
  state: 'in_service',
  ...fields,
});

describe('Choosing an upstream', () => {
  it('without an affinity key takes the least full, in flight over places', () => {
    expect(chooseUpstream([up('a', 4, 8), up('b', 3, 4), up('c', 1, 2)], undefined)).toBe('a');
  });
  it('weighs the least full by weight: a weight of 2 counts its load as half', () => {
    expect(chooseUpstream([up('a', 2), up('b', 3, 8, { weight: 2 })], undefined)).toBe('b');
  });
  it('takes none that is full, out of service, or already tried in this attempt', () => {
    const upstreams = [up('a', 8), up('b', 0, 8, { state: 'out_of_service' }), up('c', 0)];
    expect(chooseUpstream(upstreams, undefined)).toBe('c');
    expect(chooseUpstream(upstreams, undefined, new Set(['c']))).toBeUndefined();
  });
  it('gives an upstream trying again one call only: none while its trial is in flight', () => {
    expect(chooseUpstream([up('a', 0, 8, { state: 'trying' })], undefined)).toBe('a');
    expect(chooseUpstream([up('a', 1, 8, { state: 'trying' })], undefined)).toBeUndefined();
  });
  it('sends one prompt prefix to the same upstream each time while it is within a quarter of the least full', () => {
    const key = affinityKeyOf('You are a helpful assistant.', 'Summarize the following text');
    const idle = [up('a', 0), up('b', 0), up('c', 0)];
    const affine = chooseUpstream(idle, key) as string;
    // Two more calls in flight on it (a quarter of 8 places) keep it; three more send the call to the least full.
    const loaded = (extra: number) => idle.map((u) => (u.name === affine ? up(u.name, extra) : u));
    expect(chooseUpstream(loaded(2), key)).toBe(affine);
    expect(chooseUpstream(loaded(3), key)).not.toBe(affine);
  });
  it('spreads different prefixes over the upstreams', () => {
    const idle = [up('a', 0), up('b', 0), up('c', 0)];
    const seen = new Set<string>();
    for (let i = 0; i < 60; i++) seen.add(chooseUpstream(idle, affinityKeyOf(`system prompt ${i}`, 'hello')) as string);
    expect([...seen].sort()).toEqual(['a', 'b', 'c']);
  });
  it('keys a request by the first 2,000 characters of its prompt, instructions first, so questions under one long system prompt share a key', () => {
    const long = 'x'.repeat(2_000);
    expect(affinityKeyOf('sys', `${long}tail one`)).toBe(affinityKeyOf('sys', `${long}tail two`));
    expect(affinityKeyOf('sys', 'a')).not.toBe(affinityKeyOf('other', 'a'));
    const system = 'You are a support agent. '.repeat(120);
    expect(affinityKeyOf(system, 'How do I reset my password?')).toBe(affinityKeyOf(system, 'Where is my invoice?'));
  });
});
