import { describe } from 'vitest';
import { acceptingSuite } from './suites/accepting.js';
import { accessSuite } from './suites/access.js';
import { limitsSuite } from './suites/limits.js';
import { validationSuite } from './suites/validation.js';
import { transports } from './support/contract.js';

/**
 * The HTTP contract (product contract sections 1, 2 and 5), one suite body run twice: against the app called
 * in-process and against the same app served on a real 127.0.0.1 socket, so both paths must agree.
 */
describe.each(transports)('the HTTP contract, $name', (transport) => {
  acceptingSuite(transport);
  validationSuite(transport);
  accessSuite(transport);
  limitsSuite(transport);
});
