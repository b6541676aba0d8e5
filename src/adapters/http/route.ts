import type { H3Event } from 'h3';
import type { ApiError } from '../../domain/errors.js';

/** Response headers gathered while a call is answered: a plain object, cheaper than a `Headers` per call. */
export type HeaderBag = Record<string, string>;

/** A route of the API: an answer, or a domain error for its face to answer (guard.ts). */
export type Route = (event: H3Event, headers: HeaderBag) => Promise<Response | ApiError>;
