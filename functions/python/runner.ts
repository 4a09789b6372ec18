/**
 * Runs a PythonSandbox step's code in Pyodide, in a worker thread, within a wall-clock and a memory
 * limit, capturing stdout and stderr. One interpreter is kept warm per process (each run gets fresh
 * globals); a worker that had to be stopped is replaced on the next run.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { pythonRuntimeFiles } from '../../lib/bundling.ts';
import type { PythonAnswer, PythonRequest, PythonRun } from './protocol.ts';
import { type PythonWorkerData, type PythonWorkerReply, pythonWorkerSource } from './worker-source.ts';

export interface PythonRunnerLimits {
  /** Largest the interpreter's WebAssembly heap may grow to. */
  memoryMb: number;
  /** The worker's JavaScript heap (V8 `resourceLimits`). */
  jsHeapMb: number;
  /** Characters of stdout and of stderr kept per run. */
  maxOutputChars: number;
  /** After the time is up, how long Python has to stop on the interrupt before its worker is terminated. */
  graceMs: number;
}

export const defaultPythonLimits: PythonRunnerLimits = {
  memoryMb: 256,
  jsHeapMb: 256,
  maxOutputChars: 64 * 1024,
  graceMs: 1000,
};

/**
 * Where Pyodide's files are: beside the bundle when deployed (`pythonRuntimeFiles`, copied when it
 * is built), the package in node_modules when run from source.
 */
const runningFromSource = import.meta.url.endsWith('.ts');
const pyodideFiles = () => {
  const module = runningFromSource
    ? pathToFileURL(createRequire(import.meta.url).resolve('pyodide/pyodide.mjs'))
    : new URL(`./${pythonRuntimeFiles.dir}/pyodide.mjs`, import.meta.url);
  return { pyodideModule: module.href, indexPath: new URL('./', module).pathname };
};

interface LiveWorker {
  worker: Worker;
  flag: Int32Array;
  ready: Promise<void>;
  /** Settles the run in progress when the worker dies under it. */
  onExit?: (error: Error | undefined) => void;
}

const failure = (error: 'timeout' | 'exception' | 'memory', message: string, out = { stdout: '', stderr: '' }) =>
  ({ ok: false, error, message, ...out }) satisfies PythonAnswer;

/** A runner over one warm worker; `run` queues requests (one runs at a time), `close` stops the worker. */
export const createPythonRunner = (limits: PythonRunnerLimits = defaultPythonLimits) => {
  let live: LiveWorker | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  const start = (): LiveWorker => {
    const interrupt = new SharedArrayBuffer(4);
    const workerData: PythonWorkerData = {
      ...pyodideFiles(),
      memoryLimitBytes: limits.memoryMb * 1024 * 1024,
      maxOutputChars: limits.maxOutputChars,
      interrupt,
    };
    const worker = new Worker(pythonWorkerSource, {
      eval: true,
      workerData,
      // The function's environment (its credentials among it) never reaches the interpreter.
      env: {},
      resourceLimits: { maxOldGenerationSizeMb: limits.jsHeapMb },
    });
    worker.unref();
    const entry: LiveWorker = { worker, flag: new Int32Array(interrupt), ready: Promise.resolve() };
    entry.ready = new Promise<void>((resolve, reject) => {
      const onReady = (reply: PythonWorkerReply) => {
        if (reply.ready) {
          worker.off('message', onReady);
          resolve();
        }
      };
      worker.on('message', onReady);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the Python runtime stopped while loading (exit ${code})`)));
    });
    entry.ready.catch(() => undefined);
    let lastError: Error | undefined;
    worker.on('error', (error) => {
      lastError = error;
    });
    worker.on('exit', () => {
      if (live === entry) live = undefined;
      entry.onExit?.(lastError);
    });
    return entry;
  };

  const runOnce = async (request: PythonRequest): Promise<PythonAnswer> => {
    live ??= start();
    const entry = live;
    try {
      await entry.ready;
    } catch (error) {
      live = undefined;
      await entry.worker.terminate();
      throw error;
    }
    return new Promise<PythonAnswer>((resolve) => {
      let timedOut = false;
      let grace: NodeJS.Timeout | undefined;
      const timer = setTimeout(() => {
        timedOut = true;
        Atomics.store(entry.flag, 0, 2); // SIGINT: Python raises KeyboardInterrupt at its next check
        grace = setTimeout(() => {
          live = undefined;
          void entry.worker.terminate();
        }, limits.graceMs);
      }, request.timeoutMs);
      const done = (answer: PythonAnswer) => {
        clearTimeout(timer);
        clearTimeout(grace);
        entry.worker.off('message', onMessage);
        entry.onExit = undefined;
        resolve(answer);
      };
      const onMessage = (reply: PythonWorkerReply) => {
        if (reply.ready) return;
        const out = { stdout: reply.stdout, stderr: reply.stderr };
        if (reply.ok) return done({ ok: true, result: JSON.parse(reply.resultJson ?? 'null') as unknown, ...out });
        if (reply.kind === 'timeout' || timedOut)
          return done(failure('timeout', `timed out after ${request.timeoutMs} ms`, out));
        if (reply.kind === 'memory') {
          // An interpreter that ran out of memory may be left in any state: the next run gets a new one.
          if (live === entry) live = undefined;
          void entry.worker.terminate();
          return done(failure('memory', `exceeded the ${limits.memoryMb} MB memory limit`, out));
        }
        return done(failure('exception', `raised ${reply.message ?? 'an exception'}`, out));
      };
      entry.onExit = (error) => {
        if (timedOut) return done(failure('timeout', `timed out after ${request.timeoutMs} ms`));
        if (error && 'code' in error && error.code === 'ERR_WORKER_OUT_OF_MEMORY')
          return done(failure('memory', `exceeded the ${limits.jsHeapMb} MB memory limit`));
        done(failure('exception', `the Python runtime stopped${error ? `: ${error.message}` : ''}`));
      };
      entry.worker.on('message', onMessage);
      entry.worker.postMessage({ code: request.code, inputsJson: JSON.stringify(request.inputs) });
    });
  };

  const run: PythonRun = (request) => {
    const next = queue.then(() => runOnce(request));
    queue = next.catch(() => undefined);
    return next;
  };

  /** Loads the interpreter now (a cold start's init), so that the first run does not pay it. */
  const warm = async () => {
    live ??= start();
    await live.ready;
  };

  const close = async () => {
    const entry = live;
    live = undefined;
    if (entry) await entry.worker.terminate();
  };

  return { run, warm, close };
};

export type PythonRunner = ReturnType<typeof createPythonRunner>;
