import { afterEach, describe, expect, it } from 'vitest';
import { formTokensOf } from '../support/dashboardForm.js';
import { loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';

/** Dashboard forms are bounded before they are decoded: at most 16 KB and 16 fields (formBody.ts). */

const password = 'correct horse battery staple';

let app: TestApp;
afterEach(() => app.stop());

/** The signup page's CSRF token and its cookie, as a browser would hold them. */
const signupForm = async () => formTokensOf(await app.http.request('http://airs.test/dashboard/signup'));

const postSignup = async (body: string, cookie: string) => {
  const response = await app.http.request('http://airs.test/dashboard/signup', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body,
    redirect: 'manual',
  });
  return { status: response.status, text: await response.text() };
};

const accounts = async () => (await loggedEvents(app)).filter((e) => e.type === 'AccountCreated').length;

describe('Dashboard forms', () => {
  it('refuse a form of more than 16 fields with a 413 page, and sign nobody up', async () => {
    app = await startTestApp();
    const { csrf, cookie } = await signupForm();
    const fields = new URLSearchParams({ email: 'many@example.com', password, csrf });
    for (let i = 0; i < 14; i++) fields.append(`extra${i}`, 'x');
    const refused = await postSignup(fields.toString(), cookie);
    expect(refused.status).toBe(413);
    expect(refused.text).toContain('A form may hold at most 16 fields; this one holds more.');
    expect(await accounts()).toBe(0);
  });

  it('refuse a form of more than 16 KB with a 413 page', async () => {
    app = await startTestApp();
    const { csrf, cookie } = await signupForm();
    const fields = new URLSearchParams({ email: 'big@example.com', password, csrf, padding: 'x'.repeat(17 * 1024) });
    const refused = await postSignup(fields.toString(), cookie);
    expect(refused.status).toBe(413);
    expect(refused.text).toContain('A form may hold at most 16 KB; this one holds more.');
    expect(await accounts()).toBe(0);
  });

  it('read a form of exactly 16 fields as before', async () => {
    app = await startTestApp();
    const { csrf, cookie } = await signupForm();
    const fields = new URLSearchParams({ email: 'sixteen@example.com', password, csrf });
    for (let i = 0; i < 13; i++) fields.append(`extra${i}`, 'x');
    expect((await postSignup(fields.toString(), cookie)).status).toBe(303);
    expect(await accounts()).toBe(1);
  });
});
