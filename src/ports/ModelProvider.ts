/** One message of a conversation, as a model takes it. Content is plain text (parts are joined before this). */
export type ChatMessage = {
  readonly role: 'system' | 'developer' | 'user' | 'assistant';
  readonly content: string;
};

/**
 * One call to a model: the prompt in, the generated text out. `messages` is present when the request was submitted
 * as a conversation (`POST /v1/responses` with a list); `prompt` is then the last user message's text. `signal`
 * aborts it (timeout, shutdown, cancellation).
 */
export type GenerateInput = {
  readonly prompt: string;
  readonly messages?: readonly ChatMessage[] | undefined;
  readonly signal: AbortSignal;
};

/** A model backend. Adding a provider means one file in adapters/models and one entry in its table. */
export interface ModelProvider {
  generate(input: GenerateInput): Promise<string>;
}
