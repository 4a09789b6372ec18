// @ts-check
/**
 * The process ONE PythonSandbox run lives in, started by `box.ts` inside the operating system's box:
 * Node's permission model (read access to Pyodide's files, this file and the snapshot only; no child
 * process, worker, addon, WASI or write), no code generation from strings, an empty environment, a
 * heap limit, and the parent's watch on its memory and its time. This file is plain JavaScript Node
 * runs as it is, shipped beside the bundle: no bundler or test runner rewrites it, and no type
 * stripping costs each start (about 40 ms of cpu). `// @ts-check` and JSDoc keep it type-checked.
 *
 * Without a snapshot it loads Pyodide in full (its own string-hash seed, drawn at initialisation) and,
 * when asked to, writes a memory snapshot of the pristine interpreter to the parent before any user
 * code, which later children start from (a fraction of a second, but the snapshot's seed). It then
 * writes `{ ready: true }`, reads its one job from stdin, answers it and exits.
 *
 * Frames on fd 3: one byte of kind (`S` snapshot, `M` JSON message), four of length (big-endian),
 * then the bytes. stdout is not used: nothing Pyodide or Node prints can be mistaken for a frame.
 */
import fs from 'node:fs';
import Module from 'node:module';
import os from 'node:os';
import { pathToFileURL } from 'node:url';

/** @typedef {import('./child-protocol.ts').PythonChildSettings} Settings */
/** @typedef {import('./child-protocol.ts').PythonChildJob} Job */
/** @typedef {import('./child-protocol.ts').PythonChildMessage} Message */

/** @type {Settings} */
const settings = JSON.parse(process.argv[2] ?? '{}');
const frames = 3;

/** @param {'S' | 'M'} kind @param {Uint8Array} payload */
const writeFrame = (kind, payload) => {
  const header = Buffer.alloc(5);
  header.write(kind, 0, 'latin1');
  header.writeUInt32BE(payload.byteLength, 1);
  for (const bytes of [header, payload]) {
    for (let written = 0; written < bytes.byteLength; ) written += fs.writeSync(frames, bytes, written);
  }
};
/** @param {Message} message */
const send = (message) => writeFrame('M', Buffer.from(JSON.stringify(message)));

// Pyodide's Node file system asks `process.binding('constants')`, which the permission model refuses:
// the same constants, from the public modules, and nothing else.
Object.defineProperty(process, 'binding', {
  configurable: true,
  value: (/** @type {string} */ name) => {
    if (name === 'constants') return { fs: fs.constants, os: os.constants };
    throw new Error(`no process.binding('${name}') in the Python sandbox`);
  },
});

// Memory: Pyodide's heap is one WebAssembly.Memory it grows on demand. Refusing to grow it past the
// limit makes malloc fail, which Python raises as MemoryError, well before the parent's kill.
let memoryRefused = false;
/** @type {{ Memory: { prototype: { buffer: ArrayBuffer; grow(delta: number): number } } }} */
const wasm = Reflect.get(globalThis, 'WebAssembly');
const grow = wasm.Memory.prototype.grow;
wasm.Memory.prototype.grow = function limitedGrow(/** @type {number} */ delta) {
  if (this.buffer.byteLength + delta * 65_536 > settings.memoryLimitBytes) {
    memoryRefused = true;
    throw new RangeError('memory limit');
  }
  return grow.call(this, delta);
};

// Network: nothing the code could reach from `js` or the Pyodide API may make a request.
for (const name of ['fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource', 'Request', 'Response', 'Headers']) {
  Reflect.deleteProperty(globalThis, name);
}

/**
 * @typedef {{
 *   runPython(code: string): unknown;
 *   makeMemorySnapshot(): Uint8Array;
 *   globals: { get(name: string): (...args: unknown[]) => unknown };
 *   setStdout(options: { batched: (line: string) => void }): void;
 *   setStderr(options: { batched: (line: string) => void }): void;
 * }} Pyodide
 */
