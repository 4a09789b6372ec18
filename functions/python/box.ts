/**
 * One Python child process in the operating system's box, for ONE run: started in a network
 * namespace of its own where the machine allows one (`network-namespace.ts`), with Node's
 * permission model (reads Pyodide's files, its own script and the snapshot; nothing else, no child
 * process, worker, addon, WASI or write), code generation from strings off, an empty environment and a
 * JavaScript heap limit; while it runs a job its resident memory is watched and its time counted, and
 * either one over its limit kills it (SIGKILL). Everything it writes back is bounded and checked here.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import type { PythonChildJob, PythonChildMessage, PythonChildSettings } from './child-protocol.ts';
import { FrameError, frameReader } from './frames.ts';
import { watchMemory } from './memory-watch.ts';

export interface BoxFiles {
  /** Directory (with a trailing slash) of Pyodide's files. */
  indexPath: string;
  /** `child.mjs`, the child's script. */
  childScript: string;
}

export interface BoxLimits {
  /** The interpreter's WebAssembly memory (the child refuses to grow it further: MemoryError). */
  memoryMb: number;
  /** The child's JavaScript heap (`--max-old-space-size`). */
  jsHeapMb: number;
  /** The whole process's resident memory, ArrayBuffers included: over it, the child is killed. */
  processMemoryMb: number;
  maxOutputChars: number;
  maxResultBytes: number;
}

export interface BoxOptions {
  files: BoxFiles;
  limits: BoxLimits;
  /** Start from this snapshot file; without it, load in full. */
  snapshotPath?: string;
  /** A full load hands back a snapshot of its pristine interpreter (`ready` resolves with it). */
  makeSnapshot?: boolean;
  /**
   * The command the child's node is started under: `unshare … --` for a network namespace of its own
   * (`network-namespace.ts`); empty, it shares this process's network.
   */
  networkPrefix?: string[];
}

/** How a job ended: the child's answer, or the child gone (killed over a limit, or dead on its own). */
export type BoxOutcome =
  | { answered: PythonChildMessage }
  | { killed: 'timeout' | 'memory' | 'heap' | 'crash'; detail: string };

/** How often the resident memory is read while a job runs. */
const memoryWatchMs = 5;
/** The largest message: a result at its limit escaped once more, and both outputs at their limit. */
const maxMessageBytes = (limits: BoxLimits) => 2 * limits.maxResultBytes + 12 * limits.maxOutputChars + 64 * 1024;
/** The largest snapshot accepted (the pristine interpreter's is about 31 MB). */
const maxSnapshotBytes = 256 * 1024 * 1024;
/** The child's stderr kept (V8's out-of-memory report, a crash's last words). */
const keptStderrChars = 8 * 1024;

/** The node flags of a child: the box. */
export const boxFlags = (options: BoxOptions): string[] => [
  '--permission',
  `--allow-fs-read=${options.files.indexPath}`,
  `--allow-fs-read=${options.files.childScript}`,
  ...(options.snapshotPath ? [`--allow-fs-read=${options.snapshotPath}`] : []),
  '--disallow-code-generation-from-strings',
  `--max-old-space-size=${options.limits.jsHeapMb}`,
];

/** Every child alive in this process: killed when it exits, so none outlives the runner. */
const alive = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of alive) child.kill('SIGKILL');
});

