import type { LmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { verifyViews } from '../../src/adapters/lmdb/verify.js';
import type { TestApp } from './testApp.js';

/** What LMDB's `replay --verify` finds wrong in the views of an app on LMDB (`store: 'lmdb'`): none, when right. */
export const lmdbViewDifferences = (app: TestApp): readonly string[] => {
  if (app.testStore.kind !== 'lmdb')
    throw new Error(`the app runs on ${app.testStore.kind}: start it with store 'lmdb'`);
  return verifyViews((app.store as LmdbStore).databases).differences;
};
