import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultPlans, planNames } from '../../src/domain/plans.js';

const reference = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');

describe('The API reference (docs/api.md)', () => {
  it.each([
    ['400', 'invalid_request'],
    ['401', 'unauthorized'],
    ['403', 'forbidden'],
    ['404', 'not_found'],
    ['405', 'method_not_allowed'],
    ['413', 'invalid_request'],
    ['429', 'rate_limited'],
    ['500', 'server_error'],
    ['503', 'server_error'],
  ])('lists status %s with code %s', (status, code) => {
    expect(reference).toMatch(new RegExp(`\\| ${status} \\| \`${code}\` \\|`));
  });
  it('names the specification’s fields exactly', () => {
    for (const field of ['request_id', 'req_id', 'status', 'model', 'response', '"queued"', '"completed"']) {
      expect(reference).toContain(field);
    }
  });
  it('shows the default limits of every plan as the code has them', () => {
    for (const plan of planNames) {
      const { maxKeys, submitsPerMinute, pollsPerMinute } = defaultPlans[plan];
      const cells = [
        maxKeys === null ? 'unlimited' : String(maxKeys),
        submitsPerMinute.toLocaleString('en-US'),
        pollsPerMinute.toLocaleString('en-US'),
      ];
      expect(reference).toContain(`| ${plan} | ${cells.join(' | ')} |`);
    }
  });
});
