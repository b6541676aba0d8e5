/**
 * What every attack of `--only=abuse` runs in: a fresh `airs serve` on LMDB started through the CLI (pinned to the
 * server CPUs), its accounts and keys made by the CLI's own code (management.ts: a bystander on the enterprise plan,
 * whose limits never get in its way, and the attackers on theirs), and the bystander measured by a child process on the load CPUs: first on the
 * quiet server, then while the attack runs. The data file's size is read before and after the attack, and the
 * server's error log lines (pino level 50 and above) are counted.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PlanName } from '../../../src/domain/plans.js';
import type { BystanderFigures } from '../../support/bystander.js';
import { fileBytes } from '../../support/bystander.js';
import { type Sandbox, sandbox, startAirs } from '../airs.js';
import type { BystanderAnswer, BystanderAsk } from '../bystanderChild.js';
import { type Context, profileFlags } from '../context.js';
import { airsBin, script } from '../paths.js';
import { type Child, runChild, startChild } from '../processes.js';
import { type Account, withManagement } from './management.js';

/** Settings every abuse server gets beyond the attack's own: it stops at once when the attack is done. */
const quickStop = { shutdownDelaySeconds: 0, shutdownGraceSeconds: 2 };

export type Target = {
  readonly box: Sandbox;
  readonly url: string;
  readonly pid: number;
  readonly bystander: Account;
  readonly attackers: readonly Account[];
  /** Runs an `airs` command on the server's data directory (as the operator would): exit code and output. */
  airs(args: readonly string[]): Promise<{ readonly code: number | null; readonly said: string }>;
  /** Error lines (pino level 50 or 60) the server has logged so far. */
  errorLines(): number;
  /** airs.mdb's size now, in bytes. */
  dataFileBytes(): number;
  stop(): Promise<void>;
};

/** Counts pino lines of level 50 (error) and 60 (fatal) in a child's output as it comes. */
const countErrorLines = (child: Child) => {
  let count = 0;
  let tail = '';
  const onData = (chunk: Buffer | string) => {
    const text = tail + chunk.toString();
    const lines = text.split('\n');
    tail = lines.pop() ?? '';
    for (const line of lines) if (/"level":(50|60)\b/.test(line)) count++;
  };
  child.process.stdout?.on('data', onData);
  child.process.stderr?.on('data', onData);
  return () => count;
};

export type TargetSpec = {
  readonly label: string;
  /** The attack's config (the defaults otherwise), without the quick-stop settings. */
  readonly config: Record<string, unknown>;
  readonly attackers: number;
  readonly attackerPlan: PlanName;
};

