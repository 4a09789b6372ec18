/**
 * Runs PythonSandbox steps' code in Pyodide, each run in a process of its own inside the operating
 * system's box (`box.ts`), within a wall-clock and memory limits, capturing stdout and stderr. No
 * process outlives its run or serves two: nothing one run leaves (a patched module, a trace hook, a
 * file, `os.environ`, or JavaScript it reached) is there for the next, another team's maybe.
 *
 * By default every process loads Pyodide in full, so each run's Python draws its own string-hash
 * seed (about 3 s of cpu a run). With `snapshots` (a stage's `pythonSnapshots`), the container's
 * first process hands back a memory snapshot of the pristine interpreter, written to a private file
 * (mode 0400) later processes may only read; they start from it (about 0.6 s of cpu), sharing its
 * seed (docs/decisions.md weighs the two). The next run's process is started as soon as a run ends.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pythonBoxFiles, pythonRuntimeFiles } from '../../platform/beside-files.ts';
import { envNames } from '../../platform/definitions.ts';
import { type Box, type BoxFiles, type BoxLimits, type BoxOutcome, startBox } from './box.ts';
import {
  type PythonAnswer,
  type PythonFailure,
  type PythonRequest,
  type PythonRun,
  pythonMaxResultBytes,
} from './protocol.ts';

export type PythonRunnerLimits = Omit<BoxLimits, 'maxResultBytes'>;

export const defaultPythonLimits: PythonRunnerLimits = {
  memoryMb: 256,
  jsHeapMb: 256,
  // The interpreter's 256 MB, its JavaScript heap's use and Node and Pyodide themselves (about
  // 150 MB resident), within the function's 1024 MB beside the runner's own process.
  processMemoryMb: 640,
  maxOutputChars: 64 * 1024,
};

/**
 * Where the child's script and Pyodide's files are: beside the bundle when deployed (copied when it
 * is built, `lib/bundling.ts`), in the repository and node_modules when run from source. Real paths:
 * the permission model compares the files opened with them.
 */
const boxFiles = (): BoxFiles => {
  const fromSource = import.meta.url.endsWith('.ts');
  const here = dirname(fileURLToPath(import.meta.url));
  const pyodide = fromSource
    ? dirname(createRequire(import.meta.url).resolve('pyodide/pyodide.mjs'))
    : join(here, pythonRuntimeFiles.dir);
  const childScript = fromSource ? join(here, 'child.mjs') : join(here, pythonBoxFiles.dir, 'child.mjs');
  return { indexPath: `${realpathSync(pyodide)}/`, childScript: realpathSync(childScript) };
};

/** The answer of a run from how its process ended. */
const answerOf = (outcome: BoxOutcome, request: PythonRequest, limits: PythonRunnerLimits): PythonAnswer => {
  const fail = (error: PythonFailure, message: string, out = { stdout: '', stderr: '' }) =>
    ({ ok: false, error, message, ...out }) satisfies PythonAnswer;
  if ('killed' in outcome) {
    if (outcome.killed === 'timeout') return fail('timeout', `timed out after ${request.timeoutMs} ms`);
    if (outcome.killed === 'memory')
      return fail('memory', `exceeded the ${limits.processMemoryMb} MB memory limit of its process`);
    if (outcome.killed === 'heap')
      return fail('memory', `exceeded the ${limits.jsHeapMb} MB memory limit of its JavaScript heap`);
    return fail('exception', `the Python runtime stopped: ${outcome.detail}`);
  }
  const message = outcome.answered;
  if ('ready' in message) return fail('exception', 'the Python runtime answered out of turn');
  const out = { stdout: String(message.stdout ?? ''), stderr: String(message.stderr ?? '') };
  if ('ok' in message) {
    // Checked again here: the child is not trusted once user code ran in it.
    const bytes = Buffer.byteLength(message.resultJson);
    if (bytes > pythonMaxResultBytes) return fail('result-size', resultSizeMessage(bytes), out);
    return { ok: true, result: JSON.parse(message.resultJson) as unknown, ...out };
  }
  if (message.kind === 'result-size') return fail('result-size', resultSizeMessage(message.bytes), out);
  if (message.kind === 'memory') return fail('memory', `exceeded the ${limits.memoryMb} MB memory limit`, out);
  return fail('exception', `raised ${message.message || 'an exception'}`, out);
};

