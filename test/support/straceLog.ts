/**
 * Reads an `strace -f -y` log into calls with their place in time: the line where each call began and the line where
 * it returned (one line, or an `<unfinished ...>` line and its `<... resumed>` line when threads interleave).
 */
export type TracedCall = {
  readonly name: string;
  /** The call's arguments as strace printed them (file descriptors with their paths, buffers as text). */
  readonly args: string;
  readonly start: number;
  readonly end: number;
};

const complete = /^(\d+)\s+(\w+)\((.*)\)\s+=\s+-?\d+/;
const unfinished = /^(\d+)\s+(\w+)\((.*)\s+<unfinished \.\.\.>$/;
const resumed = /^(\d+)\s+<\.\.\. (\w+) resumed>(.*)\)\s+=\s+-?\d+/;

export const parseStrace = (log: string): TracedCall[] => {
  const calls: TracedCall[] = [];
  const pending = new Map<string, { name: string; args: string; start: number }>();
  log.split('\n').forEach((line, index) => {
    const whole = complete.exec(line);
    if (whole !== null) {
      calls.push({ name: whole[2] as string, args: whole[3] as string, start: index, end: index });
      return;
    }
    const begun = unfinished.exec(line);
    if (begun !== null) {
      pending.set(`${begun[1]}/${begun[2]}`, { name: begun[2] as string, args: begun[3] as string, start: index });
      return;
    }
    const ended = resumed.exec(line);
    if (ended === null) return;
    const started = pending.get(`${ended[1]}/${ended[2]}`);
    if (started === undefined) return;
    pending.delete(`${ended[1]}/${ended[2]}`);
    calls.push({ ...started, args: started.args + (ended[3] as string), end: index });
  });
  return calls.sort((a, b) => a.start - b.start);
};
