import type { Logger } from 'pino';
import { causeOf } from '../../app/upstreamProblems.js';
import { type ModelConfig, upstreamsOf } from '../../config.js';
import type { UpstreamProblem } from '../../ports/ModelProvider.js';
import { connectionFailure } from './connectionFailure.js';
import { upstreamName } from './upstreamName.js';
import { cleanWords } from './upstreamWords.js';

/** How long a check waits for an upstream's answer, and how much of its body it reads at most. */
export const checkTimeoutMs = 5_000;
/** Enough for the lists of hosted APIs (OpenAI's is about 10 KiB); a longer one leaves the model unconfirmed. */
const maxBodyBytes = 1024 * 1024;
/** The most models of a list looked through, and the most named when the model is not among them. */
const maxIds = 10_000;
const namedIds = 5;
const maxIdChars = 100;

/**
 * One model's upstream as a check found it: its name for the log (no credential), its problem if any, and, when it
 * answers but its `/models` cannot tell whether it serves the model (no list, too long a list), why not
 * (`unconfirmed`).
 */
export type UpstreamCheck = {
  readonly model: string;
  readonly url: string;
  readonly problem?: UpstreamProblem | undefined;
  readonly unconfirmed?: string | undefined;
};

/** What the check of one upstream found: nothing wrong, a problem, or that it could not confirm the model. */
export type UpstreamFinding = Pick<UpstreamCheck, 'problem' | 'unconfirmed'>;

/** Reads at most `maxBodyBytes` of an answer's body (an upstream is not trusted to end it), then lets it go. */
const readBounded = async (response: Response): Promise<{ text: string; whole: boolean }> => {
  const reader = response.body?.getReader();
  if (reader === undefined) return { text: '', whole: true };
  const chunks: Uint8Array[] = [];
  let read = 0;
  try {
    while (read <= maxBodyBytes) {
      const { done, value } = await reader.read();
      if (done) return { text: Buffer.concat(chunks).toString('utf8'), whole: true };
      chunks.push(value);
      read += value.byteLength;
    }
    return { text: '', whole: false };
  } finally {
    await reader.cancel().catch(() => {});
  }
};

/**
 * Whether a `/models` list serves `upstreamModel`: its ids (`data[].id`, as OpenAI, vLLM, llama.cpp, Ollama and
 * LiteLLM write them) are looked through, at most `maxIds`. Ollama lists `llama3:latest` for the `llama3` it
 * serves: a name without a tag matches its `:latest`.
 */
export const servesModel = (text: string, upstreamModel: string): UpstreamFinding => {
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    return { unconfirmed: 'its /models answer is not JSON' };
  }
  const data = (list as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return { unconfirmed: 'its /models answer is not a list of models' };
  const ids = data
    .slice(0, maxIds)
    .map((entry) => (entry as { id?: unknown } | null)?.id)
    .filter((id): id is string => typeof id === 'string');
  const wanted = new Set([upstreamModel, upstreamModel.includes(':') ? upstreamModel : `${upstreamModel}:latest`]);
  if (ids.some((id) => wanted.has(id))) return {};
  if (data.length > maxIds) return { unconfirmed: `its /models lists more than ${maxIds} models` };
  const served = ids.slice(0, namedIds).map((id) => cleanWords(id).slice(0, maxIdChars));
  return { problem: { kind: 'modelNotServed', upstreamModel, served, more: ids.length > namedIds } };
};

/**
 * Asks an OpenAI-compatible upstream for its models (`GET {baseUrl}/models`, with the key as the model's calls send
 * it): the cheapest call that every such server answers, and that shows a wrong port, a base URL without `/v1`, a
 * refused key, and an `upstreamModel` the upstream does not serve alike. Bounded in time (`timeoutMs`, the
 * connection and the body included) and in bytes read; never redirected. One upstream: a model with several calls it
 * once for each.
 */
export const checkUpstream = async (
  baseUrl: string,
  apiKey: string | undefined,
  upstreamModel: string,
  timeoutMs = checkTimeoutMs,
): Promise<UpstreamFinding> => {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(`${baseUrl.replace(/\/+$/, '')}/models`, {
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
      redirect: 'manual',
      signal,
    });
    const body = await readBounded(response);
    if (!response.ok) return { problem: { kind: 'status', status: response.status } };
    if (!body.whole) return { unconfirmed: `its /models answer is larger than ${maxBodyBytes / 1024 / 1024} MiB` };
    return servesModel(body.text, upstreamModel);
  } catch (error) {
    if (signal.aborted) return { problem: { kind: 'timeout', afterMs: timeoutMs } };
    return { problem: { kind: 'unreachable', ...connectionFailure(error) } };
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
              upstream.upstreamModel,
              timeoutMs,
            ).then((found) => ({ model: model.id, url: upstreamName(upstream.baseUrl), ...found })),
          )
        : [],
    ),
  );

/** The log's line for a check that could not confirm the model: the model, its upstream's URL and why. */
export const unconfirmedLine = (check: UpstreamCheck & { readonly unconfirmed: string }): string =>
  `model ${check.model}: its upstream ${check.url} answers, but the check could not confirm that it serves the model (${check.unconfirmed})`;

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
    else if (check.unconfirmed !== undefined)
      log.warn(
        { model: check.model, upstream: check.url, cause: check.unconfirmed },
        unconfirmedLine({ ...check, unconfirmed: check.unconfirmed }),
      );
  }
  return checks;
};
