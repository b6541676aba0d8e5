import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import { BlobNotFound, type FileBytesShape } from '../../ports/FileBytes.js';
import { Store } from '../../ports/Store.js';
import { AppConfig } from '../AppConfig.js';
import { Models, passThroughOfModels } from '../Models.js';
import { type LineInputs, LineReader } from '../processing/lineReader.js';
import type { CallFailure } from '../processing/modelCall.js';
import { modelInputFrom } from '../storedInput.js';
import { BatchEndpoints } from './BatchEndpoints.js';
import { checkLine, type LineCheckRules, type LineChecks, lineChecksOf } from './lineRules.js';

/**
 * A batch's line is not copied into its request: the request keeps where the line lies in its batch's input file
 * (`input: 'line'` in its `RequestQueued`, this reference as its text), and each attempt reads the line from there when
 * it starts, checks it again as validation did, and calls the model with what it makes. So a line's prompt is held in
 * memory only while its attempt runs, and stored once (in the input file, which the store keeps while its batch is
 * open: fileSweep.ts), not twice (issue 40).
 */
export type LineReference = {
  /** The batch's input file. */
  readonly file: string;
  /** Where the line's first byte is in the file, and its length in bytes (without its newline): jsonLines.ts. */
  readonly offset: number;
  readonly bytes: number;
  /** Its number in the file (1-based), as its errors name it. */
  readonly line: number;
  /** The batch's endpoint: what the line's body is checked as. */
  readonly endpoint: string;
};

/** The text a line's request keeps: the reference as JSON (readable on the dashboard and in a backup). */
export const lineReferenceText = ({ file, offset, bytes, line, endpoint }: LineReference): string =>
  JSON.stringify({ file, offset, bytes, line, endpoint });

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** The reference a line's request keeps, or undefined when the text is not one (a damaged record). */
export const lineReferenceOf = (text: string): LineReference | undefined => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { file, offset, bytes, line, endpoint } = (parsed ?? {}) as Record<string, unknown>;
  if (typeof file !== 'string' || typeof endpoint !== 'string') return undefined;
  if (!isCount(offset) || !isCount(bytes) || !isCount(line)) return undefined;
  return { file, offset, bytes, line, endpoint };
};

const decoder = new TextDecoder('utf-8', { fatal: true });

const unrunnable = (reason: string, said: string): CallFailure => ({ reason, said, permanent: true });

/**
 * Reads a line for its attempt: the line's bytes (at most `maxLineBytes`, the bound validation held it to), checked by
 * the same code validation ran (lineChecksOf). A line that no longer validates (its model was removed from the config
 * since, say), or whose bytes are gone, fails for good with the reason in its caller's words. A store that cannot be
 * read now throws: the attempt is then given back, as when any read of its start fails (Processor.ts).
 */
export const createLineInputs = (deps: LineCheckRules & { readonly files: FileBytesShape }): LineInputs => {
  const checks = new Map<string, LineChecks>();
  const checkOf = (endpoint: string) => {
    let check = checks.get(endpoint);
    if (check === undefined) {
      check = lineChecksOf(deps, endpoint);
      checks.set(endpoint, check);
    }
    return check;
  };
  return async (referenceText) => {
    const reference = lineReferenceOf(referenceText);
    if (reference === undefined || reference.bytes > deps.maxLineBytes || reference.line === 0)
      return unrunnable('its line reference is damaged', 'this line could not be read from the input file');
    if (!deps.endpoints.endpoints.includes(reference.endpoint))
      return unrunnable(`its batch's endpoint ${reference.endpoint} is not served`, 'its endpoint is not served');
    let bytes: Uint8Array;
    try {
      bytes = await deps.files.readRange(reference.file, reference.offset, reference.bytes);
    } catch (error) {
      if (!(error instanceof BlobNotFound)) throw error;
      return unrunnable(`the input file ${reference.file} is gone`, 'the input file of its batch is gone');
    }
    let text: string | undefined;
    try {
      if (bytes.byteLength === reference.bytes) text = decoder.decode(bytes);
    } catch {
      // Not UTF-8 where validation found a line that was: the reference is wrong.
    }
    if (text === undefined)
      return unrunnable(
        `line ${reference.line} is not where its reference says in ${reference.file}`,
        'this line could not be read from the input file',
      );
    const checked = checkLine(
      { line: reference.line, text, bytes, offset: reference.offset },
      checkOf(reference.endpoint),
      new Set(),
    );
    if ('code' in checked) {
      const said = `line ${reference.line} no longer validates: ${checked.message}`;
      return unrunnable(said, said);
    }
    return modelInputFrom(checked.input);
  };
};

/** A server's line reader: the configured models and the submit's bounds, a line at most a body's bytes. */
export const LineReaderLayer = Layer.effect(
  LineReader,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const models = yield* Models;
    const store = yield* Store;
    const endpoints = yield* BatchEndpoints;
    return LineReader.of({
      inputOf: createLineInputs({
        files: store.files,
        endpoints,
        rules: {
          // Read at each use: a reload adds and removes models.
          get modelIds() {
            return models.ids();
          },
          maxPromptChars: config.maxPromptChars,
          maxPromptBytes: config.maxPromptBytes,
        },
        providerOf: (model) => models.get(model)?.config.provider,
        passThroughOf: passThroughOfModels(models),
        maxLineBytes: config.maxBodyBytes,
        jsonBounds: { maxDepth: config.maxJsonDepth, maxValues: config.maxJsonValues },
      }),
    });
  }),
);
