import { createHash } from 'node:crypto';
import { dashboardCss } from './css.js';
import { dashboardScript } from './script.js';

export { dashboardCss, dashboardScript };

const version = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 12);

/** Where the routes serve the two assets. */
export const dashboardAssetPaths = { css: '/dashboard/assets/app.css', js: '/dashboard/assets/app.js' } as const;

/**
 * What the pages link: the paths with a content hash as query (`?v=…`), so the routes may serve the assets with a
 * long `Cache-Control` and a new build is still fetched at once. The routes ignore the query.
 */
export const dashboardAssetUrls = {
  css: `${dashboardAssetPaths.css}?v=${version(dashboardCss)}`,
  js: `${dashboardAssetPaths.js}?v=${version(dashboardScript)}`,
} as const;
