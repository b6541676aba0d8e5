/**
 * The lanes with waiting requests (an account's own, or its batch lane) in id order, starting after `after` and
 * wrapping round to it, `after` included: the order a claim takes them in turn (domain/claimFairly.ts). Every store
 * reads it so, over its own `nextAfter(lane)`, the first lane with waiting requests whose id sorts after `lane` (any
 * lane after ''): LMDB and memory by a seek in their dispatch index (indexReads.ts), PostgreSQL over the lanes its
 * batch fetched (adapters/postgres/overlay.ts).
 */
export function* accountsInTurn(
  nextAfter: (lane: string) => string | undefined,
  after: string | undefined,
): Iterable<string> {
  let lane = nextAfter(after ?? '');
  while (lane !== undefined) {
    yield lane;
    lane = nextAfter(lane);
  }
  if (after === undefined) return;
  // Wrap round: the lanes before and including `after`.
  lane = nextAfter('');
  while (lane !== undefined && lane <= after) {
    yield lane;
    lane = nextAfter(lane);
  }
}
