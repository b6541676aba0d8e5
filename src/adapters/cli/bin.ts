#!/usr/bin/env node
import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2));
// `serve` keeps running; every other command ends here.
if (process.argv[2] !== 'serve' || code !== 0) process.exitCode = code;