/** A data directory of its own, its accounts, and `airs serve` on it. */
export const startTarget = async (context: Context, spec: TargetSpec, existing?: Target): Promise<Target> => {
  const config = { ...spec.config, ...quickStop };
  const box = existing?.box ?? sandbox(context.workDir, `abuse-${spec.label}`, config);
  // The same data directory started again with another config (a check's second server).
  if (existing !== undefined) writeFileSync(join(box.dir, 'airs.config.json'), JSON.stringify(config, null, 2));
  let bystander = existing?.bystander;
  let attackers = existing?.attackers;
  const started = performance.now();
  if (bystander === undefined || attackers === undefined) {
    const made = await withManagement(box, async (management) => {
      const accounts = [await management.account(`bystander@${spec.label}.example.com`, 'enterprise')];
      for (let i = 0; i < spec.attackers; i++)
        accounts.push(await management.account(`attacker-${i}@${spec.label}.example.com`, spec.attackerPlan));
      return accounts;
    });
    [bystander, ...attackers] = made as [Account, ...Account[]];
    context.log(`    ${made.length} accounts and keys made in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  const airs = await startAirs(box, {
    cpus: context.cpus.server,
    nodeArgs: profileFlags(context, `abuse-${spec.label}`),
  });
  const errorLines = countErrorLines(airs.child);
  const dataFile = join(box.dataDir, 'airs.mdb');
  return {
    box,
    url: airs.url,
    pid: airs.child.pid,
    bystander,
    attackers,
    airs: async (args) => {
      const { exit, stdout, stderr } = await runChild('airs-cli', process.execPath, [airsBin(), ...args], {
        env: box.env,
        cwd: box.dir,
        timeoutMs: 60_000,
      });
      return { code: exit.code, said: `${stdout}${stderr}`.trim().slice(0, 500) };
    },
    errorLines,
    dataFileBytes: () => fileBytes(dataFile),
    stop: async () => {
      await airs.child.stop('SIGTERM', 15_000);
    },
  };
};

/** The bystander child, asked over IPC (one question at a time). */
export type Bystander = {
  watch(target: Target): Promise<void>;
  stop(): Promise<BystanderFigures>;
  close(): Promise<void>;
};

export const startBystander = async (context: Context): Promise<Bystander> => {
  const child = startChild('bystander', process.execPath, [script('bystanderChild')], {
    cpus: context.cpus.load,
    ipc: true,
  });
  await child.waitFor(/bystander ready/, 20_000);
  const ask = (question: BystanderAsk) =>
    new Promise<BystanderAnswer>((resolve, reject) => {
      const onExit = () => reject(new Error(`the bystander exited: ${child.stderr().slice(-2000)}`));
      child.process.once('exit', onExit);
      child.process.once('message', (answer: BystanderAnswer) => {
        child.process.off('exit', onExit);
        resolve(answer);
      });
      child.process.send(question);
    });
  return {
    watch: async (target) => {
      await ask({ type: 'watch', options: { url: target.url, key: target.bystander.key, pid: target.pid } });
    },
    stop: async () => {
      const answer = await ask({ type: 'stop' });
      if (answer.type !== 'figures') throw new Error(`the bystander: ${JSON.stringify(answer)}`);
      return withNumbers(answer.figures);
    },
    close: async () => {
      await child.stop('SIGTERM', 5_000);
    },
  };
};

/** Figures as they came over IPC (JSON: NaN and -Infinity arrive as null) made numbers again. */
const withNumbers = (figures: BystanderFigures): BystanderFigures =>
  Object.fromEntries(
    Object.entries(figures).map(([name, value]) => [name, value === null ? Number.NaN : value]),
  ) as BystanderFigures;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What one attack measured around its run. */
export type Measured<T> = {
  readonly quiet: BystanderFigures;
  readonly attack: BystanderFigures;
  readonly outcome: T;
  /** airs.mdb before and after the attack, in bytes. */
  readonly dataFileBefore: number;
  readonly dataFileAfter: number;
  /** Error lines the server logged during the attack. */
  readonly errorLines: number;
  readonly attackSeconds: number;
};

/**
 * The bystander on the quiet server for `quietSec` (after a short warm-up of its own), then while `attack` runs; the
 * data file around the attack. The attack's own figures are its outcome.
 */
export const measureAround = async <T>(
  context: Context,
  bystander: Bystander,
  target: Target,
  attack: () => Promise<T>,
): Promise<Measured<T>> => {
  const { quietSec } = context.options.sizes.abuse;
  // Warm-up (connections, the JIT, the auth cache): not counted.
  await bystander.watch(target);
  await sleep(1_000);
  await bystander.stop();
  await bystander.watch(target);
  await sleep(quietSec * 1000);
  const quiet = await bystander.stop();
  const dataFileBefore = target.dataFileBytes();
  const errorsBefore = target.errorLines();
  const started = performance.now();
  await bystander.watch(target);
  // The watch ends whatever the attack did, so that the child is free for the next one.
  const ran = await attack().then(
    (outcome) => ({ outcome }),
    (error: unknown) => ({ error }),
  );
  const attackFigures = await bystander.stop();
  if ('error' in ran) throw ran.error;
  return {
    quiet,
    attack: attackFigures,
    outcome: ran.outcome,
    dataFileBefore,
    dataFileAfter: target.dataFileBytes(),
    errorLines: target.errorLines() - errorsBefore,
    attackSeconds: (performance.now() - started) / 1000,
  };
};
