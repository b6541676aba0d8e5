import type { H3Event } from 'h3';
import type { Principal } from '../../../../app/Auth.js';
import type { BatchesShape } from '../../../../app/batches/Batches.js';
import { type FilesShape, purposeProblem, type UploadDetails, type UploadForm } from '../../../../app/batches/Files.js';
import type { BudgetName } from '../../../../app/RateLimiter.js';
import { type ApiError, InvalidRequest, NotFound } from '../../../../domain/errors.js';
import { isApiError } from '../../errorResponse.js';
import { fileDownload } from '../../fileDownload.js';
import { maxFormOverheadBytes, readMultipartUpload } from '../../multipartUpload.js';
import type { HeaderBag, Route } from '../../route.js';
import { metadataOf } from '../metadata.js';
import { batchCreateBodySchema, expiresAfterBounds, paramOf } from './bodies.js';
import { batchObjectOf, fileObjectOf, listOf } from './wire.js';

export type BatchRouteDeps = {
  readonly files: FilesShape;
  readonly batches: BatchesShape;
  admit(event: H3Event, budget: BudgetName, headers: HeaderBag): Promise<Principal | ApiError>;
  readJsonBody(event: H3Event): Promise<unknown | ApiError>;
  json(status: number, body: unknown, headers: HeaderBag): Response;
  pathId(event: H3Event): string;
};

const invalid = (param: string | null, message: string) =>
  new InvalidRequest({ message, details: param === null ? undefined : { param } });

/** The bounds and defaults of the lists' `limit` (OpenAI's); the OpenAPI document shows them. */
export const listLimits = {
  files: { max: 10_000, fallback: 10_000 },
  batches: { max: 100, fallback: 20 },
} as const;

/** A list's `limit`: a whole number within OpenAI's bounds, or its default. */
const limitOf = (event: H3Event, max: number, fallback: number): number | InvalidRequest => {
  const raw = event.url.searchParams.get('limit');
  if (raw === null || raw === '') return fallback;
  const limit = Number(raw);
  if (!/^\d+$/.test(raw) || limit < 1 || limit > max)
    return invalid('limit', `limit must be a whole number from 1 to ${max}`);
  return limit;
};

/** `expires_after[seconds]` of an upload: from an hour to 30 days, anchored at creation (OpenAI's bounds). */
const uploadExpiry = (fields: ReadonlyMap<string, string>): number | undefined | InvalidRequest => {
  const anchor = fields.get('expires_after[anchor]');
  const seconds = fields.get('expires_after[seconds]');
  if (anchor === undefined && seconds === undefined) return undefined;
  if (anchor !== 'created_at') return invalid('expires_after.anchor', 'expires_after[anchor] must be "created_at"');
  const value = Number(seconds);
  if (
    seconds === undefined ||
    !/^\d+$/.test(seconds) ||
    value < expiresAfterBounds.minSeconds ||
    value > expiresAfterBounds.maxSeconds
  )
    return invalid('expires_after.seconds', 'expires_after[seconds] must be a whole number from 3600 to 2592000');
  return value;
};

/**
 * OpenAI's Files and Batches routes (contract 16). Uploads stream: room for the upload is held first (its declared
 * size, app/batches/upload.ts), then the form's fields before the file are read, then the file's bytes go to the store
 * as they arrive (never whole in memory), and the `200` comes once they are durable.
 * Creating a batch spends a submit; reading and listing spend polls, as for requests.
 */
