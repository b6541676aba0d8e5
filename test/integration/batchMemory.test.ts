import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  chatLines,
  createBatch,
  residentBytes,
  sendUpload,
  startBatchServer,
  streamedUpload,
  untilEnded,
  uploadLines,
} from '../support/batchServer.js';
import { fileSandboxes, sleep } from '../support/processes.js';

/**
 * A server's memory is bounded whatever the file size (contract 16): uploads, validation, output writing and
 * downloads stream. The server's resident set (/proc/<pid>/status of the `airs serve` child) is sampled every 100 ms
 * while it takes a 200 MB upload (made by the test as it is sent, never whole in the test's memory either), sends it
 * back, and runs a 20,000-line batch to its output file, which it sends back too.
 *
 * What is bounded is the anonymous part of the resident set (`RssAnon`: the JavaScript heap, buffers, native
 * allocations): `VmRSS` also counts the pages of LMDB's memory map that the process touched (`RssFile`, the page
 * cache, which the kernel takes back when it needs to), and those grow with the data read however it is read:
 * reading the 200 MB blob back adds some 190 MB of them.
 *
 * Measured on the 2-core machine (shared, under load), from a base of 68–80 MB anonymous (114–127 MB VmRSS) once
 * started and warmed up: the upload's and the download's phases peaked at base + 32–42 MB anonymous (VmRSS 155–162
 * MB, then 322–351 MB with the blob's mapped pages); the batch's at base + 172–180 MB anonymous, the same with 20,000
 * and with 50,000 lines (VmRSS 502–504 MB and 533 MB): a JavaScript heap collected lazily (a heap snapshot taken
 * mid-batch held 58 MB in all), not memory per line. The whole test took 47 s with 20,000 lines and 74 s with 50,000
 * there, so it runs 20,000.
 */

const newBox = fileSandboxes();
const megabyte = 1024 * 1024;

/** Growth of the anonymous resident set allowed while a file streams in or out: a 200 MB file held whole breaks it. */
const streamingBound = 96 * megabyte;
/** Growth allowed while the batch runs (measured 172–180 MB, whatever the number of lines). */
const batchBound = 256 * megabyte;
const lines = 20_000;

type Resident = ReturnType<typeof residentBytes>;
const mb = (bytes: number) => Math.round(bytes / megabyte);
const shown = (resident: Resident) => `${mb(resident.total)} MB (anon ${mb(resident.anon)}, file ${mb(resident.file)})`;

/** Samples the process's resident set every 100 ms; `take` gives the largest of each part since the last take. */
const sampleResident = (pid: number) => {
  let largest = residentBytes(pid);
  const sample = () => {
    const now = residentBytes(pid);
    largest = {
      total: Math.max(largest.total, now.total),
      anon: Math.max(largest.anon, now.anon),
      file: Math.max(largest.file, now.file),
    };
  };
  const timer = setInterval(() => {
    try {
      sample();
    } catch {
      // The process ended: nothing more to sample.
    }
  }, 100).unref();
  return {
    take: (): Resident => {
      sample();
      const taken = largest;
      largest = residentBytes(pid);
      return taken;
    },
    stop: () => clearInterval(timer),
  };
};

/** A file's content, streamed: its size, SHA-256 and lines, counted as the chunks come. */
const download = async (url: string, key: string, fileId: string) => {
  const response = await fetch(`${url}/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  const hash = createHash('sha256');
  let bytes = 0;
  let newlines = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    bytes += chunk.byteLength;
    for (const byte of chunk) if (byte === 10) newlines++;
  }
  return { bytes, sha256: hash.digest('hex'), newlines };
};

describe('the memory of a server taking a large upload and a large batch', { timeout: 300_000 }, () => {
  it("keeps the server's anonymous resident set within a bound through a 200 MB upload, its download and a 20,000-line batch", async () => {
    const served = await startBatchServer(newBox, 'batch-memory', {
      models: [{ id: 'echo', provider: 'echo' }],
      processing: { concurrency: 64 },
      batches: { maxLines: lines, maxFileBytes: 210_000_000 },
    });
    const pid = served.server.child.pid as number;
    const { url } = served.server;
    // Warmed up first: a small batch through every stage (upload, validation, lines, output file).
    const warm = await uploadLines(served, 'warm', chatLines(10, 'echo', 'warm'));
    await untilEnded(served.client, (await createBatch(served.client, warm.id)).id);
    await sleep(500);
    const base = residentBytes(pid);
    const samples = sampleResident(pid);
    const phases = [`base: ${shown(base)}`];
    /** The phase's peak, checked against its bound (the message shows every phase so far). */
    const phase = (name: string, bound: number) => {
      const peak = samples.take();
      phases.push(`${name}: ${shown(peak)}`);
      expect(peak.anon - base.anon, phases.join('; ')).toBeLessThan(bound);
    };

    const upload = streamedUpload(200_000_000);
    const answer = await sendUpload(url, served.key, upload);
    if (answer instanceof Error) throw answer;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(upload.written()).toBeGreaterThan(199_000_000);
    expect(answer.body.bytes).toBe(upload.written());
    phase('upload', streamingBound);
    // Sent back as it is read: the same bytes.
    const back = await download(url, served.key, String(answer.body.id));
    expect(back.bytes).toBe(upload.written());
    expect(back.sha256).toBe(upload.sha256());
    phase('download', streamingBound);

    const input = await uploadLines(served, 'many', chatLines(lines, 'echo', 'm'));
    const ended = await untilEnded(served.client, (await createBatch(served.client, input.id)).id, 240_000);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: lines, completed: lines, failed: 0 });
    expect((await download(url, served.key, String(ended.output_file_id))).newlines).toBe(lines);
    phase('batch and its output', batchBound);
    samples.stop();
    await served.stop();
  });
});
