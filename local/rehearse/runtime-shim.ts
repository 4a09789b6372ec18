/**
 * A small Lambda runtime for one function bundle, run in its own Node process by the deploy
 * rehearsal (`local/rehearse/function-process.ts`). Like the nodejs24.x runtime it reads the
 * function from `LAMBDA_TASK_ROOT` and `_HANDLER` (`index.handler` → `index.js`, `.mjs` or `.cjs`,
 * export `handler`), imports it once (the init phase), then runs one invocation at a time with a
 * Lambda-like context; an invocation past the function's timeout fails as `Sandbox.Timedout` and
 * ends the process (the next invocation is a cold start), as an uncaught error does.
 *
 * It speaks `shim-protocol.ts` over the parent's IPC channel and imports nothing else from the
 * repository: the process holds only the bundle and what the runtime provides.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type FunctionError, type InvokeMessage, type ShimMessage, shimEnv } from './shim-protocol.ts';

const send = (message: ShimMessage) => process.send?.(message);

const toFunctionError = (error: unknown, fallbackType = 'Error'): FunctionError => {
  const e = error instanceof Error ? error : new Error(String(error));
  return {
    errorType: e.name && e.name !== 'Error' ? e.name : fallbackType,
    errorMessage: e.message,
    ...(e.stack ? { stack: e.stack.split('\n') } : {}),
  };
};

class RuntimeError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

const taskRoot = process.env.LAMBDA_TASK_ROOT ?? process.cwd();
const handlerString = process.env._HANDLER ?? '';
const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'function';
const memorySize = process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '128';
const timeoutMs = Number(process.env[shimEnv.timeoutSeconds] ?? 3) * 1000;
delete process.env[shimEnv.timeoutSeconds];

/** `dir/module.export.inner` → the module path and the export's path, as the Node runtime splits it. */
const splitHandler = (handler: string) => {
  const slash = handler.lastIndexOf('/');
  const base = handler.slice(slash + 1);
  const dot = base.indexOf('.');
  if (dot < 1 || dot === base.length - 1) {
    throw new RuntimeError('Runtime.MalformedHandlerName', `Bad handler ${JSON.stringify(handler)}`);
  }
  return { module: handler.slice(0, slash + 1) + base.slice(0, dot), exportPath: base.slice(dot + 1).split('.') };
};

type Handler = (event: unknown, context: unknown) => unknown;

const loadHandler = async (): Promise<Handler> => {
  const { module, exportPath } = splitHandler(handlerString);
  const file = ['.js', '.mjs', '.cjs'].map((ext) => join(taskRoot, module + ext)).find((f) => existsSync(f));
  if (!file) {
    throw new RuntimeError('Runtime.ImportModuleError', `Error: Cannot find module '${module}' in ${taskRoot}`);
  }
  let value: unknown;
  try {
    value = await import(pathToFileURL(file).href);
  } catch (error) {
    throw new RuntimeError('Runtime.ImportModuleError', String(error instanceof Error ? error.stack : error));
  }
  for (const key of exportPath) value = (value as Record<string, unknown> | undefined)?.[key];
  if (typeof value !== 'function') {
    throw new RuntimeError('Runtime.HandlerNotFound', `${handlerString} is undefined or not exported`);
  }
  return value as Handler;
};

const contextFor = (requestId: string, deadline: number) => ({
  callbackWaitsForEmptyEventLoop: true,
  functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION}:000000000000:function:${functionName}`,
  memoryLimitInMB: memorySize,
  awsRequestId: requestId,
  logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
  logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
});

/** An X-Ray trace header per invocation, as the runtime sets `_X_AMZN_TRACE_ID` (nothing is sent anywhere). */
const traceHeader = () =>
  `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomBytes(12).toString('hex')};` +
  `Parent=${randomBytes(8).toString('hex')};Sampled=0`;

let inFlight: string | undefined;

const failAndExit = (error: FunctionError) => {
  if (inFlight) send({ type: 'result', id: inFlight, error });
  inFlight = undefined;
  // Let the IPC message go out before the environment is torn down.
  setTimeout(() => process.exit(1), 20);
};
process.on('uncaughtException', (error) => failAndExit(toFunctionError(error, 'Runtime.UncaughtException')));
process.on('unhandledRejection', (error) => failAndExit(toFunctionError(error, 'Runtime.UnhandledPromiseRejection')));

const started = performance.now();
let handler: Handler;
try {
  handler = await loadHandler();
} catch (error) {
  send({ type: 'init-error', error: toFunctionError(error) });
  process.exit(1);
}
send({ type: 'ready', initMs: Math.round(performance.now() - started) });

const invocations: InvokeMessage[] = [];

const runOne = async (message: InvokeMessage) => {
  const requestId = randomUUID();
  const deadline = Date.now() + timeoutMs;
  process.env._X_AMZN_TRACE_ID = traceHeader();
  inFlight = message.id;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new RuntimeError('Sandbox.Timedout', `Task timed out after ${timeoutMs / 1000} seconds`)),
      timeoutMs,
    );
  });
  try {
    const result = await Promise.race([handler(JSON.parse(message.event), contextFor(requestId, deadline)), timedOut]);
    send({ type: 'result', id: message.id, result: JSON.stringify(result ?? null) });
  } catch (error) {
    const functionError = toFunctionError(error);
    if (functionError.errorType === 'Sandbox.Timedout') return failAndExit(functionError);
    send({ type: 'result', id: message.id, error: functionError });
  } finally {
    clearTimeout(timer);
    inFlight = undefined;
  }
};

let draining = false;
const drain = async () => {
  if (draining) return;
  draining = true;
  for (let next = invocations.shift(); next; next = invocations.shift()) await runOne(next);
  draining = false;
};

process.on('message', (message: InvokeMessage) => {
  if (message?.type !== 'invoke') return;
  invocations.push(message);
  void drain();
});
process.on('disconnect', () => process.exit(0));