export const batchRoutes = (deps: BatchRouteDeps) => {
  const { files, batches } = deps;

  /** Reads an upload's form once its room is held: the fields before the file, then the file's bytes as they come. */
  const openForm = async (request: Request): Promise<UploadForm | InvalidRequest> => {
    const form = await readMultipartUpload(request);
    if (form._tag === 'UploadRefused') return invalid(form.param, form.message);
    // A purpose sent before the file is checked before its bytes are read; one sent after (as the official SDKs
    // send it) once they are stored, which are then removed if it is refused.
    const early = form.fields.get('purpose');
    const refusedEarly = early === undefined ? undefined : purposeProblem(early);
    if (refusedEarly !== undefined) {
      form.discard();
      return refusedEarly;
    }
    const details = async (): Promise<UploadDetails | InvalidRequest> => {
      const fields = early === undefined ? await form.rest : form.fields;
      if ('_tag' in fields) return invalid(fields.param, fields.message);
      const purpose = fields.get('purpose');
      if (purpose === undefined) return invalid('purpose', 'purpose is required: batch');
      const expiresAfterSeconds = uploadExpiry(fields);
      if (expiresAfterSeconds instanceof InvalidRequest) return expiresAfterSeconds;
      return { purpose, expiresAfterSeconds };
    };
    return { filename: form.file.filename, chunks: form.file.chunks, details, discard: form.discard };
  };

  const uploadFile: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'submits', headers);
    if (isApiError(principal)) return principal;
    // What the body declares of its size is what the upload holds room for, before a byte of it is read.
    const length = event.req.headers.get('content-length');
    const uploaded = await files.upload(principal, {
      declaredBytes: length !== null && /^\d{1,15}$/.test(length) ? Number(length) : undefined,
      overheadBytes: maxFormOverheadBytes(),
      open: () => openForm(event.req),
    });
    return isApiError(uploaded) ? uploaded : deps.json(200, fileObjectOf(uploaded), headers);
  };

  const listFiles: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const limit = limitOf(event, listLimits.files.max, listLimits.files.fallback);
    if (isApiError(limit)) return limit;
    const order = event.url.searchParams.get('order') ?? 'desc';
    if (order !== 'asc' && order !== 'desc') return invalid('order', 'order must be asc or desc');
    const page = await files.list(principal, {
      purpose: event.url.searchParams.get('purpose') ?? undefined,
      after: event.url.searchParams.get('after') ?? undefined,
      limit,
      order,
    });
    return deps.json(200, listOf(page.files.map(fileObjectOf), page.hasMore), headers);
  };

  const retrieveFile: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const file = await files.find(principal, deps.pathId(event));
    return isApiError(file) ? file : deps.json(200, fileObjectOf(file), headers);
  };

  const deleteFile: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'submits', headers);
    if (isApiError(principal)) return principal;
    const file = await files.remove(principal, deps.pathId(event));
    return isApiError(file) ? file : deps.json(200, { id: file.fileId, object: 'file', deleted: true }, headers);
  };

  const fileContent: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const found = await files.content(principal, deps.pathId(event));
    if (isApiError(found)) return found;
    // Bytes gone a moment ago (the file just deleted): unknown, as the file now is.
    return (
      (await fileDownload(found.file, found.bytes, headers)) ??
      new NotFound({ message: `no file ${found.file.fileId}` })
    );
  };

  const createBatch: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'submits', headers);
    if (isApiError(principal)) return principal;
    // The disk below its free-space floor: the same 503 as a submit's, before the body is read.
    const unavailable = batches.unavailable();
    if (unavailable !== undefined) return unavailable;
    const body = await deps.readJsonBody(event);
    if (isApiError(body)) return body;
    const parsed = batchCreateBodySchema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return invalid(paramOf(issue?.path ?? []) ?? null, issue?.message ?? 'invalid body');
    }
    // The schema checked its bounds; kept as given (the schema's copy leaves out a `__proto__` key).
    const metadata = metadataOf((body as { metadata?: unknown }).metadata);
    if (isApiError(metadata)) return metadata;
    const made = await batches.create(principal, {
      inputFileId: parsed.data.input_file_id,
      endpoint: parsed.data.endpoint,
      completionWindow: parsed.data.completion_window,
      metadata,
      outputExpiresAfterSeconds: parsed.data.output_expires_after?.seconds,
    });
    return isApiError(made) ? made : deps.json(200, batchObjectOf(made), headers);
  };

  const listBatches: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const limit = limitOf(event, listLimits.batches.max, listLimits.batches.fallback);
    if (isApiError(limit)) return limit;
    const page = await batches.list(principal, { after: event.url.searchParams.get('after') ?? undefined, limit });
    return deps.json(200, listOf(page.batches.map(batchObjectOf), page.hasMore), headers);
  };

  const retrieveBatch: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const view = await batches.find(principal, deps.pathId(event));
    return isApiError(view) ? view : deps.json(200, batchObjectOf(view), headers);
  };

  const cancelBatch: Route = async (event, headers) => {
    const principal = await deps.admit(event, 'polls', headers);
    if (isApiError(principal)) return principal;
    const view = await batches.cancel(principal, deps.pathId(event));
    return isApiError(view) ? view : deps.json(200, batchObjectOf(view), headers);
  };

  return {
    uploadFile,
    listFiles,
    retrieveFile,
    deleteFile,
    fileContent,
    createBatch,
    listBatches,
    retrieveBatch,
    cancelBatch,
  };
};
