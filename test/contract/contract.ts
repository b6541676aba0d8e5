import { it } from 'vitest';
import type { StoreShape } from '../../src/ports/Store.js';
import { type Capability, isUnsupported, type StoreFactory } from './storeFactory.js';

/** What each feature of the suite is written against: the adapter's factory, and tests that need a capability. */
export type Contract = {
  readonly factory: StoreFactory;
  /** A store over new, empty data (closed and removed after the test). */
  open(): Promise<StoreShape>;
  /**
   * Two handles on one store's data: the second is another handle where the adapter has them, else the same handle
   * (the test then holds for one writer; the concurrent-writer tests are skipped with the adapter's reason).
   */
  pair(): Promise<readonly [StoreShape, StoreShape]>;
  /** A test that needs a capability: skipped, with the adapter's reason in its name, where the adapter lacks it. */
  itWith<F>(capability: Capability<F>, title: string, body: (capability: F) => Promise<void>): void;
};

export const contractOf = (factory: StoreFactory): Contract => ({
  factory,
  open: () => factory.open(),
  async pair() {
    const store = await factory.open();
    const { another } = factory;
    return [store, isUnsupported(another) ? store : await another(store)];
  },
  itWith(capability, title, body) {
    if (isUnsupported(capability)) it.skip(`${title} (skipped for ${factory.name}: ${capability.unsupported})`);
    else it(title, () => body(capability));
  },
});
