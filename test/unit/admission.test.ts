import { describe, expect, it } from 'vitest';
import { admissionRetryAfterSeconds, createAdmission } from '../../src/app/processing/admission.js';
import { Unavailable } from '../../src/domain/errors.js';

describe('Admission (a process takes a submit that must queue only while its workers keep up)', () => {
  it('takes a burst up to the bound, refuses beyond it with Unavailable and Retry-After, and takes one more per start', () => {
    const admission = createAdmission(3);
    for (let i = 0; i < 3; i++) {
      expect(admission.take()).toBeUndefined();
      admission.written(true, true);
    }
    const refused = admission.take();
    expect(refused).toBeInstanceOf(Unavailable);
    expect(refused?.retryAfterSeconds).toBe(admissionRetryAfterSeconds);
    expect(refused?.message).toMatch(/queue is growing faster than this server's workers take it \(3 requests/);
    // A worker took two: two more are taken, not a third.
    admission.started(2);
    expect(admission.take()).toBeUndefined();
    expect(admission.take()).toBeUndefined();
    expect(admission.take()).toBeInstanceOf(Unavailable);
  });

  it('counts a submit from the moment it is taken, so callers arriving together cannot pass the bound; gives the place back when it did not queue', () => {
    const admission = createAdmission(2);
    expect(admission.take()).toBeUndefined();
    expect(admission.take()).toBeUndefined();
    // Both are still being written.
    expect(admission.take()).toBeInstanceOf(Unavailable);
    // One failed (or was a replay): its place is free again; the other queued.
    admission.written(true, false);
    admission.written(true, true);
    expect(admission.backlog()).toBe(1);
    // A submit that held a worker of its own but queued all the same (others waited before it) counts too.
    admission.written(false, true);
    expect(admission.take()).toBeInstanceOf(Unavailable);
  });

  it('never counts below zero (starts of work it did not count: retries, batch lines), and starts again when nothing is due', () => {
    const admission = createAdmission(2);
    admission.started(5);
    expect(admission.backlog()).toBe(0);
    for (let i = 0; i < 2; i++) {
      admission.take();
      admission.written(true, true);
    }
    expect(admission.take()).toBeInstanceOf(Unavailable);
    // The queue was found empty (another process took the requests): the count was too high, and is zero again.
    admission.nothingDue();
    expect(admission.backlog()).toBe(0);
    expect(admission.take()).toBeUndefined();
    // What is being written is not forgotten by the reset.
    admission.nothingDue();
    expect(admission.backlog()).toBe(1);
  });

  it('with no bound refuses nothing', () => {
    const admission = createAdmission(Number.POSITIVE_INFINITY);
    for (let i = 0; i < 100_000; i++) {
      admission.take();
      admission.written(true, true);
    }
    expect(admission.take()).toBeUndefined();
  });
});
