import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, killChildren, poll, sleep, submit } from '../support/processes.js';
import { accountWithKey, type Cluster, type ClusterTarget, clusterJson } from './clusterTarget.js';
import { type CountingUpstream, startCountingUpstream } from './countingUpstream.js';
import { attemptOutcomes, type LoggedEvent, readLog, verifyLog } from './theLog.js';

/** Server processes in every cluster. */
const serverCount = 3;
/** The free plan's submits per minute in these clusters: its burst, refilled one every 5 s. */
const freeBurst = 12;
/** The lease of a started request (seconds): short, so a killed server's requests are taken over soon. */
const leaseSeconds = 3;

/** The model every scenario calls: the `openai` provider against the counting upstream, one call per attempt. */
const modelsFor = (upstream: CountingUpstream) => [
  { id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'counted', maxRetries: 0 },
];

const requestIdOf = (answer: { body: Record<string, unknown> }) => String(answer.body.request_id);

/**
 * Polls each request, through the servers in turn, until every one is completed (or `timeoutMs` passed: then the
 * assertions that follow name what is missing). Returns each completed request's response.
 */
const completedResponses = async (
  urls: readonly string[],
  key: string,
  reqIds: readonly string[],
  timeoutMs = 30_000,
) => {
  const responses = new Map<string, string>();
  const deadline = Date.now() + timeoutMs;
  for (let round = 0; responses.size < reqIds.length && Date.now() < deadline; round++) {
    if (round > 0) await sleep(200);
    const pending = reqIds.filter((reqId) => !responses.has(reqId));
    await Promise.all(
      pending.map(async (reqId, i) => {
        const answer = await poll(urls[(i + round) % urls.length] ?? '', key, reqId);
        expect(answer.status, `GET ${reqId}: ${JSON.stringify(answer.body)}`).toBe(200);
        if (answer.body.status === 'completed') responses.set(reqId, String(answer.body.response));
      }),
    );
  }
  return responses;
};

/** A submit with an `Idempotency-Key`. */
const submitOnce = async (url: string, key: string, idempotencyKey: string, prompt: string) => {
  const response = await fetch(`${url}/v1/ai`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ model: 'llm', prompt }),
  });
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    body: (await response.json()) as Record<string, unknown>,
  };
};

/** Ends every scenario: the views rebuilt from the log are the views the servers wrote. */
const expectVerified = async (cluster: Cluster) => {
  const verified = await verifyLog(cluster);
  expect(verified.stderr).toBe('');
  expect(verified.code).toBe(0);
  expect(verified.stdout).toMatch(/every view matches the log/);
};

/**
 * Issue 21's multi-server acceptance suite: real server processes on one store (`target` says how: an LMDB data
 * directory, a PostgreSQL database), a counting fake upstream, and the log read through the CLI. Every scenario ends
 * with `airs replay --verify` clean.
 */
