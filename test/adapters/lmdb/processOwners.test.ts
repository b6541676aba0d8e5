import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createProcessOwners,
  identityOf,
  isGone,
  linuxProbe,
  type ProcessIdentity,
  type ProcessSeen,
  parseStat,
} from '../../../src/adapters/lmdb/processOwners.js';

const base36 = fc.nat({ max: 2 ** 40 }).map((n) => n.toString(36));
const identity: fc.Arbitrary<ProcessIdentity> = fc.record({
  pid: fc.integer({ min: 1, max: 4_194_304 }),
  start: base36,
  boot: fc.stringMatching(/^[0-9a-f]{12}$/),
  pidNs: base36,
});
const nameOf = (id: ProcessIdentity, random = 'AbC-_x') =>
  `proc_${random}~${id.pid}.${id.start}.${id.boot}.${id.pidNs}`;

describe('Lease owners that tell their process (contract 17)', () => {
  it('reads the state and start time of a /proc stat line whose command holds spaces and parentheses', () => {
    const stat = '4242 (node (a) b) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 11 0 98765 1 2 3';
    expect(parseStat(stat)).toEqual({ state: 'S', start: (98765).toString(36) });
  });

  it('names an owner so that the process is read back from the name', () => {
    fc.assert(
      fc.property(identity, fc.stringMatching(/^[A-Za-z0-9_-]{12}$/), (id, random) => {
        expect(identityOf(nameOf(id, random))).toEqual(id);
      }),
    );
  });

  it('never judges gone a process that still exists (same pid, same start, not ended), nor one it cannot tell', () => {
    fc.assert(
      fc.property(identity, identity, fc.string(), (self, owner, plain) => {
        fc.pre(owner.pid !== self.pid);
        const alive = (pid: number): ProcessSeen =>
          pid === owner.pid ? { exists: true, start: owner.start } : { exists: false };
        const sameMachine = { ...owner, boot: self.boot, pidNs: self.pidNs };
        // A live process of this machine and namespace keeps its leases.
        expect(isGone(nameOf(sameMachine), self, alive)).toBe(false);
        // This very process.
        expect(isGone(nameOf(self), self, () => ({ exists: false }))).toBe(false);
        // Another user's process whose start time cannot be read.
        expect(isGone(nameOf(sameMachine), self, () => ({ exists: true }))).toBe(false);
        // Another PID namespace on this machine: its pids mean nothing here, whatever this one sees under them.
        if (owner.pidNs !== self.pidNs)
          expect(isGone(nameOf({ ...owner, boot: self.boot }), self, () => ({ exists: false }))).toBe(false);
        // A name without the suffix (PostgreSQL's, older versions'), or a system that cannot tell itself.
        if (!plain.includes('~')) expect(isGone(plain, self, () => ({ exists: false }))).toBe(false);
        expect(isGone(nameOf(sameMachine), undefined, () => ({ exists: false }))).toBe(false);
      }),
    );
  });

  it('judges gone a process that no longer exists, a pid now another process’s, a zombie, an earlier boot', () => {
    fc.assert(
      fc.property(identity, identity, (self, owner) => {
        fc.pre(owner.pid !== self.pid);
        const here = { ...owner, boot: self.boot, pidNs: self.pidNs };
        expect(isGone(nameOf(here), self, () => ({ exists: false }))).toBe(true);
        expect(isGone(nameOf(here), self, () => ({ exists: true, start: `${owner.start}0` }))).toBe(true);
        expect(isGone(nameOf(here), self, () => ({ exists: true, start: owner.start, ended: true }))).toBe(true);
        if (owner.boot !== self.boot)
          expect(isGone(nameOf({ ...owner, pidNs: self.pidNs }), self, () => ({ exists: true }))).toBe(true);
        // An earlier process under this process's own pid.
        expect(isGone(nameOf({ ...self, start: `${self.start}1` }), self, () => ({ exists: true }))).toBe(true);
      }),
    );
  });

  it.skipIf(!existsSync('/proc/self/stat'))(
    'keeps the leases of a real process while it runs, and ends them once it was killed',
    async () => {
      const owners = createProcessOwners();
      const self = linuxProbe.self();
      expect(self).toBeDefined();
      const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
      const pid = child.pid ?? 0;
      const exited = new Promise((resolve) => child.on('exit', resolve));
      try {
        const start = parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.start ?? '';
        const owner = nameOf({ ...(self as ProcessIdentity), pid, start });
        expect(owners.gone(owner)).toBe(false);
        expect(owners.gone(owners.name('proc'))).toBe(false);
        // The same pid with another start time is another process.
        expect(owners.gone(nameOf({ ...(self as ProcessIdentity), pid, start: `${start}0` }))).toBe(true);
        child.kill('SIGKILL');
        await exited;
        expect(owners.gone(owner)).toBe(true);
      } finally {
        child.kill('SIGKILL');
      }
    },
  );
});
