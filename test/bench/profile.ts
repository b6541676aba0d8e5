/**
 * Reads a V8 `.cpuprofile` (from `node --cpu-prof`) and says where the time went: the functions with the most
 * self time, and self time summed by area (a package under node_modules, a file of airs, Node's internals).
 *
 * Also a command: `node dist/test/bench/profile.js FILE.cpuprofile [TOP]`.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';

type CallFrame = { functionName: string; url: string; lineNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
type CpuProfile = { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

export type Share = { readonly name: string; readonly pct: number; readonly ms: number };
export type ProfileSummary = {
  readonly file: string;
  /** Sampled time, and the part of it that was not idle (the process also idles between measurements). */
  readonly totalMs: number;
  readonly busyMs: number;
  /** Percentages are of the busy (not idle) time. */
  readonly topFunctions: Share[];
  readonly byArea: Share[];
  /** Time with the function anywhere on the stack (inclusive), for functions of airs and its libraries. */
  readonly inclusive: Share[];
};

/** Where a frame's code lives: `lmdb`, `h3`, `airs src/app/Requests.js`, `node:http`, `(garbage collector)`. */
const areaOf = (frame: CallFrame): string => {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules !== -1) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return (parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]) ?? url;
  }
  const src = url.lastIndexOf('/dist/src/');
  if (src !== -1) return `airs src/${url.slice(src + '/dist/src/'.length)}`;
  if (url.startsWith('node:internal/')) return `node:${url.slice('node:internal/'.length).split('/')[0]}`;
  if (url.startsWith('node:')) return url;
  return basename(url);
};

const where = (frame: CallFrame) => {
  const area = areaOf(frame);
  if (frame.url === '') return area;
  return `${area === frame.url ? basename(frame.url) : area}:${frame.lineNumber + 1}`;
};

const labelOf = (frame: CallFrame) =>
  frame.url === '' ? frame.functionName : `${frame.functionName || '(anonymous)'} ${where(frame)}`;

export const summarizeProfile = (path: string, top = 20): ProfileSummary => {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const selfById = new Map<number, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    total += delta;
    selfById.set(id, (selfById.get(id) ?? 0) + delta);
  });
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let idle = 0;
  for (const [id, micros] of selfById) {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    if (frame.functionName === '(idle)') {
      idle += micros;
      continue;
    }
    const fn = labelOf(frame);
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + micros);
    const area = areaOf(frame);
    byArea.set(area, (byArea.get(area) ?? 0) + micros);
    // Every distinct function on this sample's stack gets the time once.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const stackFrame = (byId.get(at) as ProfileNode).callFrame;
      if (stackFrame.url === '' || stackFrame.url.startsWith('node:')) continue;
      const label = labelOf(stackFrame);
      if (seen.has(label)) continue;
      seen.add(label);
      inclusive.set(label, (inclusive.get(label) ?? 0) + micros);
    }
  }
  const busy = Math.max(total - idle, 1);
  const shares = (map: Map<string, number>, limit: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, micros]) => ({ name, pct: Math.round((1000 * micros) / busy) / 10, ms: Math.round(micros / 1000) }));
  return {
    file: path,
    totalMs: Math.round(total / 1000),
    busyMs: Math.round(busy / 1000),
    topFunctions: shares(byFunction, top),
    byArea: shares(byArea, top),
    inclusive: shares(inclusive, top * 2),
  };
};

export const formatSummary = (summary: ProfileSummary): string => {
  const lines = (shares: Share[]) => shares.map((s) => `  ${s.pct.toFixed(1).padStart(5)}%  ${s.name}`);
  return [
    `${basename(summary.file)}: ${summary.totalMs} ms sampled, ${summary.busyMs} ms busy; shares are of the busy time`,
    ' self time by function:',
    ...lines(summary.topFunctions),
    ' self time by area:',
    ...lines(summary.byArea),
    ' inclusive time (on the stack), JavaScript outside Node itself:',
    ...lines(summary.inclusive),
  ].join('\n');
};

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, top] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write('usage: node dist/test/bench/profile.js FILE.cpuprofile [TOP]\n');
    process.exit(2);
  }
  process.stdout.write(`${formatSummary(summarizeProfile(file, Number(top ?? 25)))}\n`);
}
