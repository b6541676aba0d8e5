import type { UpstreamProblem } from '../ports/ModelProvider.js';

/**
 * What an upstream's problem means, in one place: whether a retry could mend it, what a request's caller is told,
 * and what an operator is told. An upstream that refuses the request itself (400, 401, 403, 404, 422) refuses it
 * again however often it is sent: a wrong `baseUrl`, key or model, or a request it cannot take. Connection errors,
 * 408, 429 and 5xx are passing (a restart, an overload) and are retried.
 */
const permanentStatuses: ReadonlySet<number> = new Set([400, 401, 403, 404, 422]);

export const isPermanent = (problem: UpstreamProblem): boolean =>
  problem.kind === 'status' && permanentStatuses.has(problem.status);

/**
 * What the caller of a request that failed for good by this problem is told, in words an end user may see (never the
 * URL), where they say more than "it failed": the upstream refused the request (no retry or new request mends that),
 * could not be reached, or answered more than the model's bound (a new request may ask for a shorter answer). A timeout, an overload or a server error is told in the general words, which advise to
 * submit the request again: a new request may well be answered.
 */
export const saidOf = (problem: UpstreamProblem): string | undefined => {
  if (problem.kind === 'unreachable') return "the model's upstream could not be reached";
  if (problem.kind === 'answerTooLarge')
    return `the model's answer was larger than its maxAnswerBytes (${problem.maxAnswerBytes} bytes)`;
  if (problem.kind === 'status' && isPermanent(problem))
    return `the model's upstream refused the request (${problem.status})`;
  return undefined;
};

/**
 * What an operator is told (the log, `airs models check`, `/readyz`): the cause and what to look at; never the URL,
 * and without the system's words (`withDetail` false), which name the address, where anybody may read it (`/readyz`).
 */
export const causeOf = (problem: UpstreamProblem, withDetail = true): string => {
  if (problem.kind === 'unreachable') {
    const cause = problem.refused ? 'refused the connection' : 'could not be reached';
    return withDetail ? `${cause} (${problem.detail})` : cause;
  }
  if (problem.kind === 'timeout') return `did not answer within ${problem.afterMs / 1000} s`;
  if (problem.kind === 'answerTooLarge') return `answered more than maxAnswerBytes (${problem.maxAnswerBytes} bytes)`;
  if (problem.kind === 'modelNotServed') {
    if (!withDetail) return "does not serve the model's upstreamModel";
    const served = problem.served.length === 0 ? 'no model' : problem.served.map((id) => `"${id}"`).join(', ');
    return `does not serve "${problem.upstreamModel}" (the model's upstreamModel): it serves ${served}${problem.more ? ' and more' : ''}`;
  }
  // The upstream's own words say what no status can (which model it lacks, what it could not take), but only to
  // an operator: `/readyz` (no detail) is read by anybody.
  const said = withDetail && problem.said !== undefined ? ` (the upstream said: ${problem.said})` : '';
  if (problem.status === 404) return `answered 404: is \`/v1\` missing from its baseUrl?${said}`;
  if (problem.status === 401 || problem.status === 403)
    return `answered ${problem.status}: the key was refused (is the variable apiKeyEnv names set, and right?)${said}`;
  return `answered ${problem.status}${said}`;
};

/**
 * The message of request `name` that failed for good: what its failure told (`said`), else the general words
 * `otherwise` (a request that failed before failures told anything, or whose worker stopped answering).
 */
export const failedMessage = (name: string, said: string | undefined, otherwise: string): string =>
  said === undefined
    ? `processing of request ${name} failed${otherwise}`
    : `processing of request ${name} failed: ${said}`;
