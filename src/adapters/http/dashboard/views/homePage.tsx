import { Layout } from './Layout.js';
import { renderDocument } from './render.js';

/**
 * `GET /`: where a person who opens the URL `airs serve` prints finds the way on: the dashboard's login and signup,
 * and the API's documents. A page rather than a redirect, so that API users see where the API is described too.
 */
export const homePage = (): string =>
  renderDocument(
    <Layout title="Asynchronous AI requests" narrow>
      <h1>airs</h1>
      <p>
        An asynchronous AI request service: submit a prompt with <code>POST /v1/ai</code>, get a request id at once, and
        poll <code>GET /v1/ai?req_id=…</code> for the answer.
      </p>
      <section class="card" aria-labelledby="dashboard-h">
        <h2 id="dashboard-h">Your account</h2>
        <p>Create API keys, see your requests and your plan's limits in the dashboard.</p>
        <p class="actions">
          <a class="button" href="/dashboard/login">
            Log in
          </a>
          <a class="button secondary" href="/dashboard/signup">
            Create an account
          </a>
        </p>
        <p class="hint">The free plan works at once.</p>
      </section>
      <section class="card" aria-labelledby="api-h">
        <h2 id="api-h">The API</h2>
        <p>
          The API is described by its OpenAPI document, <a href="/v1/openapi.json">/v1/openapi.json</a>, and in words by{' '}
          <code>docs/api.md</code> in the service's source.
        </p>
      </section>
    </Layout>,
  );
