/**
 * Child process: the bystander of `--only=abuse` (test/support/bystander.ts), run apart from the bench process so that
 * the attack drivers' own work (streaming gigabytes of uploads, a fake upstream, receivers) never delays its timers:
 * what it measures is the server's answer times. Run with an IPC channel; answers `{type: 'watch', options}` with
 * `{type: 'watching'}` and then `{type: 'stop'}` with `{type: 'figures', figures}`, any number of times.
 */
import { type BystanderFigures, type BystanderOptions, watchBystander } from '../support/bystander.js';

export type BystanderAsk = { readonly type: 'watch'; readonly options: BystanderOptions } | { readonly type: 'stop' };
export type BystanderAnswer =
  | { readonly type: 'watching' }
  | { readonly type: 'figures'; readonly figures: BystanderFigures }
  | { readonly type: 'failed'; readonly message: string };

const send = process.send?.bind(process);
if (send === undefined) throw new Error('bystanderChild runs as a child with an IPC channel');

let watch: ReturnType<typeof watchBystander> | undefined;
process.on('message', (ask: BystanderAsk) => {
  if (ask.type === 'watch') {
    watch = watchBystander(ask.options);
    send({ type: 'watching' } satisfies BystanderAnswer);
    return;
  }
  const current = watch;
  watch = undefined;
  if (current === undefined) {
    send({ type: 'failed', message: 'stop without a watch' } satisfies BystanderAnswer);
    return;
  }
  current.stop().then(
    (figures) => send({ type: 'figures', figures } satisfies BystanderAnswer),
    (error: unknown) => send({ type: 'failed', message: String(error) } satisfies BystanderAnswer),
  );
});
process.on('disconnect', () => process.exit(0));
process.stdout.write('bystander ready\n');
