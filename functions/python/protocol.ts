/** What a PythonSandbox step sends the PythonRunner function, and what it answers. */

/**
 * The longest a step's code may run: the step's node timeout (25 s, `stepNodeTimeoutSeconds`) less
 * 10 s for a container's first load of Pyodide, so the step executor never aborts a Python step
 * that is still within its own limit (an abort would retry it, then fail it as an execution error).
 */
export const pythonMaxTimeoutMs = 15_000;

export interface PythonRequest {
  /** The node's `code`. */
  code: string;
  /** The node's `values` input, in edge order: the code reads it as `inputs`. */
  inputs: unknown[];
  /** Wall-clock limit of the code itself (the interpreter's load is not counted). */
  timeoutMs: number;
  /**
   * The step's team: a runner that runs several at once (the local stack's) serves waiting teams in
   * turn, so one team's flood never holds another's step behind it. Never shown to the code.
   */
  teamId?: string;
}

/**
 * The largest result a run may give, in bytes of JSON: a larger one fails the step at once, never
 * retried (it would be as large again) and never charged. It keeps the answer well within Lambda's
 * 6 MB response and the step's item within DynamoDB's 400 KB.
 */
export const pythonMaxResultBytes = 256 * 1024;

/** Why a run failed: over its time, raised, over its memory, or its result over `pythonMaxResultBytes`. */
export type PythonFailure = 'timeout' | 'exception' | 'memory' | 'result-size';

export type PythonAnswer =
  | { ok: true; result: unknown; stdout: string; stderr: string }
  | { ok: false; error: PythonFailure; message: string; stdout: string; stderr: string };

/** Runs one request (the PythonRunner function's handler, or a client invoking it). */
export type PythonRun = (request: PythonRequest) => Promise<PythonAnswer>;
