/** One call to a model: the prompt in, the generated text out. `signal` aborts it (timeout or shutdown). */
export type GenerateInput = { readonly prompt: string; readonly signal: AbortSignal };

/** A model backend. Adding a provider means one file in adapters/models and one entry in its table. */
export interface ModelProvider {
  generate(input: GenerateInput): Promise<string>;
}
