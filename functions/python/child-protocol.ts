/**
 * What the runner (`box.ts`) and the process of one run (`child.mjs`) say to each other. The child is
 * untrusted once user code has run in it: every message from it is checked and bounded by the parent.
 */

/** How the child is started: its one command-line argument, as JSON. */
export interface PythonChildSettings {
  /** Directory (with a trailing slash) of `pyodide.mjs`, `pyodide.asm.wasm`, `python_stdlib.zip` and the lock file. */
  indexPath: string;
  /** The snapshot file to start from; without it, the child loads in full. */
  snapshotPath?: string;
  /** A full load writes a snapshot of its pristine interpreter (an `S` frame) before it is ready. */
  makeSnapshot?: boolean;
  /** Largest the interpreter's WebAssembly memory may grow to, in bytes. */
  memoryLimitBytes: number;
  /** Characters of stdout and of stderr kept. */
  maxOutputChars: number;
  /** Largest a result may be, in bytes of JSON. */
  maxResultBytes: number;
}

/** The one job the parent writes on the child's stdin, as one line of JSON. */
export interface PythonChildJob {
  code: string;
  inputsJson: string;
}

/** What the child writes back in `M` frames: `{ ready }` once loaded, then the answer to its job. */
export type PythonChildMessage =
  | { ready: true }
  | { ok: true; resultJson: string; stdout: string; stderr: string }
  | { kind: 'exception' | 'memory'; message: string; stdout: string; stderr: string }
  | { kind: 'result-size'; bytes: number; stdout: string; stderr: string };
