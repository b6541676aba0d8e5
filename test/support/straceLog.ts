import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Reading `strace -f -y` output of the server, to check the order of its disk and socket system calls. */

/** One system call: its text (arguments and result) and the trace lines where it entered and returned. */
export type Syscall = {
  readonly name: string;
  /** The file behind the first argument, as `-y` prints it (`/path/airs.mdb`, `socket:[123]`), if it is an fd. */
  readonly path: string | undefined;
  readonly text: string;
  readonly entry: number;
  readonly exit: number;
};

const writeCalls = new Set(['write', 'writev', 'pwrite64', 'pwritev', 'pwritev2', 'sendto', 'sendmsg']);
const syncCalls = new Set(['fdatasync', 'fsync', 'msync']);

/** The arguments that run the server under strace, writing the trace to `traceFile`. Fails if strace is missing. */
export const straceWrapper = (traceFile: string): string[] => {
  const probe = spawnSync('strace', ['-V'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    throw new Error('strace is not installed: this test needs it (apt-get install -y strace; .ci/run installs it)');
  }
  return [
    'strace',
    '-f', // every thread: lmdb-js commits on a worker thread
    '-qq',
    '--seccomp-bpf', // stop only at the traced calls, so the server keeps most of its speed
    '-y', // fds as paths: airs.mdb, socket:[...]
    '-s',
    '1000000', // whole pages and whole responses, so request ids are never cut off
    '-e',
    `trace=${[...writeCalls, ...syncCalls].join(',')}`,
    // A slow disk: each sync waits 20 ms before it starts, so an answer that does not wait for it goes out first.
    '-e',
    `inject=${[...syncCalls].join(',')}:delay_enter=20000`,
    '-o',
    traceFile,
    '--',
  ];
};

/** Parses the trace; a call that another thread interrupted (`<unfinished ...>` / `<... resumed>`) is joined up. */
export const parseStrace = (log: string): Syscall[] => {
  const calls: Syscall[] = [];
  const pending = new Map<string, { text: string; entry: number }>();
  log.split('\n').forEach((line, index) => {
    const match = /^(\d+)\s+(.*)$/.exec(line);
    if (match === null) return;
    const [, pid = '', rest = ''] = match;
    if (rest.endsWith('<unfinished ...>')) {
      pending.set(pid, { text: rest.slice(0, -'<unfinished ...>'.length), entry: index });
      return;
    }
    let text = rest;
    let entry = index;
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(rest);
    if (resumed !== null) {
      const start = pending.get(pid);
      pending.delete(pid);
      if (start === undefined) return;
      text = start.text + (resumed[1] ?? '');
      entry = start.entry;
    }
    const call = /^(\w+)\((?:\d+<([^>]*)>)?/.exec(text);
    if (call?.[1] !== undefined) calls.push({ name: call[1], path: call[2], text, entry, exit: index });
  });
  return calls;
};

export const readStrace = (traceFile: string) => parseStrace(readFileSync(traceFile, 'utf8'));

/**
 * Checks, for every id in `acknowledged`, that its `202` was written to a socket only after an fdatasync/fsync
 * (or msync) of the data file that began after the request first reached the file and returned before the `202`.
 * Returns one line per request that breaks this (empty when all is well).
 */
export const acknowledgementsBeforeSync = (
  calls: readonly Syscall[],
  dataFile: string,
  acknowledged: ReadonlySet<string>,
): string[] => {
  const lengths = new Set([...acknowledged].map((id) => id.length));
  const idsIn = (text: string) => {
    const found = new Set<string>();
    for (const [candidate] of text.matchAll(/req_[A-Za-z0-9_-]+/g)) {
      // Bytes after the id in a page may look like id characters: try the lengths the ids have.
      for (const length of lengths)
        if (acknowledged.has(candidate.slice(0, length))) found.add(candidate.slice(0, length));
    }
    return found;
  };
  const written = new Map<string, number>();
  const sent = new Map<string, number>();
  const syncs: Syscall[] = [];
  // Per socket: where the response being written began, if it is a 202 (its id may come in a later write).
  const responseStart = new Map<string, number | undefined>();
  for (const call of calls) {
    const onDataFile = call.path === dataFile;
    if (syncCalls.has(call.name) && (onDataFile || call.name === 'msync')) syncs.push(call);
    if (!writeCalls.has(call.name)) continue;
    if (onDataFile) {
      for (const id of idsIn(call.text)) written.set(id, Math.min(written.get(id) ?? call.exit, call.exit));
    } else if (call.path?.startsWith('socket:')) {
      const status = /HTTP\/1\.[01] (\d{3})/.exec(call.text);
      if (status !== null) responseStart.set(call.path, status[1] === '202' ? call.entry : undefined);
      const start = responseStart.get(call.path);
      if (start !== undefined) for (const id of idsIn(call.text)) if (!sent.has(id)) sent.set(id, start);
    }
  }
  const problems: string[] = [];
  for (const id of acknowledged) {
    const sentAt = sent.get(id);
    const writtenAt = written.get(id);
    if (sentAt === undefined) problems.push(`${id}: no 202 carrying it was written to a socket`);
    else if (writtenAt === undefined || writtenAt > sentAt) {
      problems.push(`${id}: 202 sent (trace line ${sentAt + 1}) before the request was written to ${dataFile}`);
    } else if (!syncs.some((sync) => sync.entry > writtenAt && sync.exit < sentAt)) {
      problems.push(
        `${id}: written (line ${writtenAt + 1}) but no fdatasync/fsync/msync of it completed before its 202 (line ${sentAt + 1})`,
      );
    }
  }
  return problems;
};
