/**
 * The calls being answered right now and when the last one came: a stopping server keeps listening (answering 503)
 * until both say it is quiet, so no client that is still sending meets a closed port or a dropped connection.
 */
export type Traffic = {
  /** Calls whose answer is not built yet. */
  inFlight: number;
  /** When the last call arrived (ms since the epoch). */
  lastArrivalAt: number;
};

export const createTraffic = (): Traffic => ({ inFlight: 0, lastArrivalAt: 0 });
