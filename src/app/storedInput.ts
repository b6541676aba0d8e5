import type { ChatMessage, Generation, GenerationParams, ToolCall } from '../ports/ModelProvider.js';

/**
 * How a request's input and answer are kept as the text beside the log (the claim check).
 *
 * Input: a plain prompt as itself; a conversation, or a prompt with generation parameters, as the JSON of
 * `{messages, params?}` (`input: 'chat'` in its `RequestQueued`), so that every attempt sends the upstream exactly
 * what the caller sent. Requests of the first OpenAI face (`input: 'messages'`) hold a bare array of messages. A
 * batch's line (`input: 'line'`) holds no copy of its input: where the line lies in its batch's input file, read when
 * an attempt starts (batches/lineInput.ts).
 *
 * Answer: its text as itself; an answer that calls tools as the JSON of the assistant message
 * (`{content, tool_calls}`, `output: 'message'` in its `RequestCompleted`).
 */

/** What a model is called with. */
export type ModelInput = {
  readonly prompt: string;
  readonly messages?: readonly ChatMessage[] | undefined;
  readonly params?: GenerationParams | undefined;
};

/** The text of a message, `''` for an assistant message that only calls tools. */
export const textOfMessage = (message: ChatMessage): string => message.content ?? '';

/** The text a conversation is answered for by `echo`, and shown as its prompt: its last user message's. */
export const lastUserText = (messages: readonly ChatMessage[]): string => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as ChatMessage;
    if (message.role === 'user') return message.content;
  }
  const last = messages[messages.length - 1];
  return last === undefined ? '' : textOfMessage(last);
};

const hasParams = (params: GenerationParams | undefined): params is GenerationParams =>
  params !== undefined && Object.keys(params).length > 0;

/** How an input is kept: its kind (`RequestQueued.input`) and its text. */
export const storedInputOf = (input: ModelInput): { readonly kind: 'chat' | undefined; readonly text: string } => {
  if (input.messages === undefined && !hasParams(input.params)) return { kind: undefined, text: input.prompt };
  const messages = input.messages ?? [{ role: 'user', content: input.prompt }];
  return {
    kind: 'chat',
    text: JSON.stringify(hasParams(input.params) ? { messages, params: input.params } : { messages }),
  };
};

/** What a model is called with, read back from the stored text (a line's is read from its file: lineInput.ts). */
export const modelInputOf = (text: string, kind: 'messages' | 'chat' | undefined): ModelInput => {
  if (kind === undefined) return { prompt: text };
  if (kind === 'messages') {
    const messages = JSON.parse(text) as ChatMessage[];
    return { prompt: lastUserText(messages), messages };
  }
  const { messages, params } = JSON.parse(text) as { messages: ChatMessage[]; params?: GenerationParams };
  return { prompt: lastUserText(messages), messages, params };
};

/**
 * What a model is called with for an input that was never stored (a batch's line, read from its file): the same as
 * `modelInputOf(storedInputOf(input))` gives, without writing and parsing the text.
 */
export const modelInputFrom = (input: ModelInput): ModelInput => {
  if (input.messages === undefined && !hasParams(input.params)) return { prompt: input.prompt };
  const messages = input.messages ?? [{ role: 'user', content: input.prompt }];
  return hasParams(input.params)
    ? { prompt: lastUserText(messages), messages, params: input.params }
    : { prompt: lastUserText(messages), messages };
};

/** An answer as the request keeps it: its text, or the assistant message when it calls tools. */
export const storedAnswerOf = (
  generation: Generation,
): { readonly output: 'message' | undefined; readonly text: string } => {
  const calls = generation.toolCalls ?? [];
  if (calls.length === 0) return { output: undefined, text: generation.text };
  return { output: 'message', text: JSON.stringify({ content: generation.text, tool_calls: calls }) };
};

/** A completed request's answer, read back from the stored text. */
export type Answer = { readonly text: string; readonly toolCalls: readonly ToolCall[] };

export const answerOf = (text: string, output: 'message' | undefined): Answer => {
  if (output !== 'message') return { text, toolCalls: [] };
  const message = JSON.parse(text) as { content: string | null; tool_calls?: ToolCall[] };
  return { text: message.content ?? '', toolCalls: message.tool_calls ?? [] };
};
