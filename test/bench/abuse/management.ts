/**
 * The operator's commands the abuse attacks need (`airs accounts create`, `airs keys create`, `airs webhooks add`), run
 * by the code those commands run (the CLI's management layer: the Accounts and Webhooks services over the store) in
 * the bench's own process, many in one opening of the store. The CLI starts a node process per command (about 0.5 s,
 * and several seconds on the shared machine): the webhook attack's 21 accounts, keys and endpoints took 2.5 minutes
 * that way. It opens the data directory beside a running server, as the CLI does.
 */
import * as Effect from 'effect/Effect';
import * as ManagedRuntime from 'effect/ManagedRuntime';
import { Accounts } from '../../../src/app/Accounts.js';
import { Webhooks } from '../../../src/app/webhooks/Webhooks.js';
import { managementLayer } from '../../../src/baseLayer.js';
import { loadConfig } from '../../../src/config.js';
import type { PlanName } from '../../../src/domain/plans.js';
import { silentLogger } from '../../../src/ports/Logger.js';
import type { Sandbox } from '../airs.js';

export type Account = { readonly accountId: string; readonly key: string };

export type Management = {
  /** An account on `plan` and one key for it. */
  account(email: string, plan: PlanName): Promise<Account>;
  /** A webhook endpoint of the account for every event type. */
  addEndpoint(accountId: string, url: string): Promise<void>;
};

/** Runs `use` with the management services of the sandbox's store (its config and data directory), then closes it. */
export const withManagement = async <A>(box: Sandbox, use: (management: Management) => Promise<A>): Promise<A> => {
  const config = loadConfig(box.env, box.dir);
  // What airs creates is its owner's alone (the CLI sets this umask): the server would warn about open modes otherwise.
  const umask = process.umask(0o077);
  const runtime = ManagedRuntime.make(managementLayer({ config, logger: silentLogger() }));
  try {
    return await use({
      account: async (email, plan) => {
        const account = await runtime.runPromise(Effect.flatMap(Accounts, (a) => a.createAccount(email, plan)));
        const key = await runtime.runPromise(Effect.flatMap(Accounts, (a) => a.createKey(account.accountId)));
        return { accountId: account.accountId, key: key.key };
      },
      addEndpoint: async (accountId, url) => {
        await runtime.runPromise(Effect.flatMap(Webhooks, (w) => w.add(accountId, url, [])));
      },
    });
  } finally {
    await runtime.dispose();
    process.umask(umask);
  }
};
