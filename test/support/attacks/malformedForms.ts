import { send } from './client.js';
import { type CheckedCall, checked } from './diskFloor.js';

/**
 * Issue 40, finding 8: two malformed upload forms, a check of what each is answered (before the fix `500`, with a
 * level-50 stack in the log; a malformed form is the client's fault: `400`).
 */
export type MalformedFormsOutcome = {
  /** A form with two file parts named `file`. */
  readonly twoFileParts: CheckedCall;
  /** A form whose body ends inside the file, without the closing boundary. */
  readonly noClosingBoundary: CheckedCall;
};

const line = '{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"echo","messages":[]}}\n';

const filePart = (boundary: string, filename: string) =>
  `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${filename}"\r\n` +
  `content-type: application/jsonl\r\n\r\n${line}\r\n`;

export const malformedForms = async (url: string, key: string): Promise<MalformedFormsOutcome> => {
  const boundary = 'airs-malformed-form';
  const headers = { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` };
  const purpose = `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n`;
  const twoFileParts = await send(url, 'POST', '/v1/files', {
    headers,
    body: `${purpose}${filePart(boundary, 'a.jsonl')}${filePart(boundary, 'b.jsonl')}--${boundary}--\r\n`,
    timeoutMs: 10_000,
  });
  const noClosingBoundary = await send(url, 'POST', '/v1/files', {
    headers,
    body: `${purpose}--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="c.jsonl"\r\n\r\n${line}`,
    timeoutMs: 10_000,
  });
  return { twoFileParts: checked(twoFileParts), noClosingBoundary: checked(noClosingBoundary) };
};
