import { type Generation, UpstreamFailed } from '../ports/ModelProvider.js';

/**
 * The rule of `models[].maxAnswerBytes`, stated once: the bytes of an answer are those of its text and of its tool
 * calls' ids, names and arguments, in UTF-8 (all of it an upstream chooses and airs keeps); one call's answer beyond the model's bound is a failure of the upstream
 * (retried like a 5xx). Providers count as the answer comes (openai.ts); the model call checks every answer again
 * (modelCall.ts), so a provider without a count of its own is bounded too.
 */

/** The failure of a call whose answer passed `maxAnswerBytes`; `whose` names the answerer for the log. */
export const answerTooLarge = (maxAnswerBytes: number, whose = 'the model'): UpstreamFailed =>
  new UpstreamFailed(`${whose} answered more than maxAnswerBytes (${maxAnswerBytes} bytes)`, {
    kind: 'answerTooLarge',
    maxAnswerBytes,
  });

/** An answer's bytes, as `maxAnswerBytes` counts them. */
export const answerBytes = (generation: Pick<Generation, 'text' | 'toolCalls'>): number => {
  let bytes = Buffer.byteLength(generation.text);
  for (const call of generation.toolCalls ?? [])
    bytes +=
      Buffer.byteLength(call.id) + Buffer.byteLength(call.function.name) + Buffer.byteLength(call.function.arguments);
  return bytes;
};

/**
 * Whether an answer is within `maxAnswerBytes`. A text of n UTF-16 units takes at most 3n bytes, so an ordinary answer
 * is let through without being measured.
 */
export const answerWithin = (generation: Pick<Generation, 'text' | 'toolCalls'>, maxAnswerBytes: number): boolean =>
  (generation.toolCalls === undefined && generation.text.length * 3 <= maxAnswerBytes) ||
  answerBytes(generation) <= maxAnswerBytes;

/** Counts an answer's bytes as it comes in pieces (a streamed answer): `add` says whether it is still within bound. */
export const answerCounter = (maxAnswerBytes: number) => {
  let bytes = 0;
  return {
    add(piece: string): boolean {
      bytes += Buffer.byteLength(piece);
      return bytes <= maxAnswerBytes;
    },
  };
};
