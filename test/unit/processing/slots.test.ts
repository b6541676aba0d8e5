import { describe, expect, it } from 'vitest';
import { createSlots } from '../../../src/app/processing/slots.js';

describe('The workers of a process', () => {
  it('holds workers while they are free, and refuses a hold of more than are free without holding any of them', () => {
    const slots = createSlots(3);
    expect(slots.free()).toBe(3);
    expect(slots.hold(2)).toBe(true);
    expect(slots.free()).toBe(1);
    expect(slots.hold(2)).toBe(false);
    expect(slots.held()).toBe(2);
    expect(slots.hold()).toBe(true);
    expect(slots.free()).toBe(0);
    expect(slots.hold()).toBe(false);
    expect(slots.held()).toBe(3);
  });

  it('frees the workers it lets go, and never holds fewer than none when told to let go more than it holds', () => {
    const slots = createSlots(2);
    slots.hold(2);
    slots.letGo();
    expect(slots.free()).toBe(1);
    slots.letGo(5);
    expect(slots.held()).toBe(0);
    expect(slots.free()).toBe(2);
    // A worker let go twice by mistake does not make a third one.
    expect(slots.hold(3)).toBe(false);
  });

  it('refuses a hold of a negative count, which would free workers it does not hold', () => {
    const slots = createSlots(2);
    slots.hold(2);
    expect(slots.hold(-1)).toBe(false);
    expect(slots.free()).toBe(0);
  });
});
