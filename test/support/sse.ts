/** One frame of a server-sent event stream as a client reads it. */
export type Frame =
  | { readonly kind: 'data'; readonly data: unknown }
  | { readonly kind: 'done' }
  | { readonly kind: 'comment'; readonly text: string };

/** Splits SSE text into frames: `data: <json>`, `data: [DONE]`, `: comment`. */
export const framesOf = (text: string): Frame[] =>
  text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block): Frame => {
      if (block.startsWith(':')) return { kind: 'comment', text: block.slice(1).trim() };
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice('data: '.length))
        .join('\n');
      return data === '[DONE]' ? { kind: 'done' } : { kind: 'data', data: JSON.parse(data) as unknown };
    });

/**
 * Reads a streaming body frame by frame, as it arrives: `next()` resolves with the next whole frame, or undefined at
 * the end of the stream.
 */
export const frameReader = (body: ReadableStream<Uint8Array>) => {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  let ended = false;
  return {
    async next(): Promise<Frame | undefined> {
      for (;;) {
        const end = buffered.indexOf('\n\n');
        if (end >= 0) {
          const block = buffered.slice(0, end + 2);
          buffered = buffered.slice(end + 2);
          return framesOf(block)[0];
        }
        if (ended) return undefined;
        const { done, value } = await reader.read();
        if (done) ended = true;
        else buffered += decoder.decode(value, { stream: true });
      }
    },
    /** Every frame until the end. */
    async rest(): Promise<Frame[]> {
      const frames: Frame[] = [];
      for (let frame = await this.next(); frame !== undefined; frame = await this.next()) frames.push(frame);
      return frames;
    },
    cancel: () => reader.cancel(),
  };
};

/** The `data` of data frames, as chunk objects. */
export const dataOf = (frames: readonly Frame[]) =>
  frames.flatMap((frame) => (frame.kind === 'data' ? [frame.data as Record<string, unknown>] : []));
