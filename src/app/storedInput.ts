import type { ChatMessage } from '../ports/ModelProvider.js';

/**
 * How a request's input is kept as the text beside the log (the claim check): a prompt as itself; a conversation
 * (`input: 'messages'` in its `RequestQueued`) as the JSON array of its messages, roles and text only, so that what
 * is stored stays as small as what was said.
 */
export const storedTextOf = (prompt: string, messages: readonly ChatMessage[] | undefined): string =>
  messages === undefined ? prompt : JSON.stringify(messages.map(({ role, content }) => ({ role, content })));

/** The text a conversation is answered for by `echo`, and shown as its prompt: its last user message's. */
export const lastUserText = (messages: readonly ChatMessage[]): string => {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === 'user') return messages[i]?.content ?? '';
  return messages[messages.length - 1]?.content ?? '';
};

/** What a model is called with, read back from the stored text. */
export const promptOf = (
  text: string,
  input: 'messages' | undefined,
): { readonly prompt: string; readonly messages?: readonly ChatMessage[] } => {
  if (input !== 'messages') return { prompt: text };
  const messages = JSON.parse(text) as ChatMessage[];
  return { prompt: lastUserText(messages), messages };
};
