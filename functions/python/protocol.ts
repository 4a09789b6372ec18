/** What a PythonSandbox step sends the PythonRunner function, and what it answers. */

export interface PythonRequest {
  /** The node's `code`. */
  code: string;
  /** The node's `values` input, in edge order: the code reads it as `inputs`. */
  inputs: unknown[];
  /** Wall-clock limit of the code itself (the interpreter's load is not counted). */
  timeoutMs: number;
}

/** Why a run failed: over its time, raised, or over its memory. */
export type PythonFailure = 'timeout' | 'exception' | 'memory';

export type PythonAnswer =
  | { ok: true; result: unknown; stdout: string; stderr: string }
  | { ok: false; error: PythonFailure; message: string; stdout: string; stderr: string };

/** Runs one request (the PythonRunner function's handler, or a client invoking it). */
export type PythonRun = (request: PythonRequest) => Promise<PythonAnswer>;