const resultSizeMessage = (bytes: number) =>
  `the result is ${(bytes / 1024).toFixed(1)} KB of JSON, over the ${pythonMaxResultBytes / 1024} KB limit`;

interface Live {
  box: Box;
  /** Loaded (and, for a full load, its snapshot saved): ready for its one job. */
  ready: Promise<void>;
  fromSnapshot: boolean;
}

export interface PythonRunnerOptions {
  /** Start each process after the first from a snapshot of the first: cheaper, one hash seed per container. */
  snapshots?: boolean;
}

/** `PYTHON_SNAPSHOTS=true` (set by the stack from the stage's `pythonSnapshots`) turns snapshots on. */
export const pythonRunnerOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): PythonRunnerOptions => ({
  snapshots: env[envNames.pythonSnapshots] === 'true',
});

/**
 * A runner over a fresh process per run; `run` queues requests (one runs at a time), `close` stops
 * the process waiting for the next run and removes the snapshot. `loads` counts the processes
 * started (full loads and from the snapshot).
 */
export const createPythonRunner = (
  limits: PythonRunnerLimits = defaultPythonLimits,
  options: PythonRunnerOptions = {},
) => {
  const files = boxFiles();
  /** The next run's process: loading or ready, never used. */
  let live: Live | undefined;
  /** The pristine interpreter's snapshot, once the first process handed it over. */
  let snapshot: { dir: string; path: string } | undefined;
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();
  const loads = { full: 0, fromSnapshot: 0 };

  const dropSnapshot = () => {
    if (snapshot) rmSync(snapshot.dir, { recursive: true, force: true });
    snapshot = undefined;
  };
  const saveSnapshot = (bytes: Buffer) => {
    if (snapshot) return;
    // A directory only this user may enter, and a file no one may write: children read it, nothing alters it.
    const dir = mkdtempSync(join(tmpdir(), 'python-snapshot-'));
    const path = join(dir, 'pyodide.snapshot');
    try {
      writeFileSync(path, bytes, { mode: 0o400, flag: 'wx' });
      snapshot = { dir, path };
    } catch {
      rmSync(dir, { recursive: true, force: true }); // no snapshot: the next process loads in full
    }
  };
  process.once('exit', dropSnapshot);

  const start = (): Live => {
    const fromSnapshot = snapshot !== undefined;
    if (fromSnapshot) loads.fromSnapshot += 1;
    else loads.full += 1;
    const box = startBox({
      files,
      limits: { ...limits, maxResultBytes: pythonMaxResultBytes },
      ...(snapshot ? { snapshotPath: snapshot.path } : {}),
      makeSnapshot: options.snapshots === true,
    });
    const ready = box.ready.then((loaded) => {
      // Only a full load hands one over, before any user code ran in it.
      if (loaded.snapshot && !fromSnapshot) saveSnapshot(loaded.snapshot);
    });
    ready.catch(() => undefined);
    const entry: Live = { box, ready, fromSnapshot };
    void box.exited.then(() => {
      if (live === entry) live = undefined;
    });
    return entry;
  };

  /** A used process is killed, and the next run's started once it is gone (never two at once). */
  const retire = (entry: Live) => {
    void entry.box.kill().then(() => {
      if (!closed) live ??= start();
    });
  };

  /** Waits for a process to load, holding this one alive meanwhile (the process itself does not). */
  const loaded = async (entry: Live) => {
    const hold = setInterval(() => undefined, 60_000);
    try {
      await entry.ready;
    } finally {
      clearInterval(hold);
    }
  };

  const runOnce = async (request: PythonRequest): Promise<PythonAnswer> => {
    closed = false;
    live ??= start();
    const entry = live;
    // This process is this run's alone: the next run gets another.
    live = undefined;
    try {
      await loaded(entry);
    } catch (error) {
      // A process that could not start from the snapshot: the next one loads in full and makes a new one.
      if (entry.fromSnapshot) dropSnapshot();
      await entry.box.kill();
      throw error;
    }
    const outcome = await entry.box.run(
      { code: request.code, inputsJson: JSON.stringify(request.inputs) },
      request.timeoutMs,
    );
    retire(entry);
    return answerOf(outcome, request, limits);
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
    await loaded(live);
  };

  const close = async () => {
    closed = true;
    const entry = live;
    live = undefined;
    await entry?.box.kill();
    dropSnapshot();
  };

  return { run, warm, close, loads };
};

export type PythonRunner = ReturnType<typeof createPythonRunner>;
