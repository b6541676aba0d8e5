import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { sseFramesOf } from '../../support/sseFrames.js';

/**
 * Checks answers against the committed OpenAPI document (docs/openapi.json, which openapi.test.ts keeps equal to the
 * served one) with ajv's JSON Schema 2020-12 dialect, the one OpenAPI 3.1 uses: the status must be documented for
 * the route, the body must match its schema, the required headers must be there and every documented header that is
 * there must match its schema. An answer on a path or method the document does not have must be the one error shape.
 */

type Json = Record<string, unknown>;

export type Observed = {
  readonly method: string;
  /** The path with its query, as called. */
  readonly path: string;
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
  /** The body as text: a `text/event-stream` answer is checked event by event. */
  readonly text?: string;
};

const documentUrl = new URL('../../../docs/openapi.json', import.meta.url);
export const committedDocument = (): Json => JSON.parse(readFileSync(documentUrl, 'utf8')) as Json;

const documentId = 'https://airs.invalid/openapi.json';

/** One validator per document (the suites share one, and a test may make its own from a broken copy). */
export const openApiChecker = (document: Json = committedDocument()) => {
  // Not strict: the document's OpenAPI keywords (paths, responses...) are not JSON Schema keywords.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ ...document, $id: documentId });
  const compiled = new Map<string, ValidateFunction>();
  const validatorAt = (pointer: string) => {
    let validate = compiled.get(pointer);
    if (validate === undefined) {
      validate = ajv.compile({ $ref: `${documentId}#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate;
  };
  const pointerSegment = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');
  const resolve = (value: unknown): Json => {
    const object = value as Json;
    const target = object.$ref;
    if (typeof target !== 'string') return object;
    const found = target
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((at, key) => (at as Json)[key.replaceAll('~1', '/').replaceAll('~0', '~')], document);
    return { ...resolve(found), ...Object.fromEntries(Object.entries(object).filter(([key]) => key !== '$ref')) };
  };
  const schemaProblems = (pointer: string, value: unknown, what: string) => {
    const validate = validatorAt(pointer);
    if (validate(value)) return [];
    return [`${what} does not match ${pointer}: ${ajv.errorsText(validate.errors)}`];
  };

  /** What is wrong with an answer, by the document; empty when nothing is. */
  const problems = (answer: Observed): string[] => {
    // A caller may give the path as its template (`/v1/x/{id}`), whose braces the URL escapes.
    const pathname = new URL(answer.path, 'http://airs.test').pathname.replaceAll('%7B', '{').replaceAll('%7D', '}');
    const paths = document.paths as Json;
    // A HEAD is answered like its GET, without the body.
    const head = answer.method.toUpperCase() === 'HEAD';
    const method = head ? 'get' : answer.method.toLowerCase();
    const operation = (paths[pathname] as Json | undefined)?.[method] as Json | undefined;
    const contentType = answer.headers.get('content-type')?.split(';')[0]?.trim();
    if (operation === undefined) {
      // Not a documented operation: an unknown path (404) or another method on a known one (405), in the error shape.
      if (head && answer.body === undefined) return [];
      if (contentType !== 'application/json') return [`content type ${contentType} of an undocumented route`];
      return schemaProblems('/components/schemas/Error', answer.body, 'the body of an undocumented route');
    }
    const operationPointer = `/paths/${pointerSegment(pathname)}/${method}`;
    const responses = operation.responses as Json;
    const documented = responses[String(answer.status)];
    if (documented === undefined) return [`status ${answer.status} is not documented for ${answer.method} ${pathname}`];
    const response = resolve(documented);
    const found: string[] = [];
    for (const [name, declared] of Object.entries((response.headers ?? {}) as Json)) {
      const headerObject = resolve(declared);
      const value = answer.headers.get(name);
      if (value === null) {
        if (headerObject.required === true) found.push(`required header ${name} is missing`);
        continue;
      }
      const schemaPointer =
        typeof (declared as Json).$ref === 'string'
          ? `${((declared as Json).$ref as string).slice(1)}/schema`
          : `${operationPointer}/responses/${answer.status}/headers/${pointerSegment(name)}/schema`;
      found.push(...schemaProblems(schemaPointer, value, `header ${name}`));
    }
    if (head && answer.body === undefined) return found;
    const content = (response.content ?? {}) as Json;
    if (contentType === undefined || content[contentType] === undefined) {
      found.push(`content type ${contentType} is not documented for ${answer.status}`);
      return found;
    }
    const mediaPointer = `${operationPointer}/responses/${answer.status}/content/${pointerSegment(contentType)}`;
    if (contentType === 'text/event-stream') {
      // Each event's data against the media type's `x-event-data` schema; comments and `[DONE]` are no events.
      if (typeof answer.text !== 'string') return [...found, 'an event stream without its text'];
      let frames: ReturnType<typeof sseFramesOf>;
      try {
        frames = sseFramesOf(answer.text);
      } catch (error) {
        return [...found, `not an event stream: ${(error as Error).message}`];
      }
      for (const [i, frame] of frames.entries())
        if (frame.kind === 'event')
          found.push(...schemaProblems(`${mediaPointer}/x-event-data`, frame.data, `event ${i}`));
      return found;
    }
    // A body of another media type than JSON (a file's bytes) is checked as the text it is.
    const body = contentType === 'application/json' ? answer.body : (answer.text ?? answer.body);
    found.push(...schemaProblems(`${mediaPointer}/schema`, body, 'the body'));
    return found;
  };
  return { problems, document };
};

let shared: ReturnType<typeof openApiChecker> | undefined;

/** Throws when an answer breaks the committed document: every contract suite's answers go through it. */
export const assertMatchesOpenApi = (answer: Observed): void => {
  shared ??= openApiChecker();
  const found = shared.problems(answer);
  if (found.length > 0) {
    throw new Error(
      `${answer.method} ${answer.path.slice(0, 120)} answered ${answer.status} against the OpenAPI document:\n  ${found.join('\n  ')}`,
    );
  }
};
