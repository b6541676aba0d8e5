import { describe, expect, it } from 'vitest';
import { abuseAttackNames, type Options, parseOptions } from '../bench/options.js';
import { repeatedBytes } from '../support/attacks/client.js';
import { poisonedLine } from '../support/attacks/poisonedLines.js';

/** `npm run bench -- --only=abuse` (issue 40): choosing its attacks, and what the drivers send. */

const parsed = (argv: readonly string[]): Options => {
  const options = parseOptions(argv);
  if (typeof options === 'string') throw new Error(options);
  return options;
};

describe('the abuse scenario of the bench', () => {
  it('runs every attack with --only=abuse, and only the abuse scenario', () => {
    const options = parsed(['--only=abuse']);
    expect(options.only).toEqual(['abuse']);
    expect(options.abuseAttacks).toEqual(abuseAttackNames);
  });

  it('runs once, with just the named attacks, for --only=abuse:NAME given several times beside another scenario', () => {
    const options = parsed(['--only=post,abuse:uploads,abuse:webhooks']);
    expect(options.only).toEqual(['post', 'abuse']);
    expect(options.abuseAttacks).toEqual(['uploads', 'webhooks']);
  });

  it('refuses an attack it does not know, naming it and the usage', () => {
    const answer = parseOptions(['--only=abuse:uplods']);
    expect(answer).toMatch(/^unknown abuse attack\(s\): uplods\n/);
    expect(answer).toContain('disk-floor');
  });

  it('is part of the full run', () => {
    expect(parsed([]).only).toContain('abuse');
  });
});

describe('the attack drivers', () => {
  it('make a poisoned line that is one JSON object nested as deep as asked', () => {
    const depth = 1_000;
    const line = JSON.parse(poisonedLine(depth)) as { custom_id: string; body: { response_format: unknown } };
    expect(line.custom_id).toBe('poisoned');
    let level = 0;
    let value: unknown = (line.body.response_format as { json_schema: { schema: { x: unknown } } }).json_schema.schema
      .x;
    while (Array.isArray(value)) {
      level++;
      value = value[0];
    }
    expect(level).toBe(depth);
  });

  it("make the issue's poisoned line, 2 million levels, about 4 MB: under the 4 MiB a request body may be", () => {
    const bytes = Buffer.byteLength(poisonedLine(2_000_000));
    expect(bytes).toBeGreaterThan(4_000_000);
    expect(bytes).toBeLessThan(4 * 1024 * 1024);
  });

  it('stream exactly the bytes asked for from one reused buffer', async () => {
    const chunk = Buffer.alloc(1024, 0x61);
    let total = 0;
    const seen = new Set<ArrayBufferLike>();
    for await (const part of repeatedBytes(10 * 1024 + 7, chunk)) {
      total += part.length;
      seen.add(part.buffer);
    }
    expect(total).toBe(10 * 1024 + 7);
    expect(seen.size).toBe(1);
  });
});
