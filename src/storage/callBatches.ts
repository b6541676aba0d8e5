/**
 * Calls handed to `run` together: those made in one turn of the event loop go at its end (`setImmediate`: after the
 * turn's I/O callbacks), in the order they came, and one run is in flight at a time: calls made while it is go
 * together in the next. So a write or read that every API call needs (a spend, the accounts version) costs one store
 * operation per turn under load, however many calls the turn holds, and each call's run still begins after the call
 * was made (it sees everything committed before). A lone call waits for nothing but the end of its turn.
 */
export const callBatches = <I, O>(run: (inputs: readonly I[]) => Promise<readonly O[]>): ((input: I) => Promise<O>) => {
  type Waiting = {
    readonly input: I;
    readonly resolve: (output: O) => void;
    readonly reject: (error: unknown) => void;
  };
  let waiting: Waiting[] = [];
  let running = false;
  let scheduled = false;
  const schedule = () => {
    if (scheduled || running || waiting.length === 0) return;
    scheduled = true;
    setImmediate(flush);
  };
  const flush = () => {
    scheduled = false;
    if (running || waiting.length === 0) return;
    const batch = waiting;
    waiting = [];
    running = true;
    const settle = (each: (waiter: Waiting, i: number) => void) => {
      running = false;
      schedule();
      batch.forEach(each);
    };
    let ran: Promise<readonly O[]>;
    try {
      ran = run(batch.map((each) => each.input));
    } catch (error) {
      // Thrown rather than rejected: the callers hear it all the same (this runs from a timer, where a throw would end
      // the process).
      ran = Promise.reject(error);
    }
    ran.then(
      (outputs) =>
        settle((waiter, i) => {
          if (i < outputs.length) waiter.resolve(outputs[i] as O);
          else waiter.reject(new Error('the store answered fewer results than it was asked for'));
        }),
      (error: unknown) => settle((waiter) => waiter.reject(error)),
    );
  };
  return (input) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      schedule();
    });
};