/** @type {{ loadPyodide(options: Record<string, unknown>): Promise<Pyodide> }} */
const { loadPyodide } = await import(pathToFileURL(`${settings.indexPath}pyodide.mjs`).href);
const pyodide = await loadPyodide({
  indexURL: settings.indexPath,
  // The `js` module sees this empty object, not the process's globals.
  jsglobals: Object.create(null),
  env: { HOME: '/home/pyodide' },
  // No package is ever installed: nothing names one, and this refuses the default CDN.
  packages: [],
  checkAPIVersion: true,
  ...(settings.snapshotPath ? { _loadSnapshot: fs.readFileSync(settings.snapshotPath) } : {}),
  ...(!settings.snapshotPath && settings.makeSnapshot ? { _makeSnapshot: true } : {}),
});

if (!settings.snapshotPath) {
  // The runner's own Python, in the snapshot: `inputs` from JSON, `result` back as JSON. It holds the
  // json functions it was defined with, so a run that patches `json` changes nothing it does.
  pyodide.runPython(`
import json as _json, sys as _sys
for _name in ('micropip', 'pyodide_js', 'pyodide_js._api', 'pyodide.http'):
    _sys.modules[_name] = None
def _run_step(code, inputs_json, loads=_json.loads, dumps=_json.dumps):
    scope = {'__name__': '__main__', '__builtins__': __builtins__, 'inputs': loads(inputs_json)}
    exec(compile(code, '<step>', 'exec'), scope)
    try:
        return dumps(scope.get('result'), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f'result is not JSON: {error}') from None
`);
  if (settings.makeSnapshot) writeFrame('S', pyodide.makeMemorySnapshot());
}
// Every child from one snapshot starts from the same bytes: the random module (imported by Pyodide's
// bootstrap) is reseeded from the system's randomness, so no two runs share a sequence.
pyodide.runPython(`import sys as _sys
if 'random' in _sys.modules:
    _sys.modules['random'].seed()
del _sys`);
const runStep = pyodide.globals.get('_run_step');

// Modules compiled into the interpreter that reach its raw memory or its internals (`ctypes`' `_ctypes`,
// CPython's test modules): blocking them in `sys.modules` is undone by `_imp.create_builtin`, so their
// names are taken out of the interpreter's table of built-in modules itself. Every exact, NUL-ended
// copy of each name in the WebAssembly memory is overwritten with one that imports nothing: the table
// then has no entry by that name, and `import _ctypes` (so `import ctypes`) is a ModuleNotFoundError.
const droppedBuiltins = [
  '_ctypes',
  '_testcapi',
  '_testinternalcapi',
  '_testlimitedcapi',
  '_testbuffer',
  '_testclinic',
  '_testclinic_limited',
  '_xxtestfuzz',
  '_remote_debugging',
];
/** @type {{ HEAPU8: Uint8Array }} */
const emscripten = Reflect.get(pyodide, '_module');
const heap = Buffer.from(emscripten.HEAPU8.buffer, emscripten.HEAPU8.byteOffset, emscripten.HEAPU8.byteLength);
for (const name of droppedBuiltins) {
  const exact = Buffer.from(`\0${name}\0`, 'latin1');
  for (let at = heap.indexOf(exact); at >= 0; at = heap.indexOf(exact, at + 1)) heap[at + 1] = 0x21; // '!'
}
pyodide.runPython(`import sys as _sys
for _name in ('ctypes', '_ctypes'):
    _sys.modules.pop(_name, None)
del _sys, _name`);

// Pyodide's internal API (the wasm instance's `_hiwire_get(3)`): its test helpers, socket file
// system, dynamic library loader, package installer and the rest of what only loading needs are
// removed before any user code; what running Python needs (its errors, conversions) stays.
const internalApi = /** @type {Record<string, unknown>} */ (Reflect.get(pyodide, '_api'));
for (const name of [
  'tests',
  'fail_test',
  'initializeNodeSockFS',
  'loadDynlib',
  'install',
  'packageManager',
  'package_loader',
  'packageIndexReady',
  'flushPackageManagerBuffers',
  'loadBinaryFile',
  'lockfile',
  'lockfile_info',
  'lockfile_packages',
  'lockfile_unvendored_stdlibs_and_test',
  'lockFilePromise',
  '_import_name_to_package_name',
  'makeSnapshot',
  'restoreSnapshot',
  'saveState',
  'restoreState',
  'serializeHiwireState',
  'rawRun',
  'runPythonInternal',
  'runPythonInternal_dict',
  'public_api',
  '_Comlink',
  'initializeStreams',
  'finalizeBootstrap',
  'bootstrapFinalizedPromise',
  'config',
  'runtimeEnv',
  'dsodir',
  'defaultLdLibraryPath',
  'sitepackages',
  'importlib',
  'os',
  'sys',
  'pyodide_py',
  'pyodide_code',
  'pyodide_base',
  'globals',
]) {
  Reflect.deleteProperty(internalApi, name);
}

