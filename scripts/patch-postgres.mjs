// Run by `npm install` / `npm ci` (postinstall): two guards in postgres.js 3.4.9 for a connection that the database
// closes under it (a crash, a restart, pg_terminate_backend). Unguarded, each throws outside any caller and ends the
// whole airs process; guarded, the queries of that connection fail (CONNECTION_CLOSED, or the server's own error),
// which the store answers as "database unreachable" (503), and the pool connects again.
// - `nextWrite` after the socket is gone (porsager/postgres#1208, #1154; fix proposed in #1209, not released): a
//   TypeError thrown from a setImmediate callback.
// - The array types fetched on every new connection (`fetchArrayTypes`): its promise is dropped, so a connection
//   ended while it runs is an unhandled rejection (the process's default: exit).
// Idempotent; stops with a message if the code it patches is not there (another version of postgres.js: check whether
// the upstream fixes are in it).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Each guard: the code as postgres.js 3.4.9 has it, the code guarded, and a mark that says it is in place. */
const patches = [
  {
    mark: 'airs: porsager/postgres#1208',
    from: `  function nextWrite(fn) {
    const x = socket.write(chunk, fn)`,
    to: `  function nextWrite(fn) {
    if (!socket) { // airs: porsager/postgres#1208: closed before this scheduled write ran; fail its queries, never throw
      nextWriteTimer !== null && clearImmediate(nextWriteTimer)
      chunk = nextWriteTimer = null
      error(Errors.connection('CONNECTION_CLOSED', options))
      return false
    }
    const x = socket.write(chunk, fn)`,
  },
  {
    mark: 'airs: fetchArrayTypes',
    from: `        return fetchArrayTypes()
`,
    to: `        return fetchArrayTypes().catch(errored) // airs: fetchArrayTypes of an ended connection fails its first query
`,
  },
];

const files = ['src/connection.js', 'cjs/src/connection.js'].map((file) => join(root, 'node_modules', 'postgres', file));
let problems = 0;
for (const file of files) {
  if (!existsSync(file)) continue; // postgres.js not installed (yet): nothing to guard
  let text = readFileSync(file, 'utf8');
  for (const { mark, from, to } of patches) {
    if (text.includes(mark)) continue;
    if (!text.includes(from)) {
      console.error(`airs: ${file} does not hold the code that scripts/patch-postgres.mjs guards (${mark}): check it`);
      problems++;
      continue;
    }
    text = text.replace(from, to);
  }
  writeFileSync(file, text);
}
process.exit(problems === 0 ? 0 : 1);
