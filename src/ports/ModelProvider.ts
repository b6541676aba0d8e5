/**
 * What a model is given and what it gives back, in the shape of OpenAI's chat completions: the wire format every
 * upstream airs talks to (vLLM, llama.cpp, Ollama, hosted APIs) speaks, so it is also how a conversation and its
 * parameters are kept with the request (storedInput.ts).
 */

/** A call of a function tool the model asks for; `arguments` is JSON text, as the model wrote it. */
export type ToolCall = {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
};

/** One message of a conversation. Content is plain text (parts are joined before this). */
export type ChatMessage =
  | { readonly role: 'system' | 'developer' | 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string | null; readonly tool_calls?: readonly ToolCall[] }
  | { readonly role: 'tool'; readonly tool_call_id: string; readonly content: string };

/** A function the model may call. */
export type FunctionTool = {
  readonly type: 'function';
  readonly function: {
    readonly name: string;
    readonly description?: string;
    readonly parameters?: Readonly<Record<string, unknown>>;
    readonly strict?: boolean;
  };
};

export type ResponseFormat =
  | { readonly type: 'text' }
  | { readonly type: 'json_object' }
  | {
      readonly type: 'json_schema';
      readonly json_schema: {
        readonly name: string;
        readonly description?: string;
        readonly schema?: Readonly<Record<string, unknown>>;
        readonly strict?: boolean;
      };
    };

export type ToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { readonly type: 'function'; readonly function: { readonly name: string } };

/** Generation parameters, with chat completions' names; each is forwarded to an upstream as it is. */
export type GenerationParams = {
  readonly temperature?: number;
  readonly top_p?: number;
  readonly max_tokens?: number;
  readonly max_completion_tokens?: number;
  readonly stop?: string | readonly string[];
  readonly seed?: number;
  readonly presence_penalty?: number;
  readonly frequency_penalty?: number;
  readonly response_format?: ResponseFormat;
  readonly tools?: readonly FunctionTool[];
  readonly tool_choice?: ToolChoice;
  readonly parallel_tool_calls?: boolean;
  readonly user?: string;
};

/**
 * One call to a model. `prompt` is the text of a plain prompt, or of the conversation's last user message (what
 * `echo` answers); `messages` is present when the request is a conversation; `params` when it has parameters.
 * `signal` aborts it (timeout, shutdown, cancellation). `onDelta`, when given, hears each piece of text as the model
 * writes it; the pieces, joined, are exactly the answer's `text`.
 */
export type GenerateInput = {
  readonly prompt: string;
  readonly messages?: readonly ChatMessage[] | undefined;
  readonly params?: GenerationParams | undefined;
  readonly signal: AbortSignal;
  readonly onDelta?: ((text: string) => void) | undefined;
  /** Which of the model's upstreams the call goes to (the one its attempt holds a place on); absent: the first. */
  readonly upstream?: string | undefined;
};

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** Tokens read and written, as the model counts them. */
export type Usage = { readonly inputTokens: number; readonly outputTokens: number };

/** A model's answer: its text, the tools it calls, why it stopped, and its usage when the model tells it. */
export type Generation = {
  readonly text: string;
  readonly toolCalls?: readonly ToolCall[] | undefined;
  readonly finishReason: FinishReason;
  readonly usage?: Usage | undefined;
};

/** A model backend. Adding a provider means one file in adapters/models and one entry in its table. */
export interface ModelProvider {
  generate(input: GenerateInput): Promise<Generation>;
  /**
   * Answers as soon as it is called, without waiting on anything (the built-in `echo` without a delay): no timeout or
   * cancel can come before the answer, so its calls need no timer and no abort of their own.
   */
  readonly answersAtOnce?: boolean;
}

/**
 * Why an upstream gave no answer, as airs tells the causes apart: no connection (refused, a host name not found),
 * no answer in time, an answer with an error status, or an answer larger than the model's `maxAnswerBytes`.
 */
export type UpstreamProblem =
  | { readonly kind: 'unreachable'; readonly refused: boolean; readonly detail: string }
  | { readonly kind: 'timeout'; readonly afterMs: number }
  | { readonly kind: 'status'; readonly status: number }
  | { readonly kind: 'answerTooLarge'; readonly maxAnswerBytes: number };

/** A model call that failed at its upstream: the message is for the log (it names the upstream), `problem` says why. */
export class UpstreamFailed extends Error {
  constructor(
    message: string,
    readonly problem: UpstreamProblem,
  ) {
    super(message);
    this.name = 'UpstreamFailed';
  }
}
