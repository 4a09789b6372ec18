import type { PythonAnswer, PythonRequest } from '../python/protocol.ts';

/** Calls the PythonRunner function; `signal` aborts the call (the step's node timeout). */
export type PythonInvoke = (request: PythonRequest, signal?: AbortSignal) => Promise<PythonAnswer>;

/** Raised when the PythonRunner function itself failed (it threw, or Lambda could not run it). */
export class PythonRunnerError extends Error {
  override name = 'PythonRunnerError';
}

export interface PythonInvokeOptions {
  /** The PythonRunner function's name (or ARN). */
  functionName: string;
  /** Lambda's endpoint when not AWS's (the local emulator). */
  endpoint?: string;
  /**
   * With an endpoint, the region and credentials come from these settings (a copy of the
   * environment, as the emulators' clients take theirs); otherwise the SDK's default chain.
   */
  settings?: NodeJS.ProcessEnv;
  /** Called with the client once it exists (the local AWS command log instruments it). */
  onClient?: (clients: { lambda: object }) => void;
}

/**
 * Invokes the PythonRunner function (Invoke, RequestResponse) for each PythonSandbox step. The
 * Lambda client is imported on the first Python step, so a step executor that runs none never loads it.
 */
export const pythonInvoker = (options: PythonInvokeOptions): PythonInvoke => {
  let client: Promise<{ send: (request: PythonRequest, signal?: AbortSignal) => Promise<PythonAnswer> }> | undefined;
  const connect = async () => {
    const { LambdaClient, InvokeCommand } = await import('@aws-sdk/client-lambda');
    const { endpoint, settings = {} } = options;
    const { AWS_REGION: region, AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = settings;
    const lambda = new LambdaClient(
      endpoint
        ? {
            endpoint,
            ...(region ? { region } : {}),
            ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey } } : {}),
          }
        : {},
    );
    options.onClient?.({ lambda });
    return {
      send: async (request: PythonRequest, signal?: AbortSignal) => {
        const answer = await lambda.send(
          new InvokeCommand({
            FunctionName: options.functionName,
            InvocationType: 'RequestResponse',
            Payload: new TextEncoder().encode(JSON.stringify(request)),
          }),
          { abortSignal: signal },
        );
        const text = new TextDecoder().decode(answer.Payload ?? new Uint8Array());
        if (answer.FunctionError)
          throw new PythonRunnerError(`the Python runner failed (${answer.FunctionError}): ${text}`);
        return JSON.parse(text) as PythonAnswer;
      },
    };
  };
  return async (request, signal) => {
    // A client that could not be made is made again on the next step.
    client ??= connect().catch((error: unknown) => {
      client = undefined;
      throw error;
    });
    return (await client).send(request, signal);
  };
};
