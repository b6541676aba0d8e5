import { answer, jsonHeaders } from './errorResponse.js';

/** Response headers gathered while a call is answered: a plain object, cheaper than a `Headers` per call. */
export type HeaderBag = Record<string, string>;

/** A JSON answer with the headers gathered for it. */
export const json = (status: number, body: unknown, headers: HeaderBag) => {
  headers['Content-Type'] = jsonHeaders['Content-Type'];
  return answer(status, JSON.stringify(body), headers);
};