export const describeMultiServerScenarios = (target: ClusterTarget) => {
  describe(`three servers on one store (${target.name})`, { timeout: 60_000 }, () => {
    let upstream: CountingUpstream;
    let cluster: Cluster;
    const urls = () => cluster.servers.map((server) => server.url);
    /** Server `i mod 3`: how the scenarios spread their calls. */
    const urlOf = (i: number) => urls()[i % urls().length] ?? '';

    beforeAll(async () => {
      upstream = await startCountingUpstream();
      cluster = await target.start(
        {
          models: modelsFor(upstream),
          processing: { concurrency: 4, maxAttempts: 10, leaseSeconds },
          plans: { free: { submitsPerMinute: freeBurst } },
        },
        serverCount,
      );
    }, 60_000);
    afterAll(async () => {
      await cluster?.dispose();
      await upstream?.close();
      await killChildren();
    });

    it('completes submits spread over the three servers exactly once each (one model call per attempt, never two at once), each found at once on another server', async () => {
      const { key } = await accountWithKey(cluster, 'spread@example.com', 'scale');
      // A little slower than the submits arrive, so that queues form and servers take each other's waiting work.
      upstream.setDelay(40);
      const prompts = Array.from({ length: 60 }, (_, i) => `spread ${i}`);
      const promptOf = new Map<string, string>();
      await Promise.all(
        prompts.map(async (prompt, i) => {
          const answer = await submit(urlOf(i), key, 'llm', prompt);
          expect(answer.status, `POST ${prompt}: ${JSON.stringify(answer.body)}`).toBe(202);
          promptOf.set(requestIdOf(answer), prompt);
          // Acknowledged by one server, found at once by the next.
          const found = await poll(urlOf(i + 1), key, requestIdOf(answer));
          expect(found.status, `GET ${prompt} on the next server: ${JSON.stringify(found.body)}`).toBe(200);
        }),
      );
      expect(promptOf.size).toBe(prompts.length);

      const responses = await completedResponses(urls(), key, [...promptOf.keys()]);
      const log = await readLog(cluster);
      const owners = new Set<string | undefined>();
      for (const [reqId, prompt] of promptOf) {
        expect(responses.get(reqId), `${reqId} (${prompt})`).toBe(`upstream says: ${prompt}`);
        expect(log.states[reqId], reqId).toBe('completed');
        expect(log.count(reqId, 'RequestCompleted'), `RequestCompleted events of ${reqId}`).toBe(1);
        const attempts = log.count(reqId, 'RequestProcessingStarted');
        expect(attempts, `attempts of ${reqId}`).toBeGreaterThanOrEqual(1);
        // At most one call per attempt: an attempt whose lease its server could not keep (a machine so loaded that
        // renewals come late) is given back before its call, and the next attempt calls instead.
        const calls = upstream.callsFor(prompt);
        expect(calls, `model calls of ${reqId} (${attempts} attempts)`).toBeGreaterThanOrEqual(1);
        expect(calls, `model calls of ${reqId} (${attempts} attempts)`).toBeLessThanOrEqual(attempts);
        for (const event of log.eventsOf(reqId)) if (event.type === 'RequestProcessingStarted') owners.add(event.owner);
      }
      expect(log.attemptsWithTwoOutcomes()).toEqual([]);
      expect(upstream.overlaps().filter((prompt) => prompt.startsWith('spread '))).toEqual([]);
      // Every server called the model: the work really was spread.
      expect(owners.size).toBe(serverCount);
      await expectVerified(cluster);
    });

    it('grants a free account exactly its burst of submits across the three servers, and refuses the rest with 429', async () => {
      const { accountId, key } = await accountWithKey(cluster, 'burst@example.com', 'free');
      upstream.setDelay(0);
      const sent = 3 * freeBurst;
      const startedAt = Date.now();
      const answers = await Promise.all(
        Array.from({ length: sent }, (_, i) => submit(urlOf(i), key, 'llm', `burst ${i}`)),
      );
      const tookMs = Date.now() - startedAt;
      const accepted = answers.filter((answer) => answer.status === 202);
      const refused = answers.filter((answer) => answer.status !== 202);
      for (const answer of refused) {
        expect(answer.status, JSON.stringify(answer.body)).toBe(429);
        expect(answer.body).toMatchObject({ error: { code: 'rate_limited' } });
      }
      // The budget refills one submit every 60 / freeBurst seconds: a burst sent at once gets exactly freeBurst. Only a
      // burst that took longer than that (a machine stalled for seconds) could honestly get one more per refill.
      expect(accepted.length).toBeGreaterThanOrEqual(freeBurst);
      expect(accepted.length).toBeLessThanOrEqual(freeBurst + Math.floor(tookMs / ((60 / freeBurst) * 1_000)));

      // The log holds the accepted submits and nothing else of the account.
      const log = await readLog(cluster, ['--account', accountId]);
      expect(log.requestsOf(accountId).sort()).toEqual(accepted.map(requestIdOf).sort());
      const responses = await completedResponses(urls(), key, accepted.map(requestIdOf));
      expect(responses.size).toBe(accepted.length);
      await expectVerified(cluster);
    });

    it('makes one request of an Idempotency-Key sent to the three servers at once, answers each with it, and refuses it with another body', async () => {
      const { key } = await accountWithKey(cluster, 'idempotent@example.com', 'scale');
      upstream.setDelay(0);
      const rounds = 6;
      const made = new Map<string, string>();
      for (let round = 0; round < rounds; round++) {
        const prompt = `idempotent ${round}`;
        const answers = await Promise.all(urls().map((url) => submitOnce(url, key, `same-key-${round}`, prompt)));
        for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(202);
        const ids = new Set(answers.map(requestIdOf));
        expect(ids.size, `request ids for key ${round}`).toBe(1);
        // One of the three made it; the others were answered with it (Idempotent-Replayed: true).
        expect(answers.filter((answer) => !answer.replayed).length, `answers of key ${round} not replayed`).toBe(1);
        made.set(requestIdOf(answers[0] ?? { body: {} }), prompt);
      }
      // A key sent with three different bodies at once: one of them makes the request, the others are refused.
      for (let round = 0; round < 2; round++) {
        const prompts = urls().map((_, i) => `idempotent other ${round}.${i}`);
        const answers = await Promise.all(
          urls().map((url, i) => submitOnce(url, key, `other-bodies-${round}`, prompts[i] ?? '')),
        );
        const accepted = answers.flatMap((answer, i) => (answer.status === 202 ? [[answer, prompts[i]] as const] : []));
        expect(accepted.length, `bodies accepted with key other-bodies-${round}`).toBe(1);
        for (const answer of answers.filter((each) => each.status !== 202)) {
          expect(answer.status, JSON.stringify(answer.body)).toBe(422);
          expect(answer.body).toMatchObject({ error: { code: 'idempotency_key_reused' } });
        }
        for (const [answer, prompt] of accepted) made.set(requestIdOf(answer), prompt ?? '');
      }

      const responses = await completedResponses(urls(), key, [...made.keys()]);
      const log = await readLog(cluster);
      const keys = [
        ...Array.from({ length: rounds }, (_, round) => `same-key-${round}`),
        'other-bodies-0',
        'other-bodies-1',
      ];
      for (const idempotencyKey of keys) {
        const queued = log.events.filter(
          (event) => event.type === 'RequestQueued' && event.idempotencyKey === idempotencyKey,
        );
        expect(queued.length, `requests made with key ${idempotencyKey}`).toBe(1);
      }
      for (const [reqId, prompt] of made) {
        expect(responses.get(reqId)).toBe(`upstream says: ${prompt}`);
        expect(log.count(reqId, 'RequestCompleted')).toBe(1);
        const calls = upstream.callsFor(prompt);
        expect(calls, `model calls of ${prompt}`).toBeGreaterThanOrEqual(1);
        expect(calls, `model calls of ${prompt}`).toBeLessThanOrEqual(log.count(reqId, 'RequestProcessingStarted'));
      }
      await expectVerified(cluster);
    });

    it('refuses a key revoked by the CLI on the next call to each server, and serves the account’s other key', async () => {
      const { accountId, key, keyId } = await accountWithKey(cluster, 'revoked@example.com', 'scale');
      const other = await accountWithKey(cluster, 'bystander@example.com', 'scale');
      const { key: otherKey } = await clusterJson<{ key: string }>(cluster, ['keys', 'create', '--account', accountId]);
      upstream.setDelay(0);
      // Each server has authenticated the key (and may hold it in its cache) before the revocation.
      const before = await Promise.all(urls().map((url, i) => submit(url, key, 'llm', `revoked before ${i}`)));
      for (const answer of before) expect(answer.status).toBe(202);

      const revoked = await cluster.cli(['keys', 'revoke', keyId]);
      expect(revoked.code, revoked.stderr).toBe(0);

      for (const [i, url] of urls().entries()) {
        const submitted = await submit(url, key, 'llm', `revoked after ${i}`);
        expect(submitted.status, `server ${i + 1}: ${JSON.stringify(submitted.body)}`).toBe(401);
        expect(submitted.body).toMatchObject({ error: { code: 'unauthorized' } });
        const polled = await poll(url, key, requestIdOf(before[i] ?? { body: {} }));
        expect(polled.status, `server ${i + 1}`).toBe(401);
        // The account's other key, and another account, are served as before.
        expect((await poll(url, otherKey, requestIdOf(before[i] ?? { body: {} }))).status).toBe(200);
        expect((await call(url, 'GET', '/v1/ai?req_id=req_unknown', other.key)).status).toBe(404);
      }
      await completedResponses(urls(), otherKey, before.map(requestIdOf));
      await expectVerified(cluster);
    });

    // What "no two model calls for one request at once" can promise when a server is SIGKILLed: airs gives no second
    // attempt to a request until the first attempt's lease has lapsed (seconds after the kill), and the kernel closes
    // a killed process's connections when it dies, so the upstream sees the first call end (its connection closed)
    // long before a second call arrives. The counting upstream tells a call over when its answer is written or its
    // connection closes; that two such spans of one prompt never overlap is what is asserted. An upstream that goes
    // on computing after its caller left is beyond what airs can see.
    it('takes over the leased requests of a server SIGKILLed during a burst with a slow model: all complete on the others after the lease, once each', async () => {
      const { accountId, key } = await accountWithKey(cluster, 'killed@example.com', 'enterprise');
      upstream.setDelay((prompt) => (prompt.startsWith('kill ') ? 1_500 : 0));
      const victim = cluster.servers[serverCount - 1];
      if (victim === undefined) throw new Error('no server to kill');
      const perServer = 15;
      const acknowledged = new Map<string, string>();
      let killed = false;
      const sender = async (server: number) => {
        for (let n = 0; n < perServer; n++) {
          const prompt = `kill ${server}.${n}`;
          const answer = await submit(urlOf(server), key, 'llm', prompt).catch(() => undefined);
          if (answer === undefined) {
            // Only the killed server's submits may go unanswered (reset by the kill); they are not acknowledged.
            expect(killed && server === serverCount - 1, `POST ${prompt} got no answer`).toBe(true);
            return;
          }
          expect(answer.status, `POST ${prompt}: ${JSON.stringify(answer.body)}`).toBe(202);
          acknowledged.set(requestIdOf(answer), prompt);
          await sleep(100);
        }
      };
      const senders = Array.from({ length: serverCount }, (_, server) => sender(server));
      // Each server calls the model for at most 4 requests at once: with 10 calls open, the victim has 2 or more.
      const deadline = Date.now() + 20_000;
      while (upstream.openCalls() < 10 && Date.now() < deadline) await sleep(20);
      expect(upstream.openCalls(), 'model calls open before the kill').toBeGreaterThanOrEqual(10);
      killed = true;
      victim.child.kill('SIGKILL');
      expect(await victim.stop('SIGKILL')).not.toBe(0);
      await Promise.all(senders);
      const live = urls().slice(0, serverCount - 1);

      // Every request in the log (acknowledged, or committed by the victim before it could answer) completes.
      const logged = (await readLog(cluster, ['--account', accountId])).requestsOf(accountId);
      for (const reqId of acknowledged.keys()) expect(logged, `acknowledged ${reqId} is in the log`).toContain(reqId);
      const responses = await completedResponses(live, key, logged, 40_000);
      expect(logged.filter((reqId) => !responses.has(reqId))).toEqual([]);

      const log = await readLog(cluster, ['--account', accountId]);
      expect(log.attemptsWithTwoOutcomes()).toEqual([]);
      for (const reqId of logged) {
        const prompt = acknowledged.get(reqId) ?? /^upstream says: (kill .*)$/.exec(responses.get(reqId) ?? '')?.[1];
        expect(responses.get(reqId), reqId).toBe(`upstream says: ${prompt}`);
        expect(log.count(reqId, 'RequestCompleted'), `RequestCompleted events of ${reqId}`).toBe(1);
        expect(log.count(reqId, 'RequestFailed'), reqId).toBe(0);
        // A call per attempt at most: an attempt the victim started may have died before its call went out.
        expect(upstream.callsFor(prompt ?? ''), `model calls of ${reqId}`).toBeLessThanOrEqual(
          log.count(reqId, 'RequestProcessingStarted'),
        );
      }
      expect(upstream.overlaps().filter((prompt) => prompt.startsWith('kill '))).toEqual([]);

      // The attempts left without an outcome are the victim's alone (one owner), and each was taken up again by
      // another server only once its lease (as last extended) had run out.
      const abandoned: { reqId: string; owner: string | undefined; leaseUntil: number; next?: LoggedEvent }[] = [];
      for (const reqId of logged) {
        const events = log.eventsOf(reqId);
        for (const start of events.filter((event) => event.type === 'RequestProcessingStarted')) {
          const ofAttempt = events.filter((event) => event.attempt === start.attempt);
          if (ofAttempt.some((event) => attemptOutcomes.has(event.type))) continue;
          const leaseUntil = Math.max(...ofAttempt.map((event) => event.leaseUntil ?? 0));
          const next = events.find(
            (event) => event.type === 'RequestProcessingStarted' && (event.attempt ?? 0) > (start.attempt ?? 0),
          );
          abandoned.push({ reqId, owner: start.owner, leaseUntil, next });
        }
      }
      expect(abandoned.length, 'attempts the kill left without an outcome').toBeGreaterThanOrEqual(2);
      expect(new Set(abandoned.map((attempt) => attempt.owner)).size, 'owners of abandoned attempts').toBe(1);
      for (const attempt of abandoned) {
        expect(attempt.next, `${attempt.reqId} taken up again`).toBeDefined();
        expect(attempt.next?.owner).not.toBe(attempt.owner);
        expect(Date.parse(attempt.next?.at ?? ''), `${attempt.reqId} taken up after its lease`).toBeGreaterThanOrEqual(
          attempt.leaseUntil,
        );
      }
      // The victim's calls in flight ended when it died: their connections closed before an answer.
      const closed = upstream.calls().filter((call) => call.prompt.startsWith('kill ') && call.end === 'closed');
      expect(closed.length, 'calls cut short by the kill').toBeGreaterThanOrEqual(2);
      await expectVerified(cluster);
    });
  });

  describe(`three sweepers on one store (${target.name})`, { timeout: 60_000 }, () => {
    let upstream: CountingUpstream;
    let cluster: Cluster;

    beforeAll(async () => {
      upstream = await startCountingUpstream();
      cluster = await target.start({ models: modelsFor(upstream), requestTtlSeconds: 2 }, serverCount);
    }, 60_000);
    afterAll(async () => {
      await cluster?.dispose();
      await upstream?.close();
      await killChildren();
    });

    it('writes one RequestExpired per request, whichever server’s sweeper gets there first', async () => {
      const { accountId, key } = await accountWithKey(cluster, 'expiry@example.com', 'scale');
      const urls = cluster.servers.map((server) => server.url);
      // Half complete at once; half are still with the (slow) model when they expire.
      upstream.setDelay((prompt) => (prompt.startsWith('expire slow') ? 5_000 : 0));
      const prompts = Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? `expire fast ${i}` : `expire slow ${i}`));
      const answers = await Promise.all(
        prompts.map((prompt, i) => submit(urls[i % urls.length] ?? '', key, 'llm', prompt)),
      );
      for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(202);
      const reqIds = answers.map(requestIdOf);

      // Wait until every request has expired in the log, then two more rounds of every sweeper (one a second).
      const deadline = Date.now() + 20_000;
      let log = await readLog(cluster, ['--account', accountId]);
      while (reqIds.some((reqId) => log.states[reqId] !== 'expired') && Date.now() < deadline) {
        await sleep(500);
        log = await readLog(cluster, ['--account', accountId]);
      }
      await sleep(2_500);
      log = await readLog(cluster, ['--account', accountId]);
      for (const [i, reqId] of reqIds.entries()) {
        expect(log.states[reqId], `${reqId} (${prompts[i]})`).toBe('expired');
        expect(log.count(reqId, 'RequestExpired'), `RequestExpired events of ${reqId}`).toBe(1);
        // Nothing happens to a request after its expiry.
        expect(log.eventsOf(reqId).at(-1)?.type, reqId).toBe('RequestExpired');
        for (const url of urls) expect((await poll(url, key, reqId)).status, `GET ${reqId} on ${url}`).toBe(404);
      }
      expect(log.attemptsWithTwoOutcomes()).toEqual([]);
      await expectVerified(cluster);
    });
  });
};
