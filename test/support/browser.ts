import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * A real headless browser for the dashboard's end-to-end tests: Debian's chromium (`apt-get install -y chromium`,
 * which `.ci/run` does when it is missing) driven by playwright-core. No browser is ever downloaded.
 */

/** The browser to drive; AIRS_CHROMIUM may name another build of Chromium. */
export const chromiumPath = process.env.AIRS_CHROMIUM ?? '/usr/bin/chromium';

/**
 * The switches the machine needs: no sandbox (tests run as root), no GPU, and none of the background connections to
 * Google's hosts, which this machine's closed network refuses.
 */
export const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
] as const;

/** Every wait on the browser is bounded by this, so a hung page fails the test instead of hanging it. */
export const browserWaitMs = 10_000;

const findRoot = (from: string): string => {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
};

/** Where screenshots go: test/e2e/artifacts/ of the checkout (git-ignored). */
export const artifactsDir = join(findRoot(dirname(fileURLToPath(import.meta.url))), 'test', 'e2e', 'artifacts');

export type HeadlessBrowser = {
  readonly browser: Browser;
  /** A fresh context (its own cookies), with bounded waits. */
  context(options?: { viewport?: { width: number; height: number } }): Promise<BrowserContext>;
  close(): Promise<void>;
};

/** Launches headless chromium; playwright gives it a fresh, empty profile of its own (and removes it on close). */
export const launchBrowser = async (): Promise<HeadlessBrowser> => {
  if (!existsSync(chromiumPath))
    throw new Error(
      `no browser at ${chromiumPath}: install Debian's chromium (apt-get install -y chromium), as .ci/run does, or set AIRS_CHROMIUM`,
    );
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [...chromiumArgs],
    timeout: 30_000,
  });
  return {
    browser,
    context: async (options = {}) => {
      const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 800 } });
      context.setDefaultTimeout(browserWaitMs);
      context.setDefaultNavigationTimeout(browserWaitMs);
      return context;
    },
    close: async () => {
      await browser.close().catch(() => undefined);
    },
  };
};

/** Saves a full-page screenshot as test/e2e/artifacts/NAME.png; returns its path. */
export const screenshot = async (page: Page, name: string): Promise<string> => {
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true, timeout: browserWaitMs });
  return path;
};

/** The `Cookie` header the browser would send to `url`: for requests the test makes on its own (forged ones). */
export const cookieHeader = async (context: BrowserContext, url: string): Promise<string> =>
  (await context.cookies(url)).map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
