/**
 * Issue 31, "Effect where it earns its keep": what Effect's `Semaphore`, `Schedule` and `timeout` cost against the
 * plain counter and timers the worker pool uses now (docs/decisions.md, "Issue 31: names, Metrics, architecture and
 * Effect's timers"). Not part of `npm test` nor of `npm run bench`'s scenarios:
 *
 *   npm run build && node dist/test/bench/effectTimers.js
 *
 * Prints one line per measurement: nanoseconds of CPU per operation, the median of five rounds.
 */
import { Duration, Effect, Fiber, Schedule, Semaphore } from 'effect';
import { createSlots } from '../../src/app/processing/slots.js';

const rounds = 5;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** CPU time (user + system) of `run`, in nanoseconds per operation, the median of `rounds` rounds. */
const cpuPerOp = async (ops: number, run: () => unknown | Promise<unknown>): Promise<number> => {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const before = process.cpuUsage();
    await run();
    const used = process.cpuUsage(before);
    samples.push(((used.user + used.system) * 1_000) / ops);
  }
  return median(samples);
};

const report = (name: string, nsPerOp: number) =>
  process.stdout.write(`${name.padEnd(78)} ${nsPerOp.toFixed(0).padStart(8)} ns/op\n`);

/** Worker slots: take one worker and give it back, as a submit that may start at once does. */
const slots = async () => {
  const ops = 1_000_000;
  const plain = createSlots(8);
  report(
    'slots: createSlots hold + letGo (plain counter, now)',
    await cpuPerOp(ops, () => {
      for (let i = 0; i < ops; i++) if (plain.hold()) plain.letGo();
    }),
  );
  const semaphore = Semaphore.makeUnsafe(8);
  const take = semaphore.takeIfAvailable(1);
  const give = semaphore.release(1);
  report(
    'slots: Semaphore takeIfAvailable + release, runSync each (called from plain code)',
    await cpuPerOp(ops / 10, () => {
      for (let i = 0; i < ops / 10; i++) if (Effect.runSync(take)) Effect.runSync(give);
    }),
  );
  report(
    'slots: Semaphore takeIfAvailable + release inside one Effect (caller all Effect)',
    await cpuPerOp(ops, () =>
      Effect.runPromise(
        Effect.gen(function* () {
          for (let i = 0; i < ops; i++) if (yield* take) yield* give;
        }),
      ),
    ),
  );
};

/** A periodic task (the sweeper, the lease keeper): the cost of each tick beyond the task itself. */
const ticks = async () => {
  const count = 2_000;
  let ticked = 0;
  const task = () => {
    ticked++;
  };
  report(
    'tick: setInterval(task, 1 ms) (now)',
    await cpuPerOp(
      count,
      () =>
        new Promise<void>((done) => {
          ticked = 0;
          const timer = setInterval(() => {
            task();
            if (ticked === count) {
              clearInterval(timer);
              done();
            }
          }, 1);
        }),
    ),
  );
  for (const [name, schedule] of [
    ['spaced', Schedule.spaced(Duration.millis(1))],
    ['fixed', Schedule.fixed(Duration.millis(1))],
  ] as const) {
    report(
      `tick: Effect.repeat(Effect.sync(task), Schedule.${name}(1 ms)), one forked fiber`,
      await cpuPerOp(count, async () => {
        ticked = 0;
        const fiber = Effect.runFork(Effect.repeat(Effect.sync(task), { schedule, while: () => ticked < count }));
        await Effect.runPromise(Fiber.join(fiber));
      }),
    );
  }
};

/** A model call under its timeout: a call that answers at once, so only the timeout's machinery is measured. */
const timeouts = async () => {
  const calls = 100_000;
  /** The provider: it takes the signal that aborts its upstream's fetch, and here answers at once. */
  const answer = (_signal: AbortSignal) => Promise.resolve('ok');
  report(
    'timeout: AbortController + setTimeout + clearTimeout around the call (now)',
    await cpuPerOp(calls, async () => {
      for (let i = 0; i < calls; i++) {
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), 60_000);
        try {
          await answer(controller.signal);
        } finally {
          clearTimeout(timer);
        }
      }
    }),
  );
  report(
    'timeout: Effect.runPromise(Effect.timeout(Effect.promise(call), 60 s)) (+ AbortController)',
    await cpuPerOp(calls, async () => {
      for (let i = 0; i < calls; i++) {
        // The provider still needs its signal, to abort the upstream's fetch.
        const controller = new AbortController();
        await Effect.runPromise(
          Effect.timeout(
            Effect.promise(() => answer(controller.signal)),
            Duration.seconds(60),
          ),
        );
      }
    }),
  );
};

await slots();
await ticks();
await timeouts();
