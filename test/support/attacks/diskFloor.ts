import { type Answer, callJson, createBatch, repeatedBytes, uploadFile } from './client.js';
import { mebibyteOfLines } from './parallelUploads.js';

/**
 * Issue 40, finding 3 (the disk floor): with the data directory's disk below `storage.minFreeMegabytes`, a submit is
 * refused (`503`), and so must be an upload and a batch create. A check, not a load: one of each, with their answers.
 * The server must already be below its floor (the caller starts it with a floor above the disk's free space), and
 * `existingFileId` names a file uploaded before, so that the batch create is tried whatever the upload got.
 */
export type DiskFloorOptions = {
  readonly url: string;
  readonly key: string;
  readonly uploadBytes: number;
  readonly existingFileId: string;
};

/** One call's answer: its status and the error's code and message, if any. */
export type CheckedCall = { readonly status: number; readonly code?: string; readonly message?: string };

export type DiskFloorOutcome = {
  readonly submit: CheckedCall;
  readonly upload: CheckedCall;
  readonly batchCreate: CheckedCall;
};

export const checked = (answer: Answer): CheckedCall => {
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = (JSON.parse(answer.text) as { error?: { code?: unknown; message?: unknown } }).error;
  } catch {
    error = undefined;
  }
  return {
    status: answer.status,
    ...(typeof error?.code === 'string' ? { code: error.code } : {}),
    ...(typeof error?.message === 'string'
      ? { message: error.message.slice(0, 200) }
      : answer.error === undefined
        ? {}
        : { message: answer.error }),
  };
};

export const diskFloor = async (options: DiskFloorOptions): Promise<DiskFloorOutcome> => {
  const submit = await callJson(options.url, 'POST', '/v1/ai', options.key, {
    model: 'echo',
    prompt: 'below the floor',
  });
  const upload = await uploadFile(options.url, options.key, repeatedBytes(options.uploadBytes, mebibyteOfLines()), {
    filename: 'below-the-floor.jsonl',
    fileBytes: options.uploadBytes,
  });
  const batchCreate = await createBatch(options.url, options.key, options.existingFileId);
  return { submit: checked(submit), upload: checked(upload), batchCreate: checked(batchCreate) };
};
