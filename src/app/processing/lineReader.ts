import * as Context from 'effect/Context';
import type { ModelInput } from '../storedInput.js';
import type { CallFailure } from './modelCall.js';

/**
 * What an attempt of a batch's line is given: the model's input read from the batch's input file, or why the line
 * cannot run (no retry mends it). A batch's line keeps where it lies, not its prompt (app/batches/lineInput.ts).
 */
export type LineInputs = (referenceText: string) => Promise<ModelInput | CallFailure>;

/** The line reader of a server (given where the HTTP face gives the batch routes: server.ts). */
export class LineReader extends Context.Service<LineReader, { readonly inputOf: LineInputs }>()('airs/LineReader') {}
