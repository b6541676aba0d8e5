/**
 * A micro-benchmark of the `POST /v1/chat/completions` body parser, which the route runs on every call (and the Batch
 * API on every line of a file): `npm run build && node dist/test/bench/chatParse.js [parses] [rounds]`. Prints the
 * time per parse of a typical body (three messages and a few parameters), of one with a tool, and of a refused one:
 * the best round of each, in CPU time (the process's own, so that other processes on the machine count less).
 */
import { parseChatCreate } from '../../src/adapters/http/openai/chat/request.js';
import { InvalidRequest } from '../../src/domain/errors.js';

const typical = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are a helpful assistant. Answer briefly.' },
    { role: 'assistant', content: 'Hello! How can I help you today?' },
    { role: 'user', content: 'What is the capital of France, and why is it famous?' },
  ],
  temperature: 0.7,
  max_tokens: 256,
  stream: false,
};

const withTools = {
  ...typical,
  tools: [
    {
      type: 'function',
      function: {
        name: 'weather',
        description: 'The weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ],
  tool_choice: 'auto',
  stream: true,
  stream_options: { include_usage: true },
};

const refused = { ...typical, top_k: 40 };

const parses = Number(process.argv[2] ?? 100_000);
const rounds = Number(process.argv[3] ?? 5);

const measure = (name: string, body: unknown, valid: boolean) => {
  // The parse must do what the case says, or the figure means nothing.
  if (parseChatCreate(body) instanceof InvalidRequest === valid) throw new Error(`${name}: unexpected result`);
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < rounds; round++) {
    const started = process.cpuUsage();
    for (let i = 0; i < parses; i++) parseChatCreate(body);
    const used = process.cpuUsage(started);
    best = Math.min(best, ((used.user + used.system) * 1000) / parses);
  }
  process.stdout.write(`${name.padEnd(28)} ${best.toFixed(0).padStart(6)} ns per parse (${parses} parses)\n`);
};

measure('typical, 3 messages', typical, true);
measure('with a tool, streamed', withTools, true);
measure('refused (unknown field)', refused, false);
