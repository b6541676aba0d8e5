#!/usr/bin/env node
import { keepNewFilesPrivate } from '../lmdb/fileModes.js';
import { endQuietlyWhenReaderLeaves } from './output.js';
import { runCli } from './program.js';

// Before anything is created: the data directory, its files (LMDB's own too) and backups are the owner's alone.
keepNewFilesPrivate();
const serving = process.argv[2] === 'serve';
endQuietlyWhenReaderLeaves(serving);
const code = await runCli(process.argv.slice(2));
// `serve` keeps running; every other command ends here.
if (!serving || code !== 0) process.exitCode = code;
// A server process of `serve --processes N` that failed to start: its channel to the primary would keep it alive
// (and a plain disconnect ends a cluster worker with 0).
if (code !== 0 && process.connected) process.exit(code);
