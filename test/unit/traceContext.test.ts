import { describe, expect, it } from 'vitest';
import { traceIdFromHeader, traceIdOf, traceparentFor } from '../../src/app/traceContext.js';

describe('The trace context of upstream calls', () => {
  it('gives each call of a request the trace id of its request id, a span id of its own, version 00 and sampled', () => {
    const reqId = 'req_01a2375cf6666jOCV4gUbRfxETpFS1IpHw';
    const first = traceparentFor(reqId);
    const second = traceparentFor(reqId);
    expect(first).toMatch(new RegExp(`^00-${traceIdOf(reqId)}-[0-9a-f]{16}-01$`));
    expect(second.slice(0, 36)).toBe(first.slice(0, 36));
    expect(second).not.toBe(first);
    expect(traceIdOf('req_other')).not.toBe(traceIdOf(reqId));
  });

  it("reads the trace id of a caller's valid traceparent, and nothing from an invalid one", () => {
    const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect(traceIdFromHeader(`00-${trace}-00f067aa0ba902b7-01`)).toBe(trace);
    // A later version is read by its first four fields, as the standard asks.
    expect(traceIdFromHeader(`01-${trace}-00f067aa0ba902b7-00-more`)).toBe(trace);
    for (const invalid of [
      undefined,
      '',
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-${trace}-0000000000000000-01`,
      `ff-${trace}-00f067aa0ba902b7-01`,
      `00-${trace.toUpperCase()}-00f067aa0ba902b7-01`,
      `00-${trace}-00f067aa0ba902b7-01-extra`,
      `00-${trace}-00f067aa0ba902b7-01${' '.repeat(600)}`,
    ])
      expect(traceIdFromHeader(invalid), String(invalid)).toBeUndefined();
  });
});