// A stack trace's call sites give a WebAssembly frame's instance (`getThis()`), whose exports reach
// every JavaScript object the interpreter holds: no code after this line may install
// `Error.prepareStackTrace`, the only way to get call sites.
Object.defineProperty(Error, 'prepareStackTrace', { value: undefined, writable: false, configurable: false });

// Defence in depth inside the realm (the box above is the boundary): Node's ways to reach modules,
// the file system or the network, removed before any user code runs.
for (const name of ['getBuiltinModule', 'binding', '_linkedBinding', 'dlopen']) {
  Reflect.deleteProperty(process, name);
}
const refuse = () => {
  throw new Error('no modules in the Python sandbox');
};
// Emscripten's sockets are WebSockets from its own `require('ws')`: loading any module fails from now.
Reflect.set(Module, '_load', refuse);
Object.defineProperty(globalThis, 'require', { value: refuse });
// Code generation from strings is off for the process; the constructors go too (`x.constructor.constructor`).
const kinds = [
  function plain() {},
  async function asynchronous() {},
  function* generator() {},
  async function* both() {},
];
for (const kind of kinds) {
  Object.defineProperty(Object.getPrototypeOf(kind), 'constructor', { value: undefined });
}
Reflect.deleteProperty(globalThis, 'eval');

let stdout = '';
let stderr = '';
/** @param {string} current @param {string} line */
const append = (current, line) =>
  current.length >= settings.maxOutputChars ? current : `${current}${line}\n`.slice(0, settings.maxOutputChars);
pyodide.setStdout({ batched: (line) => (stdout = append(stdout, line)) });
pyodide.setStderr({ batched: (line) => (stderr = append(stderr, line)) });

// The Pyodide API object is Python's `pyodide_js` module (which `del sys.modules[...]` brings back):
// it could mount host directories, load packages or reach Emscripten's Module. Everything this
// process needs from it is held above, so it is emptied.
for (
  let target = /** @type {object | null} */ (pyodide);
  target && target !== Function.prototype && target !== Object.prototype;
) {
  for (const name of Reflect.ownKeys(target)) {
    if (name === 'prototype' || name === 'length' || name === 'name') continue;
    try {
      Object.defineProperty(target, name, { value: undefined, writable: false, configurable: false });
    } catch {
      Reflect.deleteProperty(target, name);
    }
  }
  target = Object.getPrototypeOf(target);
}

/** @param {Job} job @returns {Message} */
const answer = (job) => {
  try {
    const resultJson = /** @type {string} */ (runStep(job.code, job.inputsJson));
    if (memoryRefused) return { kind: 'memory', message: 'memory limit', stdout, stderr };
    const bytes = Buffer.byteLength(resultJson);
    if (bytes > settings.maxResultBytes) return { kind: 'result-size', bytes, stdout, stderr };
    return { ok: true, resultJson, stdout, stderr };
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    // Pyodide's PythonError message is the traceback; its last line names the exception.
    const lines = text.trim().split('\n');
    const last =
      lines.findLast((line) => /^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b/.test(line)) ?? lines.at(-1) ?? text;
    const kind = memoryRefused || /^MemoryError\b/.test(last) ? 'memory' : 'exception';
    return { kind, message: last, stdout, stderr };
  }
};

// One job: the parent writes it on stdin as one line of JSON, once this process is ready.
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  input += chunk;
  const end = input.indexOf('\n');
  if (end < 0) return;
  process.stdin.pause();
  send(answer(JSON.parse(input.slice(0, end))));
  // The parent kills it anyway; this process never serves a second run.
  process.exit(0);
});
// The parent gone (its end of stdin closed): nothing to wait for.
process.stdin.on('end', () => process.exit(0));
send({ ready: true });
