import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { environmentFile } from '../../../src/adapters/lmdb/databases.js';
import {
  createAccountWithKey,
  killChildren,
  type Sandbox,
  type ServerProcess,
  sandbox,
  sleep,
  startServer,
  submit,
} from '../../support/processes.js';
import { acknowledgementsBeforeSync, readStrace, straceWrapper } from '../../support/straceLog.js';

/** How many submits are in flight at once: enough that many requests share a commit. */
const burst = 200;

/** The server process strace started (strace's only child), so it can be stopped gracefully or killed. */
const tracedPid = async (strace: ServerProcess): Promise<number> => {
  const pid = strace.child.pid ?? 0;
  for (let tries = 0; tries < 50; tries++) {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    if (children !== '') return Number(children.split(' ')[0]);
    await sleep(20);
  }
  throw new Error(`strace (pid ${pid}) started no server process`);
};

describe.runIf(process.platform === 'linux')('the durability order of a burst of submits, seen by strace', () => {
  let box: Sandbox | undefined;
  let serverPid: number | undefined;
  afterEach(async () => {
    // Killing strace alone would leave the server running untraced.
    if (serverPid !== undefined) {
      try {
        process.kill(serverPid, 'SIGKILL');
      } catch {}
    }
    serverPid = undefined;
    await killChildren();
    box?.remove();
    box = undefined;
  });

  it('sends each 202 only after an fdatasync of the data file that followed the write of that request', async () => {
    box = sandbox('airs-durability');
    const { key } = await createAccountWithKey(box, 'durable@example.com', 'enterprise');
    const traceFile = join(box.dir, 'strace.log');
    // Default models (echo): the burst is processed while it arrives, so submits share commits with other work.
    const server = await startServer(box, { wrapper: straceWrapper(traceFile) });
    serverPid = await tracedPid(server);

    const prompts = Array.from({ length: burst }, (_, i) => `durable prompt ${i}`);
    const answers = await Promise.all(prompts.map((prompt) => submit(server.url, key, 'echo', prompt)));
    expect(answers.map((a) => a.status)).toEqual(prompts.map(() => 202));
    const acknowledged = new Set(answers.map((a) => String(a.body.request_id)));
    expect(acknowledged.size).toBe(burst);

    // A graceful stop lets strace write out the whole trace.
    const exited = new Promise((done) => server.child.once('exit', done));
    process.kill(serverPid, 'SIGTERM');
    await exited;
    serverPid = undefined;

    const calls = readStrace(traceFile);
    // strace names files by their real path.
    const dataFile = environmentFile(realpathSync(box.dataDir));
    // The trace saw the server at work, or an empty trace would pass vacuously.
    expect(calls.filter((call) => call.path === dataFile).length).toBeGreaterThan(0);
    const problems = acknowledgementsBeforeSync(calls, dataFile, acknowledged);
    expect(problems.slice(0, 5), `${problems.length} of ${burst} acknowledgements came too early`).toEqual([]);
  }, 60_000);
});
