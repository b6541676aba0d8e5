import type { Logger } from 'pino';
import { causeOf } from '../../app/upstreamProblems.js';
import { type ModelConfig, upstreamsOf } from '../../config.js';
import type { UpstreamProblem } from '../../ports/ModelProvider.js';
import { connectionFailure } from './connectionFailure.js';
import { upstreamName } from './upstreamName.js';

/** How long a check waits for an upstream's answer, and how much of its body it reads at most. */
export const checkTimeoutMs = 5_000;
const maxBodyBytes = 64 * 1024;

/** One model's upstream as a check found it: its name for the log (no credential) and its problem, if any. */
export type UpstreamCheck = {
  readonly model: string;
  readonly url: string;
  readonly problem?: UpstreamProblem | undefined;
};

/** Reads at most `maxBodyBytes` of an answer's body (an upstream is not trusted to end it), then lets it go. */
const drain = async (response: Response) => {
  const reader = response.body?.getReader();
  if (reader === undefined) return;
  let read = 0;
  try {
    while (read < maxBodyBytes) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
};

/**
 * Asks an OpenAI-compatible upstream for its models (`GET {baseUrl}/models`, with the key as the model's calls send
 * it): the cheapest call that every such server answers, and that shows a wrong port, a base URL without `/v1` and a
 * refused key alike. Bounded in time (`timeoutMs`, the connection included) and in bytes read; never redirected.
 */
export const checkUpstream = async (
  baseUrl: string,
  apiKey: string | undefined,
  timeoutMs = checkTimeoutMs,
): Promise<UpstreamProblem | undefined> => {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(`${baseUrl.replace(/\/+$/, '')}/models`, {
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
      redirect: 'manual',
      signal,
    });
    await drain(response);
    return response.ok ? undefined : { kind: 'status', status: response.status };
  } catch (error) {
    if (signal.aborted) return { kind: 'timeout', afterMs: timeoutMs };
    return { kind: 'unreachable', ...connectionFailure(error) };
  }
};

/** Checks the upstream of each `openai` model at once (echo has none); in the models' order. */
export const checkModels = (
  models: readonly ModelConfig[],
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = checkTimeoutMs,
): Promise<UpstreamCheck[]> =>
  Promise.all(
    models.flatMap((model) =>
      model.provider === 'openai'
        ? upstreamsOf(model).map((upstream) =>
            checkUpstream(
              upstream.baseUrl,
              upstream.apiKeyEnv === undefined ? undefined : env[upstream.apiKeyEnv],
              timeoutMs,
            ).then((problem) => ({ model: model.id, url: upstreamName(upstream.baseUrl), problem })),
          )
        : [],
    ),
  );

/** The log's line for a check's problem: the model, its upstream's URL and the cause, in one line. */
export const problemLine = (check: UpstreamCheck & { readonly problem: UpstreamProblem }): string =>
  `model ${check.model}: its upstream ${check.url} ${causeOf(check.problem)}`;

/**
 * The check `airs serve` makes once at start: each problem is one warn line (the server serves anyway), and every
 * result is handed to `seen` (the `/readyz` state). Never rejects: a check is advice.
 */
export const checkAtStart = async (
  models: readonly ModelConfig[],
  log: Pick<Logger, 'warn'>,
  seen: (check: UpstreamCheck) => void,
): Promise<readonly UpstreamCheck[]> => {
  const checks = await checkModels(models).catch(() => []);
  for (const check of checks) {
    seen(check);
    if (check.problem !== undefined)
      log.warn(
        { model: check.model, upstream: check.url, cause: causeOf(check.problem) },
        problemLine({ ...check, problem: check.problem }),
      );
  }
  return checks;
};
