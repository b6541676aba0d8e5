import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileSandboxes, runCli } from '../support/processes.js';

const newBox = fileSandboxes();

/** Listens on a free port of 127.0.0.1 and gives it: the port `serve` will find taken. */
const occupy = () =>
  new Promise<{ server: Server; port: number }>((resolve) => {
    const server = createServer();
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      resolve({ server, port: (server.address() as { port: number }).port });
    });
  });

const held: Server[] = [];
afterAll(() => {
  for (const server of held) server.close();
});

describe('airs serve on a port another process listens on', { timeout: 60_000 }, () => {
  it('says the port is in use in one line, exits 2, and leaves no new data directory behind', async () => {
    const box = newBox('airs-port-in-use');
    const { server, port } = await occupy();
    held.push(server);
    const result = await runCli(box, ['serve'], { env: { PORT: String(port), HOST: '127.0.0.1' } });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(new RegExp(`^airs: cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
    expect(existsSync(box.dataDir)).toBe(false);

    // An existing, empty data directory stays empty: no database, no lock file.
    mkdirSync(box.dataDir);
    const again = await runCli(box, ['serve'], { env: { PORT: String(port), HOST: '127.0.0.1' } });
    expect(again.code, again.stderr).toBe(2);
    expect(readdirSync(box.dataDir)).toEqual([]);
    const elsewhere = join(box.dir, 'new', 'data');
    const nested = await runCli(box, ['serve', '--data-dir', elsewhere, '--port', String(port)]);
    expect(nested.code, nested.stderr).toBe(2);
    expect(existsSync(join(box.dir, 'new'))).toBe(false);
  });
});
