import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import busboy from 'busboy';
import { controlCharacters } from '../../domain/identifiers.js';
import { ClientGone } from './requestBody.js';

/**
 * A file upload (`multipart/form-data`, as OpenAI's Files API takes it) read as it streams in: a few small text
 * fields are collected, and the one part named `file` is handed to the caller as a stream of chunks, so that its
 * bytes go to storage without the whole file ever being in memory. busboy parses the form; it passes the file's
 * chunks on only as fast as the caller takes them, and reading from the socket waits for it (backpressure).
 *
 * Fields sent before the file (OpenAI's SDK sends `purpose` first) are in `fields` as soon as the file part begins.
 * Fields sent after it are read only after the file has been read to its end: they are in `rest`, with any problem
 * found after the file (a second file part, too many fields, a form that does not end properly).
 */

export type UploadLimits = {
  /** Text fields, before and after the file together. */
  readonly maxFields: number;
  /** Bytes of one field's value. */
  readonly maxFieldBytes: number;
  /** Characters of one field's name. */
  readonly maxFieldNameChars: number;
  /** Characters of the file's name. */
  readonly maxFilenameChars: number;
};

export const defaultUploadLimits: UploadLimits = {
  maxFields: 20,
  maxFieldBytes: 1024,
  maxFieldNameChars: 100,
  maxFilenameChars: 255,
};

/** The most bytes of one part's headers busboy reads (its own bound). */
const maxPartHeaderBytes = 16 * 1024;

/**
 * The most bytes a form within `limits` holds besides its file's: each part (the fields and the file) its boundary
 * line (at most 70 characters and a few), its headers and, for a field, its value. A body that declares more than a
 * file's bound and this is larger than any upload that could be taken.
 */
export const maxFormOverheadBytes = (limits: UploadLimits = defaultUploadLimits): number =>
  (limits.maxFields + 1) * (maxPartHeaderBytes + limits.maxFieldBytes + 2 * 80) + 80;

/** Why a form was refused: the caller answers 400, naming `param` (null: no one parameter is at fault). */
export type UploadRefused = {
  readonly _tag: 'UploadRefused';
  readonly param: string | null;
  readonly message: string;
};

/** The form broke off in the middle of the file (malformed, or ended early): what the file's chunks throw then. */
export class MalformedUpload extends Error {
  override name = 'MalformedUpload';
  constructor(readonly refusal: UploadRefused) {
    super(refusal.message);
  }
}

export type UploadedFile = {
  /** As the client named it (its last path segment), at most `maxFilenameChars`, no control characters. */
  readonly filename: string;
  /** The part's Content-Type as sent (busboy's default when none: text/plain). */
  readonly mimeType: string;
  /**
   * The file's bytes as they arrive, to be read once. Throws `ClientGone` if the client goes away, `MalformedUpload`
   * if the form breaks off. Stopping early (a `break`, a throw in the loop) discards the rest of the upload.
   */
  readonly chunks: AsyncIterable<Uint8Array>;
};

export type MultipartUpload = {
  readonly _tag: 'MultipartUpload';
  /** The text fields sent before the file part. */
  readonly fields: ReadonlyMap<string, string>;
  readonly file: UploadedFile;
  /**
   * Every field, those after the file included, once the whole form has been read (so only after the file has been
   * read to its end), or the refusal found after the file. Never rejects.
   */
  readonly rest: Promise<ReadonlyMap<string, string> | UploadRefused>;
  /** Stops reading the form (the file was not wanted after all); the rest of the body is left unread. */
  discard(): void;
};

const refused = (param: string | null, message: string): UploadRefused => ({ _tag: 'UploadRefused', param, message });

const filenameProblem = (filename: string | undefined, limits: UploadLimits): string | undefined => {
  if (filename === undefined || filename === '') return 'the file part has no filename';
  if ([...filename].length > limits.maxFilenameChars)
    return `the filename is longer than ${limits.maxFilenameChars} characters`;
  // Never part of a name shown back or written in a header.
  if (controlCharacters.test(filename)) return 'the filename holds control characters';
  return undefined;
};

/**
 * The body as a Node stream: the socket's own request where srvx runs on Node (no web stream in between, as
 * requestBody.ts reads it), else the web Request's body.
 */
