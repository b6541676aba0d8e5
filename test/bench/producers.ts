/**
 * The producer loops of a baseline's producer process (BullMQ, graphile-worker): `producers` concurrent loops, each
 * awaiting `add` before its next call, until `count` jobs are added; then one JSON line on stdout:
 * {startedAt, finishedAt, added, errors}. The first few failures are told on stderr.
 */
export const runProducers = async (spec: {
  readonly count: number;
  readonly producers: number;
  readonly label: string;
  readonly add: () => Promise<unknown>;
}): Promise<void> => {
  let next = 0;
  let added = 0;
  let errors = 0;
  const producer = async () => {
    while (next < spec.count) {
      next++;
      try {
        await spec.add();
        added++;
      } catch (error) {
        errors++;
        if (errors <= 5) process.stderr.write(`${spec.label} failed: ${(error as Error).message}\n`);
      }
    }
  };
  const startedAt = Date.now();
  await Promise.all(Array.from({ length: spec.producers }, producer));
  const finishedAt = Date.now();
  process.stdout.write(`${JSON.stringify({ startedAt, finishedAt, added, errors })}\n`);
};
