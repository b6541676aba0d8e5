import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/ports/Logger.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const logTo = async (pretty: boolean) => {
  const dir = mkdtempSync(join(tmpdir(), 'airs-log-'));
  dirs.push(dir);
  const file = join(dir, 'log');
  const logger = await createLogger('info', pretty, file);
  logger.info({ reqId: 'req_1', accountId: 'acct_1' }, 'started');
  logger.debug('not at info');
  logger.flush();
  await new Promise((resolve) => setTimeout(resolve, 50));
  return readFileSync(file, 'utf8');
};

describe('The server’s logger', () => {
  it('writes one JSON line per event for a collector, with its fields and no pid or host', async () => {
    const lines = (await logTo(false)).trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toEqual({
      level: 30,
      time: expect.any(Number),
      reqId: 'req_1',
      accountId: 'acct_1',
      msg: 'started',
    });
  });

  it('writes readable lines instead when a person reads them (stderr is a terminal)', async () => {
    const text = await logTo(true);
    expect(text).toMatch(/INFO.*started/);
    expect(text).toContain('reqId: "req_1"');
    expect(() => JSON.parse(text.trim().split('\n')[0] as string)).toThrow();
  });
});

describe('An error in the log', () => {
  it('says the message of a cause once, also when the error quotes it, and still says a cause it does not quote', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'airs-log-'));
    dirs.push(dir);
    const file = join(dir, 'log');
    const logger = await createLogger('info', false, file);
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:5432');
    logger.warn({ err: new Error(`the database cannot be reached: ${refused.message}`, { cause: refused }) }, 'quoted');
    logger.warn({ err: new Error('a batch failed', { cause: refused }) }, 'not quoted');
    logger.flush();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [quoted, notQuoted] = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { err: { message: string; type: string } });
    expect(quoted?.err.message).toBe('the database cannot be reached: connect ECONNREFUSED 127.0.0.1:5432');
    expect(quoted?.err.type).toBe('Error');
    expect(notQuoted?.err.message).toBe('a batch failed: connect ECONNREFUSED 127.0.0.1:5432');
  });
});
