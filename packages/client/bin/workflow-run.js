#!/usr/bin/env node
// Launcher for the `workflow-run` CLI. In this repository it runs the TypeScript source directly
// (Node strips the types); installed from a registry (under node_modules, where Node does not strip
// types) it runs the compiled `dist/` that `npm pack` builds.
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(import.meta.url);
const entry = here.split(/[\\/]/).includes('node_modules') ? '../dist/cli.js' : '../src/cli.ts';
const { runCli } = await import(entry);
process.exitCode = await runCli(process.argv.slice(2));
