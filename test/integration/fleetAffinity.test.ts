import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeReplica, startFleet } from '../support/fakeReplica.js';
import { fleetConfig, fleetModel, logOf, serveFleet } from '../support/fleet.js';
import { fileSandboxes, type ServerProcess, sleep } from '../support/processes.js';

/**
 * Contract 19, the choice: prompts that share a prefix keep landing on the replica that has it cached while the load
 * stays even. Waves of chat completions (the official `openai` SDK through `airs serve`), one per system prompt at
 * once, three system prompts of 3,000 characters; the replicas have far more places than a wave takes, so none is
 * ever full. Sent in another order each wave, the calls would spread over the replicas by load alone; each replica records
 * the system prompt of every call it gets.
 */

const newBox = fileSandboxes();
const replicas: FakeReplica[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop('SIGKILL');
  for (const replica of replicas.splice(0)) await replica.close();
});

const waves = 20;
/** The six orders of three. */
const orders = [
  [0, 1, 2],
  [2, 0, 1],
  [1, 2, 0],
  [0, 2, 1],
  [1, 0, 2],
  [2, 1, 0],
];
/** Three system prompts of 3,000 characters, told apart in their first words. */
const systems = ['alpha', 'bravo', 'charlie'].map((word) =>
  `You are the ${word} assistant. `.concat(`${word} knows the manual by heart. `.repeat(200)).slice(0, 3_000),
);

describe('prefix affinity over three replicas (contract 19)', { timeout: 120_000 }, () => {
  it('sends at least 80 % of the calls that share a 3,000-character system prompt to one replica while none is full', async () => {
    const fleet = await startFleet(['a', 'b', 'c'].map((name) => ({ name, places: 16, behaviour: { delayMs: 40 } })));
    replicas.push(...fleet);
    const { server, key, url } = await serveFleet(
      newBox('airs-fleet-affinity'),
      fleetConfig([
        fleetModel(
          'fleet',
          fleet.map((replica) => ({ replica, places: 16 })),
        ),
      ]),
    );
    servers.push(server);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0, timeout: 30_000 });

    for (let wave = 0; wave < waves; wave++)
      await Promise.all(
        systems.map(async (system, i) => {
          // Each wave in another order: by load alone, each prompt would land on a different replica each time.
          await sleep(10 * (orders[wave % orders.length]?.[i] ?? 0));
          const answer = await client.chat.completions.create({
            model: 'fleet',
            messages: [
              { role: 'system', content: system },
              { role: 'user', content: `question ${wave} on manual ${i}` },
            ],
          });
          expect(answer.choices[0]?.message.content).toMatch(/^[abc] says: question/);
        }),
      );

    for (const system of systems) {
      const head = system.slice(0, 64);
      const perReplica = fleet.map((replica) => replica.calls().filter((call) => call.system === head).length);
      const total = perReplica.reduce((sum, n) => sum + n, 0);
      expect(total, logOf(server)).toBe(waves);
      expect(Math.max(...perReplica) / total, `${head.slice(0, 24)}…: ${perReplica.join(', ')}`).toBeGreaterThanOrEqual(
        0.8,
      );
    }
    // None was ever full: the share above is affinity's, not a full replica's overflow.
    for (const replica of fleet) expect(replica.maxInFlight()).toBeLessThan(16);
  });
});
