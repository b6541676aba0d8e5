import { answer, jsonHeaders } from './errorResponse.js';
import type { HeaderBag } from './route.js';

/** A JSON answer with the headers gathered for it. */
export const json = (status: number, body: unknown, headers: HeaderBag) => {
  headers['Content-Type'] = jsonHeaders['Content-Type'];
  return answer(status, JSON.stringify(body), headers);
};
