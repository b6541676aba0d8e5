import type { ComponentChildren } from 'preact';

/** A message box: `error` is announced to screen readers at once (role alert), the others are not. */
export const Notice = ({ kind, children }: { kind: 'error' | 'warning' | 'info'; children: ComponentChildren }) => (
  <div class={`notice ${kind}`} role={kind === 'error' ? 'alert' : undefined}>
    {children}
  </div>
);
