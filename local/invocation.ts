import { AsyncLocalStorage } from 'node:async_hooks';
import { pythonRunner, workers } from '../lib/workers.ts';
import { routes } from '../platform/routes.ts';

/**
 * Which function's handler is running, for everything it awaits: the local API gateway, the queue
 * pollers, the schedule and the tests that drive a worker directly enter it with `invokedAs`, so the
 * AWS command log (`aws-command-log.ts`) can say which function sent each command.
 */
const invocation = new AsyncLocalStorage<string>();

/** Every route and worker id and the PythonRunner: the functions the stack deploys. */
export const functionIds: readonly string[] = [
  ...routes.map((r) => r.id),
  ...workers.map((w) => w.id),
  pythonRunner.id,
];

/** The handler modules of those functions (relative to the repository root). */
export const functionEntries: readonly string[] = [
  ...routes.map((r) => r.entry),
  ...workers.map((w) => w.entry),
  pythonRunner.entry,
];

/** `handler`, running as the function `functionId` (a route or worker id) each time it is called. */
export const invokedAs = <Args extends unknown[], Result>(
  functionId: string,
  handler: (...args: Args) => Result,
): ((...args: Args) => Result) => {
  if (!functionIds.includes(functionId)) throw new Error(`${functionId} is no route or worker id`);
  return (...args) => invocation.run(functionId, () => handler(...args));
};

/** The route or worker id whose handler is running here, if any. */
export const currentFunction = (): string | undefined => invocation.getStore();
