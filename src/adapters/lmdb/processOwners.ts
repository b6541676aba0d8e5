import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import type { LeaseOwners } from '../../ports/Store.js';

/**
 * Lease owners that tell their process (contract 17: a server restarted on the same machine takes up at once the
 * leases of processes of its data directory that no longer exist). Every process of an LMDB data directory runs on one
 * machine (LMDB allows no other), so a lease's owner name carries who took it, and any process of the directory can
 * look that process up:
 *
 *   proc_<random>~<pid>.<start>.<boot>.<pid namespace>
 *
 * - `pid` and `start` (its start time in clock ticks since boot, `/proc/<pid>/stat` field 22, base 36) together name
 *   one process: a pid used again by a later process has another start time.
 * - `boot` (the first 12 hex digits of `/proc/sys/kernel/random/boot_id`): a process of an earlier boot exists no more.
 * - the PID namespace (`/proc/self/ns/pid`, base 36): a pid means something only in its namespace; a name from another
 *   (a container beside this one on a shared volume) is never judged gone.
 *
 * Gone means known to be gone: no process under that pid (`kill(pid, 0)` answers ESRCH), a zombie, or one that started
 * at another time. Anything that cannot be told (another namespace, a name without the suffix, a system without
 * `/proc`: not Linux) is alive, and its leases lapse as before.
 */

/** Who a process is, on one machine. */
export type ProcessIdentity = {
  readonly pid: number;
  /** Start time after boot, in clock ticks (base 36). */
  readonly start: string;
  readonly boot: string;
  /** PID namespace inode (base 36). */
  readonly pidNs: string;
};

/** What the system says of the process now running under a pid (in this PID namespace). */
export type ProcessSeen =
  | { readonly exists: false }
  /** `start` absent: it exists, but its start time cannot be read (another user's, behind `hidepid`). */
  | { readonly exists: true; readonly start?: string | undefined; readonly ended?: boolean | undefined };

export type ProcessProbe = {
  /** This process, or undefined where the system cannot tell (no `/proc`). */
  self(): ProcessIdentity | undefined;
  look(pid: number): ProcessSeen;
};

/** The state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line; its command (field 2) may hold spaces
 * and parentheses, so the fields are counted after its last `)`. */
export const parseStat = (stat: string): { readonly state: string; readonly start: string } | undefined => {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const ticks = fields[19];
  if (state === undefined || ticks === undefined || !/^\d+$/.test(ticks)) return undefined;
  return { state, start: BigInt(ticks).toString(36) };
};

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;

/** Linux: `/proc` and `kill(pid, 0)`. */
export const linuxProbe: ProcessProbe = {
  self: () => {
    try {
      const stat = parseStat(readFileSync('/proc/self/stat', 'utf8'));
      const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')
        .replace(/[^0-9a-f]/g, '')
        .slice(0, 12);
      const ns = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
      if (stat === undefined || boot.length < 12 || ns === undefined) return undefined;
      return { pid: process.pid, start: stat.start, boot, pidNs: BigInt(ns).toString(36) };
    } catch {
      return undefined;
    }
  },
  look: (pid) => {
    let ours = true;
    try {
      process.kill(pid, 0);
    } catch (error) {
      if (errorCode(error) === 'ESRCH') return { exists: false };
      // EPERM: it exists, and is another user's.
      ours = false;
    }
    try {
      const stat = parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      if (stat === undefined) return { exists: true };
      // A zombie (Z) or a dead task (X) has ended: it only waits for its parent to read its exit status.
      return { exists: true, start: stat.start, ended: stat.state === 'Z' || stat.state === 'X' };
    } catch (error) {
      // A process of ours that `kill` saw but `/proc` no longer has has just ended; another user's may be hidden.
      if (ours && errorCode(error) === 'ENOENT') return { exists: false };
      return { exists: true };
    }
  },
};

const suffix = /~(\d+)\.([0-9a-z]+)\.([0-9a-f]{12})\.([0-9a-z]+)$/;

/** The process an owner name tells, if it tells one. */
export const identityOf = (owner: string): ProcessIdentity | undefined => {
  const match = suffix.exec(owner);
  if (match === null) return undefined;
  const [, pid, start, boot, pidNs] = match as unknown as [string, string, string, string, string];
  return { pid: Number(pid), start, boot, pidNs };
};

/**
 * Whether the process `owner` names is known to be gone, as seen by `self` through `probe` (see the top of this file).
 */
export const isGone = (owner: string, self: ProcessIdentity | undefined, look: ProcessProbe['look']): boolean => {
  const of = identityOf(owner);
  if (of === undefined || self === undefined || !Number.isSafeInteger(of.pid) || of.pid <= 0) return false;
  // An earlier boot of this machine: none of its processes runs now.
  if (of.boot !== self.boot) return true;
  // Another PID namespace: its pids mean nothing here.
  if (of.pidNs !== self.pidNs) return false;
  if (of.pid === self.pid) return of.start !== self.start;
  const seen = look(of.pid);
  if (!seen.exists) return true;
  if (seen.ended === true) return true;
  return seen.start !== undefined && seen.start !== of.start;
};

export const createProcessOwners = (probe: ProcessProbe = linuxProbe): LeaseOwners => {
  let self: ProcessIdentity | undefined | null = null;
  const me = () => {
    if (self === null) self = probe.self();
    return self;
  };
  return {
    name: (part) => {
      const id = me();
      const random = randomBytes(9).toString('base64url');
      return id === undefined ? `${part}_${random}` : `${part}_${random}~${id.pid}.${id.start}.${id.boot}.${id.pidNs}`;
    },
    gone: (owner) => isGone(owner, me(), probe.look),
  };
};

/** This process's, for every store it opens (a forked process has its own). */
export const processOwners: LeaseOwners = createProcessOwners();
