/**
 * The parent side of the load generator: one long-lived loadgen.ts process (autocannon) on the load CPUs, fed one
 * run at a time over IPC. A run that overstays its bound kills the process; the next run starts a new one.
 */
import type { LoadReply, LoadRequest, LoadResult, LoadSpec } from './loadgen.js';
import { script } from './paths.js';
import { type Child, startChild } from './processes.js';

export type { LoadResult, LoadSpec };

let current: { child: Child; cpus: string | undefined; ready: Promise<unknown> } | undefined;
let nextId = 1;

const generator = (cpus: string | undefined) => {
  if (current === undefined || !current.child.running() || current.cpus !== cpus) {
    current?.child.process.kill('SIGKILL');
    const child = startChild('loadgen', process.execPath, [script('loadgen')], { cpus, ipc: true });
    current = { child, cpus, ready: child.waitFor(/loadgen ready/, 20_000) };
  }
  return current;
};

/**
 * Runs one load on the load generator. `onSend` is called just as the run is handed to it (the generator started
 * and ready): where a caller starts measuring the server, so that starting the generator is not measured.
 */
export const runLoad = async (
  spec: LoadSpec,
  cpus: string | undefined,
  timeoutMs?: number,
  onSend?: () => void,
): Promise<LoadResult> => {
  const bound = timeoutMs ?? ((spec.durationSec ?? 0) + 60) * 1000;
  const { child, ready } = generator(cpus);
  await ready;
  const id = nextId++;
  return new Promise<LoadResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      finish();
      child.process.kill('SIGKILL');
      reject(new Error(`load generator: run ${id} went over its ${bound} ms bound`));
    }, bound);
    const onMessage = (reply: LoadReply) => {
      if (reply.id !== id) return;
      finish();
      if (reply.result !== undefined) resolve(reply.result);
      else reject(new Error(`load generator failed: ${reply.error ?? 'no result'}`));
    };
    const onExit = () => {
      finish();
      reject(new Error(`load generator exited during run ${id}: ${child.stderr().slice(-2000)}`));
    };
    const finish = () => {
      clearTimeout(timer);
      child.process.off('message', onMessage);
      child.process.off('exit', onExit);
    };
    child.process.on('message', onMessage);
    child.process.on('exit', onExit);
    onSend?.();
    child.process.send({ id, spec } satisfies LoadRequest);
  });
};
