/**
 * The worker thread that holds the Python interpreter (Pyodide) for ONE run. It is started from this
 * function's source text (`new Worker(source, { eval: true })`), so the function's bundle needs no
 * second entry: the function below must stay self-contained (it reads nothing from its module, and
 * imports only Node built-ins and Pyodide, at run time).
 *
 * A container's first worker loads Pyodide in full (seconds of cpu), then, before any user code,
 * hands the parent a memory snapshot of that pristine interpreter and the compiled WebAssembly
 * module. Every later worker starts from those (a new thread, a new JavaScript realm, a new
 * WebAssembly memory copied from the snapshot, a new in-memory file system): nothing a run changed
 * is there for the next one.
 */

/** A compiled `WebAssembly.Module` (this project's lib has no WebAssembly types): shared, immutable code. */
export type CompiledWasm = object;

/** What the first worker hands the parent, and every later worker starts from. */
export interface PythonRuntimeImage {
  /** Pyodide's memory snapshot of the interpreter as loaded, before any user code ran. */
  snapshot: Uint8Array;
  /** `pyodide.asm.wasm`, compiled once per process. */
  wasmModule: CompiledWasm;
}

/** What the worker is started with. */
export interface PythonWorkerData {
  /** File URL of `pyodide.mjs`. */
  pyodideModule: string;
  /** Directory (with a trailing slash) holding `pyodide.asm.wasm`, `python_stdlib.zip` and the lock file. */
  indexPath: string;
  /** Largest the interpreter's WebAssembly memory may grow to, in bytes. */
  memoryLimitBytes: number;
  /** Characters of stdout and of stderr kept per run. */
  maxOutputChars: number;
  /** Int32 flag Python polls: the parent writes 2 (SIGINT) into it when the time is up. */
  interrupt: SharedArrayBuffer;
  /** Start from this image (its snapshot is this worker's own copy); without it, load in full and post one. */
  image?: PythonRuntimeImage;
}

/** A run the parent posts. */
export interface PythonWorkerJob {
  code: string;
  inputsJson: string;
}

/**
 * What the worker posts back: `{ image }` (a full load only) then `{ ready: true }` once loaded, then
 * the answer to its one job.
 */
export type PythonWorkerReply =
  | { ready: true; image?: undefined }
  | { ready?: undefined; image: PythonRuntimeImage }
  | {
      ready?: undefined;
      image?: undefined;
      ok: boolean;
      /** JSON text of `result` when ok. */
      resultJson?: string;
      kind?: 'exception' | 'timeout' | 'memory';
      message?: string;
      stdout: string;
      stderr: string;
    };

