import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { configReloader } from '../../src/adapters/cli/configReload.js';
import { createLiveConfig } from '../../src/app/LiveConfig.js';
import { loadConfig } from '../../src/config.js';

describe('a reload that drops a plan of the config', () => {
  it("applies it, warns naming the plan, and holds no account to it (the free plan's limits instead)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'airs-reload-plans-'));
    const path = join(dir, 'airs.config.json');
    writeFileSync(path, JSON.stringify({ plans: { gold: { submitsPerMinute: 900 } } }));
    const live = createLiveConfig(loadConfig({ AIRS_CONFIG: path }, dir));
    expect(live.config.plans.gold?.submitsPerMinute).toBe(900);
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    writeFileSync(path, JSON.stringify({ plans: { silver: { submitsPerMinute: 300 } } }));
    await configReloader(live, async () => loadConfig({ AIRS_CONFIG: path }, dir), logger)('SIGHUP');
    expect(live.config.plans.gold).toBeUndefined();
    expect(live.config.plans.silver?.submitsPerMinute).toBe(300);
    expect(lines.find((line) => String(line.msg).includes('no longer defined'))).toMatchObject({ plans: ['gold'] });
  });
});
