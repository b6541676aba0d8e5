/**
 * A dashboard page's CSRF token and the cookie that goes with it, as a browser that loaded the page holds them
 * (`page`: the page's answer, e.g. `app.call('GET', '/dashboard/signup')`).
 */
export const formTokensOf = async (page: Response) => {
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  return { csrf, cookie };
};
