/**
 * Runs a PythonSandbox step's code in Pyodide, in a worker thread, within a wall-clock and a memory
 * limit, capturing stdout and stderr. Each run has a worker (and an interpreter) of its own, retired
 * after its answer, so nothing one run leaves (a patched module, a trace hook, a file, `os.environ`)
 * reaches the next, another team's maybe. The process's first worker loads Pyodide in full and hands
 * back a snapshot of the pristine interpreter and the compiled module; later workers start from those
 * (a fraction of a second, not seconds), and the next one is started as soon as a run ends.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { pythonRuntimeFiles } from '../../lib/bundling.ts';
import type { PythonAnswer, PythonRequest, PythonRun } from './protocol.ts';
import {
  type PythonRuntimeImage,
  type PythonWorkerData,
  type PythonWorkerJob,
  type PythonWorkerReply,
  pythonWorkerSource,
} from './worker-source.ts';

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
  /** Started from the image (not a full load). */
  fromImage: boolean;
  /** Settles the run in progress when the worker dies under it. */
  onExit?: (error: Error | undefined) => void;
}

const failure = (error: 'timeout' | 'exception' | 'memory', message: string, out = { stdout: '', stderr: '' }) =>
  ({ ok: false, error, message, ...out }) satisfies PythonAnswer;

/**
 * A runner over a fresh worker per run; `run` queues requests (one runs at a time), `close` stops
 * the worker waiting for the next run. `loads` counts the workers started (full loads and from the image).
 */
export const createPythonRunner = (limits: PythonRunnerLimits = defaultPythonLimits) => {
  /** The worker for the next run: loading or ready, never used. */
  let live: LiveWorker | undefined;
  /** The pristine interpreter's snapshot and the compiled module, once the first worker posts them. */
  let image: PythonRuntimeImage | undefined;
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();
  const loads = { full: 0, fromImage: 0 };

  const start = (): LiveWorker => {
    const interrupt = new SharedArrayBuffer(4);
    const workerData: PythonWorkerData = {
      ...pyodideFiles(),
      memoryLimitBytes: limits.memoryMb * 1024 * 1024,
      maxOutputChars: limits.maxOutputChars,
      interrupt,
      // The snapshot is copied into the worker (structured clone), never shared: no worker can write
      // to the bytes the next one starts from. The compiled module is immutable code.
      ...(image ? { image } : {}),
    };
    if (image) loads.fromImage += 1;
    else loads.full += 1;
    const worker = new Worker(pythonWorkerSource, {
      eval: true,
      workerData,
      // The function's environment (its credentials among it) never reaches the interpreter.
      env: {},
      resourceLimits: { maxOldGenerationSizeMb: limits.jsHeapMb },
    });
    worker.unref();
    const entry: LiveWorker = {
      worker,
      flag: new Int32Array(interrupt),
      ready: Promise.resolve(),
      fromImage: workerData.image !== undefined,
    };
    entry.ready = new Promise<void>((resolve, reject) => {
      const onReady = (reply: PythonWorkerReply) => {
        // Only a full load posts an image, before its ready and before any user code.
        if (reply.image && !entry.fromImage) image ??= reply.image;
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

  /**
   * A used worker is stopped, and the next run's started as soon as it is gone (never both at once:
   * a used one may hold its full memory limits), to load while the runner is idle.
   */
  const retire = (entry: LiveWorker) => {
    void entry.worker
      .terminate()
      .catch(() => undefined)
      .then(() => {
        if (!closed) live ??= start();
      });
  };

  const runOnce = async (request: PythonRequest): Promise<PythonAnswer> => {
    closed = false;
    live ??= start();
    const entry = live;
    try {
      await entry.ready;
    } catch (error) {
      if (live === entry) live = undefined;
      // A worker that could not start from the image: the next one loads in full and makes a new one.
      if (entry.fromImage) image = undefined;
      await entry.worker.terminate();
      throw error;
    }
    // This worker is this run's alone: the next run gets another.
    if (live === entry) live = undefined;
    const answer = await new Promise<PythonAnswer>((resolve) => {
      let timedOut = false;
      let grace: NodeJS.Timeout | undefined;
      const timer = setTimeout(() => {
        timedOut = true;
        Atomics.store(entry.flag, 0, 2); // SIGINT: Python raises KeyboardInterrupt at its next check
        grace = setTimeout(() => void entry.worker.terminate(), limits.graceMs);
      }, request.timeoutMs);
      const done = (answer: PythonAnswer) => {
        clearTimeout(timer);
        clearTimeout(grace);
        entry.worker.off('message', onMessage);
        entry.onExit = undefined;
        resolve(answer);
      };
      const onMessage = (reply: PythonWorkerReply) => {
        if (reply.ready || reply.image) return;
        const out = { stdout: reply.stdout, stderr: reply.stderr };
        if (reply.ok) return done({ ok: true, result: JSON.parse(reply.resultJson ?? 'null') as unknown, ...out });
        if (reply.kind === 'timeout' || timedOut)
          return done(failure('timeout', `timed out after ${request.timeoutMs} ms`, out));
        if (reply.kind === 'memory')
          return done(failure('memory', `exceeded the ${limits.memoryMb} MB memory limit`, out));
        return done(failure('exception', `raised ${reply.message ?? 'an exception'}`, out));
      };
      entry.onExit = (error) => {
        if (timedOut) return done(failure('timeout', `timed out after ${request.timeoutMs} ms`));
        if (error && 'code' in error && error.code === 'ERR_WORKER_OUT_OF_MEMORY')
          return done(failure('memory', `exceeded the ${limits.jsHeapMb} MB memory limit`));
        done(failure('exception', `the Python runtime stopped${error ? `: ${error.message}` : ''}`));
      };
      entry.worker.on('message', onMessage);
      entry.worker.postMessage({
        code: request.code,
        inputsJson: JSON.stringify(request.inputs),
      } satisfies PythonWorkerJob);
    });
    retire(entry);
    return answer;
  };

  const run: PythonRun = (request) => {
    const next = queue.then(() => runOnce(request));
    queue = next.catch(() => undefined);
    return next;
  };

  /** Loads the interpreter now (a cold start's init), so that the first run does not pay it. */
  const warm = async () => {
    closed = false;
    live ??= start();
    await live.ready;
  };

  const close = async () => {
    closed = true;
    const entry = live;
    live = undefined;
    if (entry) await entry.worker.terminate();
  };

  return { run, warm, close, loads };
};

export type PythonRunner = ReturnType<typeof createPythonRunner>;
