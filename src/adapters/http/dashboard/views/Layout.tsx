import type { ComponentChildren } from 'preact';
import { dashboardAssetUrls } from './assets.js';
import { CsrfField } from './CsrfField.js';

export type Section = 'overview' | 'keys' | 'requests' | 'batches' | 'webhooks';

const sections: readonly { id: Section; href: string; label: string }[] = [
  { id: 'overview', href: '/dashboard', label: 'Overview' },
  { id: 'keys', href: '/dashboard/keys', label: 'Keys' },
  { id: 'requests', href: '/dashboard/requests', label: 'Requests' },
  { id: 'batches', href: '/dashboard/batches', label: 'Batches' },
  { id: 'webhooks', href: '/dashboard/webhooks', label: 'Webhooks' },
];

type LayoutProps = {
  /** The page's own title; the document's is `TITLE · airs`. */
  title: string;
  /** Logged in: the nav and who is signed in. With `csrf`, also the logout button. */
  session?: { readonly email?: string; readonly csrf?: string };
  current?: Section;
  /** A narrow column, for the forms of signup and login. */
  narrow?: boolean;
  /** Reload the page every so many seconds (the script does, while no confirmation is open): a page of work still
   * running. */
  refreshSeconds?: number;
  children: ComponentChildren;
};

/** The frame of every page: head with the two local assets, header, nav, logout, main. */
export const Layout = ({ title, session, current, narrow, refreshSeconds, children }: LayoutProps) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="color-scheme" content="light dark" />
      <meta name="referrer" content="no-referrer" />
      <title>{`${title} · airs`}</title>
      <link rel="icon" href="data:," />
      <link rel="stylesheet" href={dashboardAssetUrls.css} />
      <script src={dashboardAssetUrls.js} defer />
    </head>
    <body data-refresh-seconds={refreshSeconds === undefined ? undefined : String(refreshSeconds)}>
      <header class="site-header">
        <div class="bar">
          <a class="brand" href={session ? '/dashboard' : '/dashboard/login'}>
            <span>a</span>irs
          </a>
          {session && (
            <nav class="site-nav" aria-label="Dashboard">
              {sections.map((s) => (
                <a href={s.href} aria-current={s.id === current ? 'page' : undefined}>
                  {s.label}
                </a>
              ))}
            </nav>
          )}
          {session && (
            <div class="account">
              {session.email !== undefined && <span class="who">{session.email}</span>}
              {session.csrf !== undefined && (
                <form method="post" action="/dashboard/logout">
                  <CsrfField token={session.csrf} />
                  <button type="submit" class="secondary">
                    Log out
                  </button>
                </form>
              )}
            </div>
          )}
        </div>
      </header>
      <main id="main" class={narrow ? 'narrow' : undefined}>
        {children}
      </main>
      <footer class="site-footer">airs · asynchronous AI requests</footer>
    </body>
  </html>
);
