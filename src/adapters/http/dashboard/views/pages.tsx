/**
 * The account dashboard's pages: pure functions from view models to complete HTML documents. The routes (not here)
 * serve them, and serve `dashboardCss` and `dashboardScript` at `dashboardAssetPaths`; the pages link those and
 * nothing from another origin, so the CSP can be `default-src 'none'; style-src 'self'; script-src 'self';
 * img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`.
 */
export { dashboardAssetPaths, dashboardAssetUrls, dashboardCss, dashboardScript } from './assets.js';
export { batchesPage } from './batchesPage.js';
export { batchPage } from './batchPage.js';
export { errorPage } from './errorPage.js';
export { homePage } from './homePage.js';
export { keysPage } from './keysPage.js';
export { emailMaxLength, keyNameMaxLength, passwordMaxLength, passwordMinLength } from './limits.js';
export { loginPage } from './loginPage.js';
export { overviewPage } from './overviewPage.js';
export { requestPage } from './requestPage.js';
export { requestsPage } from './requestsPage.js';
export { signupPage } from './signupPage.js';
export type * from './viewModels.js';
export { batchRefreshSeconds, deliveryStatuses, requestStatuses, requestsShown } from './viewModels.js';
export { webhookPage } from './webhookPage.js';
export { webhooksPage } from './webhooksPage.js';