const bodyOf = (request: Request): { readonly source: Readable; readonly ours: boolean } | undefined => {
  const node = (request as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
  if (node !== undefined) return { source: node, ours: false };
  if (request.body === null) return undefined;
  return { source: Readable.fromWeb(request.body as WebReadableStream<Uint8Array>), ours: true };
};

/** Starts reading an upload's form; resolves once its file part begins, or with why the form is refused. */
export const readMultipartUpload = (
  request: Request,
  limits: UploadLimits = defaultUploadLimits,
): Promise<MultipartUpload | UploadRefused> => {
  const contentType = request.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data\s*(;|$)/i.test(contentType))
    return Promise.resolve(refused('file', 'the body must be multipart/form-data with a file part named "file"'));
  const body = bodyOf(request);
  if (body === undefined) return Promise.resolve(refused('file', 'the form has no file part named "file"'));
  const { source, ours } = body;
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      // Filenames as clients send them (browsers, undici's FormData: UTF-8), not busboy's default latin1.
      defParamCharset: 'utf8',
      limits: {
        fields: limits.maxFields,
        // One byte over the bound: busboy marks a value truncated when it reaches its limit, even exactly.
        fieldSize: limits.maxFieldBytes + 1,
        files: 1,
        headerPairs: 16,
      },
    });
  } catch (error) {
    return Promise.resolve(refused('file', `the multipart/form-data body cannot be read: ${(error as Error).message}`));
  }

  const fields = new Map<string, string>();
  let problem: UploadRefused | ClientGone | undefined;
  let file: Readable | undefined;
  let started: (outcome: MultipartUpload | UploadRefused) => void = () => {};
  const begun = new Promise<MultipartUpload | UploadRefused>((resolve) => (started = resolve));
  let ended: (outcome: ReadonlyMap<string, string> | UploadRefused) => void = () => {};
  const rest = new Promise<ReadonlyMap<string, string> | UploadRefused>((resolve) => (ended = resolve));
  let sourceEnded = false;

  const stop = () => {
    source.unpipe(parser);
    parser.destroy();
    // A web body read here is ours to cancel; Node's request is the server's: it discards what is left of it after
    // the answer.
    if (ours) source.destroy();
  };
  /** The first problem wins; the file's reader (if any) hears it, and reading stops. */
  const fail = (failure: UploadRefused | ClientGone) => {
    if (problem !== undefined) return;
    problem = failure;
    const refusal = failure instanceof ClientGone ? refused(null, failure.message) : failure;
    if (file === undefined) started(refusal);
    else file.destroy(failure instanceof ClientGone ? failure : new MalformedUpload(failure));
    ended(refusal);
    stop();
  };

  /** What the file's reader is told when its stream failed for a reason busboy gave (the form ended inside it). */
  const failureOf = (error: unknown): Error => {
    if (error instanceof ClientGone || error instanceof MalformedUpload) return error;
    if (problem instanceof ClientGone) return problem;
    return new MalformedUpload(
      problem ?? refused('file', `the form broke off inside the file: ${(error as Error).message ?? String(error)}`),
    );
  };

  async function* chunksOf(stream: Readable): AsyncGenerator<Uint8Array> {
    let whole = false;
    try {
      for await (const chunk of stream) yield chunk as Buffer;
      whole = true;
    } catch (error) {
      throw failureOf(error);
    } finally {
      // Left early: nothing more of the form is wanted.
      if (!whole && problem === undefined) fail(refused(null, 'the upload was discarded'));
    }
  }

  // busboy goes on through the chunk it is parsing after it is stopped: what it finds then is not looked at.
  parser.on('field', (name, value, info) => {
    if (problem !== undefined) return;
    if ([...name].length > limits.maxFieldNameChars)
      return fail(refused(null, `a field name is longer than ${limits.maxFieldNameChars} characters`));
    if (info.valueTruncated) return fail(refused(name, `${name} is longer than ${limits.maxFieldBytes} bytes`));
    if (name === 'file') return fail(refused('file', 'file must be a file part, with a filename'));
    if (fields.has(name)) return fail(refused(name, `${name} is given twice`));
    fields.set(name, value);
  });
  parser.on('file', (name, stream, info) => {
    // Its failures reach its reader through the iteration; one nobody reads (refused, or not read yet) must not end
    // the process as an unheard 'error'.
    stream.on('error', () => {});
    if (problem !== undefined) return void stream.resume();
    if (name !== 'file') {
      stream.resume();
      return fail(refused('file', `the file must be the part named "file", not ${JSON.stringify(name.slice(0, 100))}`));
    }
    const why = filenameProblem(info.filename, limits);
    if (why !== undefined) {
      stream.resume();
      return fail(refused('file', why));
    }
    file = stream;
    started({
      _tag: 'MultipartUpload',
      fields: new Map(fields),
      file: { filename: info.filename as string, mimeType: info.mimeType, chunks: chunksOf(stream) },
      rest,
      discard: () => fail(refused(null, 'the upload was discarded')),
    });
  });
  parser.on('filesLimit', () => fail(refused('file', 'the form has more than one file part')));
  parser.on('fieldsLimit', () => fail(refused(null, `the form has more than ${limits.maxFields} fields`)));
  parser.on('error', (error) => fail(refused('file', `the form is malformed: ${(error as Error).message}`)));
  // After the whole form was read (and its file read to the end), or after it was stopped.
  parser.on('close', () => {
    if (problem !== undefined) return;
    if (file === undefined) return fail(refused('file', 'the form has no file part named "file"'));
    ended(new Map(fields));
  });

  source.once('end', () => {
    sourceEnded = true;
  });
  const gone = () => {
    if (!sourceEnded) fail(new ClientGone('the connection closed before the whole form arrived'));
  };
  source.once('error', gone);
  source.once('close', gone);
  source.pipe(parser);
  return begun;
};
