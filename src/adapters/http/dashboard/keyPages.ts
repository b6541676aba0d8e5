import * as Result from 'effect/Result';
import { effectiveLimits } from '../../../domain/account/limits.js';
import { couldBeId } from '../../../domain/identifiers.js';
import { type DashboardKit, seeOther, send, type Visitor } from './pageKit.js';
import { keysPage } from './views/pages.js';

/** The Keys pages of the dashboard: the account's API keys, making one (shown this once) and deleting one. */

export const mountKeyPages = ({ deps, routes, run, page, action, notFound }: DashboardKit) => {
  const renderKeys = async (
    who: Visitor,
    extra: {
      newKey?: { key: string; name?: string };
      error?: string;
      deleted?: { prefix: string; name?: string };
    } = {},
  ) => {
    const active = (await deps.store.reads.keysOf(who.account.accountId)).filter((key) => key.revokedAt === undefined);
    const keys = await Promise.all(
      active.map(async (key) => ({
        id: key.keyId,
        name: key.name,
        prefix: key.prefix,
        createdAt: key.createdAt,
        lastUsedAt: await deps.store.reads.keyLastUsed(key.keyId),
        ...(key.expiresAt === undefined ? {} : { expiresAt: key.expiresAt }),
      })),
    );
    const account = (await deps.store.reads.account(who.account.accountId)) ?? who.account;
    return keysPage({
      csrf: who.csrf,
      email: account.email,
      keys,
      maxKeys: effectiveLimits(deps.config.plans, account).maxKeys,
      ...extra,
    });
  };
  routes.get(
    '/dashboard/keys',
    page(async (event, who) => {
      // After a deletion (`?deleted=KEY_ID`): the notice names the key, only if it is this account's and deleted.
      const deletedId = event.url.searchParams.get('deleted');
      const key = deletedId !== null && couldBeId('key', deletedId) ? await deps.store.reads.key(deletedId) : undefined;
      const deleted =
        key !== undefined && key.accountId === who.account.accountId && key.revokedAt !== undefined
          ? { prefix: key.prefix, name: key.name }
          : undefined;
      return renderKeys(who, { deleted });
    }),
  );
  routes.post(
    '/dashboard/keys',
    action(async (event, who, form) => {
      const name = form.get('name')?.trim() || undefined;
      // Said in the page's words; the domain refuses the same case again inside the write (another tab, the CLI).
      const { maxKeys } = effectiveLimits(deps.config.plans, who.account);
      if (maxKeys !== null && who.account.activeKeys >= maxKeys) {
        const error = `Your ${who.account.plan} plan allows ${maxKeys} API key${maxKeys === 1 ? '' : 's'} and you have ${who.account.activeKeys}. Delete one to make a new one, or ask your operator for a larger plan.`;
        return send(event, 400, await renderKeys(who, { error }));
      }
      const created = await run(deps.accounts.createKey(who.account.accountId, name));
      if (Result.isFailure(created)) return send(event, 400, await renderKeys(who, { error: created.failure.message }));
      deps.log.info({ accountId: who.account.accountId, keyId: created.success.id }, 'dashboard key created');
      // The only page that ever shows the key: answered directly, never through a redirect that could be reloaded.
      return send(event, 201, await renderKeys(who, { newKey: { key: created.success.key, name } }));
    }),
  );
  routes.post(
    '/dashboard/keys/:id/delete',
    action(async (event, who) => {
      const keyId = event.context.params?.id ?? '';
      const key = couldBeId('key', keyId) ? await deps.store.reads.key(keyId) : undefined;
      // Another account's key is answered like an unknown one.
      if (key === undefined || key.accountId !== who.account.accountId) return notFound(event, who);
      const revoked = await run(deps.accounts.revokeKey(keyId));
      if (Result.isFailure(revoked)) return send(event, 400, await renderKeys(who, { error: revoked.failure.message }));
      deps.log.info({ accountId: who.account.accountId, keyId }, 'dashboard key deleted');
      // A redirect, so that a reload deletes nothing; the page it leads to says what was deleted.
      return seeOther(event, `/dashboard/keys?deleted=${encodeURIComponent(keyId)}`);
    }),
  );
};
