/**
 * What the runtime shim (`runtime-shim.ts`, in the function's process) and `function-process.ts`
 * (in the rehearsal's) say to each other over the process's IPC channel. The parent sends
 * `{ type: 'invoke', id, event }` and gets `{ type: 'result', id, result }` or
 * `{ type: 'result', id, error }`; at start the shim sends `{ type: 'ready', initMs }` or
 * `{ type: 'init-error', error }`. Events and results cross as JSON text, as they cross Lambda's API.
 */

export interface InvokeMessage {
  type: 'invoke';
  id: string;
  /** The event as JSON text. */
  event: string;
}

/** A function error as Lambda reports it. */
export interface FunctionError {
  errorType: string;
  errorMessage: string;
  stack?: string[];
}

export type ShimMessage =
  | { type: 'ready'; initMs: number }
  | { type: 'init-error'; error: FunctionError }
  | { type: 'result'; id: string; result?: string; error?: FunctionError };

/** What the shim reads besides Lambda's own variables; removed from the function's environment. */
export const shimEnv = { timeoutSeconds: 'REHEARSE_TIMEOUT_SECONDS' } as const;
