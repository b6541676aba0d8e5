import { AirsTimeoutError } from './errors.js';
import type { SleepFn } from './types.js';

/**
 * One operation of the client (`submit`, `get`, `wait` or `run`) with what bounds it: the caller's abort signal and
 * an optional deadline. Every wait of the operation (between polls, before a retry) goes through `pause`, so an
 * abort is noticed at once and no wait runs past the deadline.
 */
export class Scope {
  /** The request being waited for, once known (for the timeout message). */
  reqId: string | undefined;
  /** Polls answered in this operation. */
  polls = 0;
  readonly startedAt: number;
  private readonly deadline: number | undefined;

  constructor(
    private readonly clock: { readonly now: () => number; readonly sleep: SleepFn },
    readonly signal: AbortSignal | undefined,
    private readonly timeoutMs: number | undefined,
  ) {
    if (timeoutMs !== undefined && !(timeoutMs >= 0)) throw new RangeError('timeoutMs must be a number >= 0');
    this.startedAt = clock.now();
    this.deadline = timeoutMs === undefined ? undefined : this.startedAt + timeoutMs;
  }

  elapsedMs(): number {
    return this.clock.now() - this.startedAt;
  }

  /** Milliseconds left before the deadline (`undefined`: no deadline). */
  remainingMs(): number | undefined {
    return this.deadline === undefined ? undefined : Math.max(0, this.deadline - this.clock.now());
  }

  timeoutError(): AirsTimeoutError {
    return new AirsTimeoutError({ timeoutMs: this.timeoutMs ?? 0, reqId: this.reqId, polls: this.polls });
  }

  /** Throws the abort reason, or the timeout error once the deadline has passed. */
  check(): void {
    this.signal?.throwIfAborted();
    if (this.remainingMs() === 0) throw this.timeoutError();
  }

  /** Waits `ms`, or only until the deadline and then fails with the timeout error. */
  async pause(ms: number): Promise<void> {
    this.check();
    const remaining = this.remainingMs();
    const wait = remaining === undefined ? ms : Math.min(ms, remaining);
    await this.clock.sleep(wait, this.signal);
    this.signal?.throwIfAborted();
    if (wait < ms) throw this.timeoutError();
  }
}
