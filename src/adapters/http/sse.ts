/**
 * Server-sent events (text/event-stream) as a streaming answer: each frame a piece of the body, written as the source
 * yields it. The source is pulled one frame at a time, so a slow reader holds back the writer (no frames pile up in
 * memory). When the caller goes away, the body is cancelled: `cancelled` is called (abort what the source waits on:
 * a generator cannot be stopped while it awaits) and the source is told to stop (`return()`).
 */

/** One event: `data: <json>` (with `event: <name>` when named), then a blank line. */
export const sseEvent = (data: unknown, name?: string): string =>
  `${name === undefined ? '' : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`;

/** The end marker of OpenAI's chat completion streams. */
export const sseDone = 'data: [DONE]\n\n';

/** A comment: ignored by clients, it keeps an idle connection alive through proxies. */
export const sseComment = (text: string): string => `: ${text}\n\n`;

export const sseHeaders: Readonly<Record<string, string>> = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  // Proxies that buffer (nginx) pass the stream on as it comes.
  'X-Accel-Buffering': 'no',
};

/** A streaming answer that writes the frames `frames` yields, in order, and ends when it ends. */
export const sseResponse = (
  frames: AsyncGenerator<string, void, undefined>,
  options: {
    readonly headers?: Readonly<Record<string, string>>;
    readonly cancelled?: () => void;
    /** Called when the body ends, whichever way: written to its end, broken by an error, or cancelled. */
    readonly ended?: () => void;
  } = {},
): Response => {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await frames.next();
        if (next.done) {
          controller.close();
          options.ended?.();
        } else controller.enqueue(encoder.encode(next.value));
      } catch (error) {
        controller.error(error);
        options.ended?.();
      }
    },
    async cancel() {
      options.ended?.();
      options.cancelled?.();
      await frames.return(undefined);
    },
  });
  return new Response(body, { status: 200, headers: { ...options.headers, ...sseHeaders } });
};
