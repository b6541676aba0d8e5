/**
 * `npm run build`'s last step: the CLI as one bundle (esbuild), written over tsc's dist/src/adapters/cli/bin.js so
 * every documented path stays. Node resolves, reads and compiles each module file on its own, and that was most of
 * a command's start (docs/performance.md, "Issue 45: the CLI's start"): the bundle is one file per lazily loaded
 * part, its chunks in dist/cli/. Not shipped code: it runs at build time only (esbuild is a dev dependency).
 */
import { chmodSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const chunks = 'dist/cli';
rmSync(chunks, { recursive: true, force: true });

await build({
  entryPoints: { 'src/adapters/cli/bin': 'src/adapters/cli/bin.ts' },
  outdir: 'dist',
  chunkNames: 'cli/[name]-[hash]',
  bundle: true,
  // Each command's modules stay behind its own `await import(...)`: `--version` loads commander only.
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Native addons and what they load stay packages: lmdb finds its binary beside its own files, and shares msgpackr
  // with the store's codec (one copy, one set of record structures).
  external: ['lmdb', 'msgpackr', 'msgpackr-extract', 'pg-native'],
  // CommonJS packages inside an ES module bundle still call `require` for node's built-ins.
  banner: {
    js: 'import { createRequire as airsRequire } from "node:module"; const require = airsRequire(import.meta.url);',
  },
  // Maps for stack traces, read with NODE_OPTIONS=--enable-source-maps (on always, they cost a command 0.1 s).
  sourcemap: true,
  sourcesContent: false,
  logLevel: 'warning',
});
chmodSync('dist/src/adapters/cli/bin.js', 0o755);
