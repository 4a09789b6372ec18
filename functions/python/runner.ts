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
import { type NetworkNamespaceMode, type NetworkWall, networkNamespace } from './network-namespace.ts';
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
  /**
   * `required` (the default): each process starts in a network namespace of its own, and without one
   * no Python runs; `optional`: in the machine's network when it allows no namespace (the deployed
   * function, whose isolated VPC has no route anywhere).
   */
  network?: NetworkNamespaceMode;
  /** Runs at once, each in its own process (default 1: a Lambda container serves one invocation at a time). */
  concurrency?: number;
  /** How the machine's network namespace is found (tests give their own). */
  findNetworkNamespace?: () => NetworkWall;
}

/**
 * `PYTHON_SNAPSHOTS=true` (set by the stack from the stage's `pythonSnapshots`) turns snapshots on;
 * `PYTHON_NETWORK_NAMESPACE=optional` (set by the stack: the function's VPC is its network wall) lets
 * runs go ahead where no namespace can be made.
 */
export const pythonRunnerOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env): PythonRunnerOptions => ({
  snapshots: env[envNames.pythonSnapshots] === 'true',
  network: env[envNames.pythonNetworkNamespace] === 'optional' ? 'optional' : 'required',
});

/**
 * A runner over a fresh process per run; `run` runs up to `concurrency` requests at once and queues
 * the rest, serving teams in turn and each team's runs in order, `close` stops the process waiting for the next run and removes the snapshot.
 * `loads` counts the processes started (full loads and from the snapshot); `running` the runs whose
 * code is running now.
 */
export const createPythonRunner = (
  limits: PythonRunnerLimits = defaultPythonLimits,
  options: PythonRunnerOptions = {},
) => {
  const files = boxFiles();
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  const network = options.network ?? 'required';
  let wall: NetworkWall | undefined;
  const networkWall = () => {
    wall ??= (options.findNetworkNamespace ?? networkNamespace)();
    return wall;
  };
  /** The next run's process: loading or ready, never used. */
  let live: Live | undefined;
  /** The pristine interpreter's snapshot, once the first process handed it over. */
  let snapshot: { dir: string; path: string } | undefined;
  let closed = false;
  /** Runs holding a place (loading their process or running). */
  let active = 0;
  /**
   * Runs waiting for a place, by team (each team's in the order they came), the places each team
   * holds, and when each team last got one. A freed place goes to the waiting team holding the
   * fewest places, then to the one served longest ago: a team with 50 waiting runs never holds
   * another team's one run behind them. Only teams waiting or holding a place are remembered.
   */
  const waiting = new Map<string, Array<() => void>>();
  const held = new Map<string, number>();
  const lastServed = new Map<string, number>();
  let served = 0;
  const take = (team: string) => {
    held.set(team, (held.get(team) ?? 0) + 1);
    lastServed.set(team, ++served);
  };
  const give = (team: string) => {
    const left = (held.get(team) ?? 1) - 1;
    if (left > 0) held.set(team, left);
    else held.delete(team);
    if (left === 0 && !waiting.has(team)) lastServed.delete(team);
  };
  const wait = (team: string) =>
    new Promise<void>((resolve) => {
      const queue = waiting.get(team);
      if (queue) queue.push(resolve);
      else waiting.set(team, [resolve]);
    });
  /** The next waiting run, its place taken for its team; undefined when none waits. */
  const nextWaiting = (): (() => void) | undefined => {
    let chosen: string | undefined;
    const rank = (team: string) => [held.get(team) ?? 0, lastServed.get(team) ?? 0] as const;
    for (const team of waiting.keys()) {
      if (chosen === undefined) chosen = team;
      else {
        const [places, at] = rank(team);
        const [bestPlaces, bestAt] = rank(chosen);
        if (places < bestPlaces || (places === bestPlaces && at < bestAt)) chosen = team;
      }
    }
    if (chosen === undefined) return undefined;
    const queue = waiting.get(chosen) ?? [];
    const next = queue.shift();
    if (queue.length === 0) waiting.delete(chosen);
    take(chosen);
    return next;
  };
  const loads = { full: 0, fromSnapshot: 0 };
  const state = { running: 0 };

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

  const start = (prefix: string[]): Live => {
    const fromSnapshot = snapshot !== undefined;
    if (fromSnapshot) loads.fromSnapshot += 1;
    else loads.full += 1;
    const box = startBox({
      files,
      limits: { ...limits, maxResultBytes: pythonMaxResultBytes },
      ...(snapshot ? { snapshotPath: snapshot.path } : {}),
      makeSnapshot: options.snapshots === true,
      networkPrefix: prefix,
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

  /** A used process is killed, and the next run's started once it is gone. */
  const retire = (entry: Live, prefix: string[]) => {
    void entry.box.kill().then(() => {
      if (!closed) live ??= start(prefix);
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

  const runOnce = async (request: PythonRequest, prefix: string[]): Promise<PythonAnswer> => {
    closed = false;
    // The waiting process if there is one, else one of this run's own (others are running).
    const entry = live ?? start(prefix);
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
    state.running += 1;
    const outcome = await entry.box
      .run({ code: request.code, inputsJson: JSON.stringify(request.inputs) }, request.timeoutMs)
      .finally(() => {
        state.running -= 1;
      });
    retire(entry, prefix);
    return answerOf(outcome, request, limits);
  };

  /** The command line each child starts under, or the refusal when the network wall is required and missing. */
  const prefixOrRefusal = (): { prefix: string[] } | { refusal: PythonAnswer } => {
    const found = networkWall();
    if ('prefix' in found) return found;
    if (network === 'optional') return { prefix: [] };
    const message =
      `the Python sandbox cannot cut its process off the network: ${found.unavailable}. ` +
      `Set ${envNames.pythonNetworkNamespace}=optional to run Python in this machine's network (docs/operations.md)`;
    return { refusal: { ok: false, error: 'exception', message, stdout: '', stderr: '' } };
  };

  const run: PythonRun = async (request) => {
    const wallOrRefusal = prefixOrRefusal();
    if ('refusal' in wallOrRefusal) return wallOrRefusal.refusal;
    const team = request.teamId ?? '';
    if (active >= concurrency) await wait(team);
    else {
      active += 1;
      take(team);
    }
    try {
      return await runOnce(request, wallOrRefusal.prefix);
    } finally {
      give(team);
      // The place passes to the next waiting run of the team next in turn (`active` unchanged), or is given up.
      const next = nextWaiting();
      if (next) next();
      else active -= 1;
    }
  };

  /** Loads the interpreter now (a cold start's init), so that the first run does not pay it. */
  const warm = async () => {
    closed = false;
    const wallOrRefusal = prefixOrRefusal();
    if ('refusal' in wallOrRefusal) return;
    live ??= start(wallOrRefusal.prefix);
    await loaded(live);
  };

  const close = async () => {
    closed = true;
    const entry = live;
    live = undefined;
    await entry?.box.kill();
    dropSnapshot();
  };

  return {
    run,
    warm,
    close,
    loads,
    /** Runs whose code is running at this moment, each in its own process. */
    get running() {
      return state.running;
    },
    /** Runs waiting for a place. */
    get queued() {
      let count = 0;
      for (const queue of waiting.values()) count += queue.length;
      return count;
    },
  };
};

export type PythonRunner = ReturnType<typeof createPythonRunner>;
