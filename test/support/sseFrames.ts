/** One frame of a text/event-stream: an event (its name and JSON data) or a comment. */
export type SseFrame =
  | { readonly kind: 'event'; readonly event: string | undefined; readonly data: Record<string, unknown> }
  | { readonly kind: 'comment'; readonly text: string };

/** The frames of a whole text/event-stream body, in order; `data: [DONE]` is left out. */
export const sseFramesOf = (text: string): SseFrame[] => {
  const frames: SseFrame[] = [];
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) frames.push({ kind: 'comment', text: line.slice(1).trim() });
      else if (line.startsWith('event: ')) event = line.slice('event: '.length);
      else if (line.startsWith('data: ')) data.push(line.slice('data: '.length));
      else throw new Error(`not a server-sent event line: ${JSON.stringify(line)}`);
    }
    if (data.length === 0 || data.join('\n') === '[DONE]') continue;
    frames.push({ kind: 'event', event, data: JSON.parse(data.join('\n')) as Record<string, unknown> });
  }
  return frames;
};

/** The events' data, in order (comments left out). */
export const sseEventsOf = (text: string): Record<string, unknown>[] =>
  sseFramesOf(text).flatMap((frame) => (frame.kind === 'event' ? [frame.data] : []));

/** Reads a streaming body frame by frame, as a client does; `stop()` cancels it (the caller goes away). */
export const sseReader = (body: ReadableStream<Uint8Array>) => {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  let ended = false;
  return {
    /** The next frame, or undefined when the stream ended. */
    async next(): Promise<SseFrame | undefined> {
      for (;;) {
        const end = buffered.indexOf('\n\n');
        if (end >= 0) {
          const block = buffered.slice(0, end + 2);
          buffered = buffered.slice(end + 2);
          const [frame] = sseFramesOf(block);
          if (frame !== undefined) return frame;
          continue;
        }
        if (ended) return undefined;
        const chunk = await reader.read();
        if (chunk.done) ended = true;
        else buffered += decoder.decode(chunk.value, { stream: true });
      }
    },
    /** Reads frames until `until` holds for one (returned) or the stream ends (undefined). */
    async until(until: (frame: SseFrame) => boolean): Promise<SseFrame | undefined> {
      for (;;) {
        const frame = await this.next();
        if (frame === undefined || until(frame)) return frame;
      }
    },
    stop: () => reader.cancel(),
  };
};