export const startBox = (options: BoxOptions) => {
  const { limits } = options;
  const settings: PythonChildSettings = {
    indexPath: options.files.indexPath,
    ...(options.snapshotPath ? { snapshotPath: options.snapshotPath } : {}),
    ...(!options.snapshotPath && options.makeSnapshot ? { makeSnapshot: true } : {}),
    memoryLimitBytes: limits.memoryMb * 1024 * 1024,
    maxOutputChars: limits.maxOutputChars,
    maxResultBytes: limits.maxResultBytes,
  };
  const [command = process.execPath, ...args] = [
    ...(options.networkPrefix ?? []),
    process.execPath,
    ...boxFlags(options),
    options.files.childScript,
    JSON.stringify(settings),
  ];
  // `unshare` replaces itself with node (exec): the pid watched and killed is the child's own.
  const child = spawn(command, args, {
    // Nothing of this process's environment (its AWS credentials, the runtime API) reaches the child.
    env: {},
    cwd: options.files.indexPath,
    stdio: ['pipe', 'ignore', 'pipe', 'pipe'],
  });
  alive.add(child);
  // A child waiting for its run keeps no one's process alive (the caller holds it while it waits).
  child.unref();
  for (const stream of [child.stdin, child.stderr, child.stdio[3]]) (stream as Socket | null)?.unref();
  // 'close', not 'exit': the frames it wrote before exiting have been read by then.
  const exited = new Promise<void>((resolve) => {
    child.once('close', () => {
      alive.delete(child);
      resolve();
    });
  });
  child.once('error', () => undefined); // a failed spawn also exits, which is what is waited for
  child.stdin?.on('error', () => undefined); // a child gone before its job is read

  let stderr = '';
  child.stderr?.setEncoding('utf8');
  // The tail, not the head: a crash's last words (V8's out-of-memory report) come last.
  child.stderr?.on('data', (chunk: string) => {
    stderr = `${stderr}${chunk}`.slice(-keptStderrChars);
  });

  let snapshot: Buffer | undefined;
  let onMessage: ((message: PythonChildMessage) => void) | undefined;
  let broken: string | undefined;
  const read = frameReader(
    { S: settings.makeSnapshot ? maxSnapshotBytes : 0, M: maxMessageBytes(limits) },
    (kind, payload) => {
      if (kind === 'S') {
        snapshot ??= payload;
        return;
      }
      let message: PythonChildMessage;
      try {
        message = JSON.parse(payload.toString('utf8')) as PythonChildMessage;
      } catch {
        throw new FrameError('a message that is not JSON');
      }
      onMessage?.(message);
    },
  );
  const frames = child.stdio[3] as Readable;
  frames.on('data', (chunk: Buffer) => {
    if (broken) return;
    try {
      read(chunk);
    } catch (error) {
      // A child that breaks the protocol is not listened to any more.
      broken = error instanceof Error ? error.message : String(error);
      child.kill('SIGKILL');
    }
  });

  const lastWords = () =>
    broken ??
    stderr
      .trim()
      .split('\n')
      .findLast((line) => line.trim() !== '') ??
    'no message';

  /** Loaded, its snapshot (a full load only) in hand, waiting for its job. */
  const ready = new Promise<{ snapshot?: Buffer }>((resolve, reject) => {
    onMessage = (message) => {
      if (!('ready' in message)) return;
      onMessage = undefined;
      resolve(snapshot ? { snapshot } : {});
    };
    void exited.then(() => reject(new Error(`the Python runtime stopped while loading: ${lastWords()}`)));
  });
  ready.catch(() => undefined);

  /** Runs the one job; the child is killed once its time is up or its memory over the limit. */
  const run = (job: PythonChildJob, timeoutMs: number) =>
    new Promise<BoxOutcome>((resolve) => {
      let killed: Extract<BoxOutcome, { killed: unknown }> | undefined;
      const kill = (why: typeof killed) => {
        killed ??= why;
        child.kill('SIGKILL');
      };
      const timer = setTimeout(() => kill({ killed: 'timeout', detail: `after ${timeoutMs} ms` }), timeoutMs);
      const watch = watchMemory(child.pid ?? 0, limits.processMemoryMb * 1024 * 1024, memoryWatchMs, (bytes) =>
        kill({ killed: 'memory', detail: `resident ${Math.round(bytes / 1024 / 1024)} MB` }),
      );
      const settle = (outcome: BoxOutcome) => {
        clearTimeout(timer);
        watch.stop();
        onMessage = undefined;
        resolve(outcome);
      };
      onMessage = (message) => {
        if (!killed && !('ready' in message)) settle({ answered: message });
      };
      void exited.then(() => {
        if (killed) return settle(killed);
        // V8 ends a process over its heap limit with this report on stderr.
        if (/heap out of memory|Reached heap limit/i.test(stderr))
          return settle({ killed: 'heap', detail: lastWords() });
        settle({ killed: 'crash', detail: lastWords() });
      });
      child.stdin?.end(`${JSON.stringify(job)}\n`);
    });

  /** Ends the child (it never serves a second job) and waits until it is gone. */
  const kill = async () => {
    child.kill('SIGKILL');
    await exited;
  };

  return { pid: child.pid, ready, run, kill, exited };
};

export type Box = ReturnType<typeof startBox>;
