import type { H3, H3Event } from 'h3';
import { couldBeId } from '../../../domain/identifiers.js';
import { fileDownload } from '../fileDownload.js';
import { mountBatchPages } from './batchPages.js';
import { mountKeyPages } from './keyPages.js';
import { mountOverviewPage } from './overviewPage.js';
import { type DashboardDeps, dashboardKit, seeOther, send } from './pageKit.js';
import { mountRequestPages } from './requestPages.js';
import { pageHeaders } from './security.js';
import { mountSessionPages } from './sessionPages.js';
import { dashboardAssetPaths, dashboardCss, dashboardScript, homePage } from './views/pages.js';
import { mountWebhookPages } from './webhookPages.js';

// app.ts mounts the dashboard with its dependencies, whose type lies beside the helpers that use them.
export type { DashboardDeps } from './pageKit.js';

/**
 * The account dashboard under /dashboard: signup, login, logout, overview, keys, requests, batches, webhooks. Server-rendered pages
 * (views/), plain forms with CSRF tokens, a session cookie; every change goes through the same
 * services, commands and log as the CLI's.
 */
export const mountDashboard = (app: H3, deps: DashboardDeps) => {
  const kit = dashboardKit(app, deps);
  const { routes, visitor, action, notFound } = kit;

  // Assets: named with their content's hash in the pages' links, so they may be cached for good.
  const asset = (type: string, body: string) => (event: H3Event) => {
    event.res.headers.set('Content-Type', type);
    event.res.headers.set('Cache-Control', 'public, max-age=31536000, immutable');
    event.res.headers.set('X-Content-Type-Options', 'nosniff');
    return body;
  };
  routes.get(dashboardAssetPaths.css, asset('text/css; charset=utf-8', dashboardCss));
  routes.get(dashboardAssetPaths.js, asset('text/javascript; charset=utf-8', dashboardScript));

  // The URL `airs serve` prints: a page that leads to the dashboard and the API's documents.
  routes.get('/', (event) => send(event, 200, homePage()));

  mountSessionPages(kit);
  mountOverviewPage(kit);
  mountKeyPages(kit);
  mountRequestPages(kit);

  mountBatchPages({
    get: routes.get,
    post: routes.post,
    visitor,
    action: (change) => action((event, who) => change(event, who)),
    send,
    seeOther,
    notFound,
    store: deps.store,
    batches: deps.batches,
    now: () => deps.clock.now(),
    log: deps.log,
  });

  mountWebhookPages(kit, deps.webhooks);

  // A file's bytes for its own account's session (the API's /v1/files/{id}/content takes a key, which a browser
  // holding only the session cookie has not): streamed, never whole in memory. Another account's file is unknown.
  routes.get('/dashboard/files/:id', async (event) => {
    const who = await visitor(event);
    if (who === undefined) return seeOther(event, '/dashboard/login');
    const fileId = event.context.params?.id ?? '';
    const file = couldBeId('file', fileId) ? await deps.store.reads.file(fileId) : undefined;
    if (file === undefined || file.accountId !== who.account.accountId) return notFound(event, who);
    const download = await fileDownload(file, deps.store.files.read(fileId), pageHeaders);
    return download ?? notFound(event, who);
  });

  routes.all('/dashboard/**', async (event) => notFound(event, await visitor(event)));
};