/** Runs inside the worker. Written as one function so that its text is the worker's whole script. */
const pythonWorkerMain = async () => {
  // Built-ins through getBuiltinModule and Pyodide through a compiled import(): bundlers and test
  // runners rewrite `import()` and `require()` in this text, which then would not run on its own.
  const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
  const cjs = process.getBuiltinModule('node:module') as unknown as { _load: unknown };
  const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;
  const data = workerData as PythonWorkerData;
  const port = parentPort;
  if (!port) return;

  // Memory: Pyodide's heap is one WebAssembly.Memory it grows on demand. Refusing to grow it past the
  // limit makes malloc fail, which Python raises as MemoryError, instead of the process dying.
  let memoryRefused = false;
  interface WasmMemory {
    buffer: ArrayBuffer;
    grow(delta: number): number;
  }
  interface Wasm {
    Memory: { prototype: WasmMemory };
    instantiate(source: unknown, imports: unknown): Promise<unknown>;
  }
  const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;
  const memory = wasm.Memory;
  const grow = memory.prototype.grow;
  memory.prototype.grow = function limitedGrow(this: WasmMemory, delta: number) {
    if (this.buffer.byteLength + delta * 65_536 > data.memoryLimitBytes) {
      memoryRefused = true;
      throw new RangeError('memory limit');
    }
    return grow.call(this, delta);
  };

  // Network: nothing the code could reach from `js` or the Pyodide API may open a connection.
  for (const name of ['fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource', 'Request', 'Response', 'Headers']) {
    Reflect.deleteProperty(globalThis, name);
  }

  // The compiled module: Pyodide instantiates `pyodide.asm.wasm` from its bytes (compiling 9.6 MB);
  // given the one compiled before, it is only instantiated. A full load keeps the module it compiled.
  let wasmModule = data.image?.wasmModule;
  const instantiate = wasm.instantiate;
  wasm.instantiate = async (source: unknown, imports: unknown) => {
    const bytes = source instanceof ArrayBuffer || ArrayBuffer.isView(source) ? source.byteLength : 0;
    if (bytes < 1_000_000) return instantiate.call(wasm, source, imports); // not the interpreter
    if (wasmModule) return { module: wasmModule, instance: await instantiate.call(wasm, wasmModule, imports) };
    const compiled = (await instantiate.call(wasm, source, imports)) as { module: object };
    wasmModule = compiled.module;
    return compiled;
  };

  const { loadPyodide } = (await importModule(data.pyodideModule)) as {
    loadPyodide: (options: Record<string, unknown>) => Promise<PyodideApi>;
  };
  interface PyodideApi {
    runPython(code: string): unknown;
    makeMemorySnapshot(): Uint8Array;
    globals: { get(name: string): (...args: unknown[]) => unknown };
    setStdout(options: { batched: (line: string) => void }): void;
    setStderr(options: { batched: (line: string) => void }): void;
    setInterruptBuffer(buffer: Int32Array): void;
    checkInterrupt(): void;
  }
  const pyodide = await loadPyodide({
    indexURL: data.indexPath,
    // The `js` module sees this empty object, not the worker's globals.
    jsglobals: Object.create(null) as object,
    env: { HOME: '/home/pyodide' },
    // No package is ever installed: nothing names one, and this refuses the default CDN.
    packages: [],
    checkAPIVersion: true,
    ...(data.image ? { _loadSnapshot: data.image.snapshot } : { _makeSnapshot: true }),
  });
  wasm.instantiate = instantiate;

  if (!data.image) {
    // The runner's own Python, in the snapshot: `inputs` from JSON, `result` back as JSON. It holds
    // the json module it was defined with, so a run that patches `json` changes nothing it does.
    pyodide.runPython(`
import json as _json, sys as _sys
for _name in ('micropip', 'pyodide_js', 'pyodide.http'):
    _sys.modules[_name] = None
def _run_step(code, inputs_json, loads=_json.loads, dumps=_json.dumps):
    scope = {'__name__': '__main__', '__builtins__': __builtins__, 'inputs': loads(inputs_json)}
    exec(compile(code, '<step>', 'exec'), scope)
    try:
        return dumps(scope.get('result'), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f'result is not JSON: {error}') from None
`);
    const snapshot = pyodide.makeMemorySnapshot();
    if (wasmModule)
      port.postMessage({ image: { snapshot, wasmModule } } satisfies PythonWorkerReply, [
        snapshot.buffer as ArrayBuffer,
      ]);
  }
  // Every worker starts from the same bytes: the random module (imported by Pyodide's bootstrap) is
  // reseeded from the system's randomness, so no two runs share a sequence.
  pyodide.runPython(`import sys as _sys
if 'random' in _sys.modules:
    _sys.modules['random'].seed()
del _sys`);
  const flag = new Int32Array(data.interrupt);
  pyodide.setInterruptBuffer(flag);
  const runStep = pyodide.globals.get('_run_step');

  // Node's ways to reach modules, the file system or the network, removed before any user code runs:
  // Pyodide's `require` (fs, ws, child_process), CommonJS loading, process's module loaders, and the constructor
  // of every kind of function (`anything.constructor.constructor('…')()` would compile new code).
  const processObject = process as unknown as Record<string, unknown>;
  for (const name of ['getBuiltinModule', 'binding', '_linkedBinding', 'dlopen']) {
    Reflect.deleteProperty(processObject, name);
  }
  // Emscripten's sockets are WebSockets from its own `require('ws')`: loading any module fails from now.
  cjs._load = () => {
    throw new Error('no modules in the Python sandbox');
  };
  Object.defineProperty(globalThis, 'require', {
    value: () => {
      throw new Error('no modules in the Python sandbox');
    },
  });
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
  const append = (current: string, line: string) =>
    current.length >= data.maxOutputChars ? current : `${current}${line}\n`.slice(0, data.maxOutputChars);
  pyodide.setStdout({ batched: (line) => (stdout = append(stdout, line)) });
  pyodide.setStderr({ batched: (line) => (stderr = append(stderr, line)) });

  // The Pyodide API object is Python's `pyodide_js` module (which `del sys.modules[...]` brings
  // back): it could mount host directories (`mountNodeFS('/x', '/proc')`), load packages or reach
  // Emscripten's Module. Everything the worker needs from it is held above, so it is emptied.
  for (let target: object | null = pyodide; target && target !== Function.prototype && target !== Object.prototype; ) {
    for (const name of Reflect.ownKeys(target)) {
      if (name === 'prototype' || name === 'length' || name === 'name') continue;
      try {
        Object.defineProperty(target, name, { value: undefined, writable: false, configurable: false });
      } catch {
        Reflect.deleteProperty(target, name);
      }
    }
    target = Object.getPrototypeOf(target) as object | null;
  }

  // One job per worker: the parent retires it after the answer (and would never post a second).
  port.once('message', (job: PythonWorkerJob) => {
    stdout = '';
    stderr = '';
    memoryRefused = false;
    Atomics.store(flag, 0, 0);
    let reply: PythonWorkerReply;
    try {
      const resultJson = runStep(job.code, job.inputsJson) as string;
      reply = memoryRefused
        ? { ok: false, kind: 'memory', message: 'memory limit', stdout, stderr }
        : { ok: true, resultJson, stdout, stderr };
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      // Pyodide's PythonError message is the traceback; its last line names the exception.
      const lines = text.trim().split('\n');
      const last =
        lines.findLast((line) => /^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b/.test(line)) ??
        lines.at(-1) ??
        text;
      const kind =
        memoryRefused || /^MemoryError\b/.test(last)
          ? 'memory'
          : /^KeyboardInterrupt\b/.test(last)
            ? 'timeout'
            : 'exception';
      reply = { ok: false, kind, message: last, stdout, stderr };
    }
    Atomics.store(flag, 0, 0);
    port.postMessage(reply);
  });
  port.postMessage({ ready: true } satisfies PythonWorkerReply);
};

/** The worker's script: the function above, called. */
export const pythonWorkerSource = `(${pythonWorkerMain.toString()})().catch((error) => { throw error; });`;
