import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';

/**
 * What a route learnt of a call that its access line (listen.ts) names beside the method, path and status: the
 * request it made or read, the account that called, and the model. Kept with Node's request object, which the access
 * line holds; nothing is kept (and a route's note costs a flag test) unless access lines are written.
 */
export type AccessNote = { reqId?: string; account?: string; model?: string };

const notes = new WeakMap<IncomingMessage, AccessNote>();
let noting = false;

/** Access lines are written in this process from now on: routes' notes are kept. */
export const keepAccessNotes = (): void => {
  noting = true;
};

const nodeRequestOf = (event: H3Event): IncomingMessage | undefined =>
  (event.req as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;

/** Adds what a route learnt to the call's note. */
export const noteAccess = (event: H3Event, note: AccessNote): void => {
  if (!noting) return;
  const req = nodeRequestOf(event);
  if (req === undefined) return;
  const kept = notes.get(req);
  if (kept === undefined) notes.set(req, { ...note });
  else Object.assign(kept, note);
};

/** Notes the request and model of a submit once it is committed (a refused one notes nothing). */
export const noteSubmitted = (
  event: H3Event,
  submitted: Promise<{ readonly reqId: string; readonly model: string } | object>,
): void => {
  if (!noting) return;
  submitted.then(
    (done) => {
      if ('reqId' in done && 'model' in done) noteAccess(event, { reqId: done.reqId, model: done.model });
    },
    () => {},
  );
};

/** What routes noted of a call, if anything. */
export const accessNoteOf = (req: IncomingMessage): AccessNote | undefined => notes.get(req);
