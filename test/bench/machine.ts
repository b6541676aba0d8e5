/** The machine a run happened on, for the report. */
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';

export type Machine = {
  readonly nproc: number;
  readonly cpuModel: string;
  readonly node: string;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly loadAverage: string;
};

const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

export const describeMachine = (): Machine => ({
  nproc: availableParallelism(),
  cpuModel: /^model name\s*:\s*(.*)$/m.exec(read('/proc/cpuinfo'))?.[1]?.trim() ?? 'unknown',
  node: process.version,
  memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
  kernel: read('/proc/sys/kernel/osrelease').trim() || 'unknown',
  loadAverage: read('/proc/loadavg').split(' ').slice(0, 3).join(' ') || 'unknown',
});
