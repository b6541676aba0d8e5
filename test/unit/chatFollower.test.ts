import { describe, expect, it } from 'vitest';
import { stoppableFollower } from '../../src/adapters/http/openai/chat/stream.js';
import { createLiveOutput } from '../../src/app/LiveOutput.js';

/**
 * A streaming create listens to its request before the submit is committed; a submit that is refused (or replayed,
 * naming another request) must not leave that listener behind, or every refused streaming create would grow memory.
 */
describe('The follower of a streaming chat completion', () => {
  it('stops listening when told, leaving nothing in LiveOutput', () => {
    const live = createLiveOutput();
    const listening = stoppableFollower(live);
    listening.listen('req_refused');
    expect(live.listened('req_refused')).toBe(true);
    listening.stop();
    expect(live.listened('req_refused')).toBe(false);
  });
});
