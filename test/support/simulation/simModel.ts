import type { Generation, ModelProvider } from '../../../src/ports/ModelProvider.js';

/**
 * How one model call behaves in the simulation. `ok` and `fail` answer after `delayMs` and honour the abort signal
 * (a timeout, a cancel, a dying process), as a well-behaved provider does; `hang` never answers and `late` answers
 * `delayMs` after the attempt's timeout, both ignoring the signal, as a stuck upstream or a misbehaving provider does.
 */
export type CallBehaviour = {
  readonly kind: 'ok' | 'fail' | 'hang' | 'late';
  readonly delayMs: number;
};

/**
 * A model whose calls follow a plan per prompt (the n-th call of a prompt takes the n-th behaviour, the last one
 * repeating), on whatever timers the test runs (fake ones in the simulation). It records which prompts are in a call:
 * from its start until it answers or its caller gives it up (aborts), so that two calls of one request at once show.
 */
export const createSimModel = (timeoutMs: number) => {
  const plans = new Map<string, readonly CallBehaviour[]>();
  const calls = new Map<string, number>();
  const active = new Map<string, number>();
  const overlaps: string[] = [];

  const provider: ModelProvider = {
    generate: ({ prompt, signal }) => {
      const count = (calls.get(prompt) ?? 0) + 1;
      calls.set(prompt, count);
      const plan = plans.get(prompt) ?? [{ kind: 'ok', delayMs: 0 }];
      const behaviour = plan[Math.min(count, plan.length) - 1] as CallBehaviour;
      if (process.env.SIMDEBUG) console.log(Date.now() % 100000, 'call start', prompt, count);
      if ((active.get(prompt) ?? 0) > 0) overlaps.push(prompt);
      active.set(prompt, (active.get(prompt) ?? 0) + 1);
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        if (process.env.SIMDEBUG) console.log(Date.now() % 100000, 'call end', prompt, count);
        active.set(prompt, (active.get(prompt) ?? 1) - 1);
      };
      signal.addEventListener('abort', end, { once: true });
      if (signal.aborted) end();
      return new Promise<Generation>((resolve, reject) => {
        if (behaviour.kind === 'hang') return;
        const honours = behaviour.kind === 'ok' || behaviour.kind === 'fail';
        const reason = () => (signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        if (honours && signal.aborted) {
          reject(reason());
          return;
        }
        const delay = behaviour.kind === 'late' ? timeoutMs + behaviour.delayMs : behaviour.delayMs;
        const timer = setTimeout(() => {
          end();
          if (behaviour.kind === 'fail') reject(new Error(`planned failure of call ${count}`));
          else resolve({ text: prompt, finishReason: 'stop' });
        }, delay);
        if (honours)
          signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              reject(reason());
            },
            { once: true },
          );
      });
    },
  };

  return {
    provider,
    plan: (prompt: string, behaviours: readonly CallBehaviour[]) => void plans.set(prompt, behaviours),
    /** Prompts that were in two calls at once. */
    overlaps: () => overlaps,
    calls: (prompt: string) => calls.get(prompt) ?? 0,
    reset: () => {
      plans.clear();
      calls.clear();
      active.clear();
      overlaps.length = 0;
    },
  };
};

export type SimModel = ReturnType<typeof createSimModel>;
