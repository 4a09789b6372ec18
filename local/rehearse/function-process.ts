/**
 * One deployed function run locally: its bundle in its own Node process behind the runtime shim
 * (`runtime-shim.ts`), started with exactly the environment Lambda would give it. Invocations go
 * one at a time, as to one execution environment; a process that exits (a timeout, a crash) is
 * started again at the next invocation, a cold start.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { type FunctionError, type ShimMessage, shimEnv } from './shim-protocol.ts';

const shimPath = fileURLToPath(new URL('./runtime-shim.ts', import.meta.url));

export interface FunctionProcessOptions {
  /** The function's name (its logical id in the template). */
  name: string;
  /** The bundle's directory (the asset `cdk deploy` would upload). */
  codeDir: string;
  /** `Handler` of the template, e.g. `index.handler`. */
  handler: string;
  timeoutSeconds: number;
  memoryMb: number;
  /** The complete environment of the process: the template's variables plus the rehearsal's. */
  environment: Record<string, string>;
  /** Each line the function writes (stdout and stderr). */
  onLog?: (line: string) => void;
}

export type InvokeOutcome = { ok: true; result: unknown } | { ok: false; error: FunctionError };

export interface InvocationRecord {
  function: string;
  ms: number;
  coldStart: boolean;
  outcome: InvokeOutcome;
}

/** A function's failure, thrown where a caller needs its result. */
export class FunctionInvokeError extends Error {
  override readonly name = 'FunctionInvokeError';
  readonly functionName: string;
  readonly error: FunctionError;
  constructor(functionName: string, error: FunctionError) {
    super(`${functionName}: ${error.errorType}: ${error.errorMessage}`);
    this.functionName = functionName;
    this.error = error;
  }
}

/** The variables the Lambda runtime sets for every function (those the code or the SDK may read). */
const lambdaRuntimeEnv = (options: FunctionProcessOptions): Record<string, string> => ({
  LAMBDA_TASK_ROOT: options.codeDir,
  LAMBDA_RUNTIME_DIR: options.codeDir,
  _HANDLER: options.handler,
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  AWS_LAMBDA_FUNCTION_NAME: options.name,
  AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(options.memoryMb),
  AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${options.name}`,
  AWS_LAMBDA_LOG_STREAM_NAME: 'rehearsal',
  AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
  TZ: ':UTC',
  LANG: 'en_US.UTF-8',
});

const timedOut = (seconds: number): FunctionError => ({
  errorType: 'Sandbox.Timedout',
  errorMessage: `Task timed out after ${seconds} seconds`,
});

/** Errors after which the execution environment is not reused. */
const environmentEnding = new Set([
  'Sandbox.Timedout',
  'Runtime.UncaughtException',
  'Runtime.UnhandledPromiseRejection',
  'Runtime.ExitError',
]);

export class FunctionProcess {
  readonly invocations: InvocationRecord[] = [];
  private child: ChildProcess | undefined;
  private starting: Promise<ChildProcess> | undefined;
  private readonly pending = new Map<string, (outcome: InvokeOutcome) => void>();
  private queue: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** Milliseconds the last start spent importing the bundle (Lambda's init phase). */
  initMs: number | undefined;

  readonly options: FunctionProcessOptions;

  constructor(options: FunctionProcessOptions) {
    this.options = options;
  }

  /** Starts the process and imports the bundle; rejects with the init error when the import fails. */
  start(): Promise<ChildProcess> {
    if (this.stopped) return Promise.reject(new Error(`${this.options.name} is stopped`));
    if (this.child) return Promise.resolve(this.child);
    this.starting ??= this.spawn().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private spawn(): Promise<ChildProcess> {
    const { options } = this;
    // The function's memory as its JavaScript heap's limit: a handler that outgrows its function's
    // memory fails here as it would on Lambda (the process ends: Runtime.ExitError), not only there.
    const child = spawn(process.execPath, [`--max-old-space-size=${options.memoryMb}`, shimPath], {
      cwd: options.codeDir,
      env: {
        ...options.environment,
        ...lambdaRuntimeEnv(options),
        [shimEnv.timeoutSeconds]: String(options.timeoutSeconds),
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) options.onLog?.(line);
      });
      stream?.on('end', () => rest && options.onLog?.(rest));
    }
    return new Promise((resolve, reject) => {
      child.on('message', (message: ShimMessage) => {
        if (message.type === 'ready') {
          this.initMs = message.initMs;
          this.child = child;
          resolve(child);
        } else if (message.type === 'init-error') {
          reject(new FunctionInvokeError(options.name, message.error));
        } else {
          const settle = this.pending.get(message.id);
          this.pending.delete(message.id);
          settle?.(
            message.error
              ? { ok: false, error: message.error }
              : { ok: true, result: JSON.parse(message.result ?? 'null') },
          );
        }
      });
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        if (this.child === child) this.child = undefined;
        const error = {
          errorType: 'Runtime.ExitError',
          errorMessage: `RequestId: - Error: Runtime exited ${signal ? `with signal ${signal}` : `with error: exit status ${code}`}`,
        };
        reject(new FunctionInvokeError(options.name, error));
        for (const [id, settle] of this.pending) {
          this.pending.delete(id);
          settle({ ok: false, error });
        }
      });
    });
  }

  /** Invokes the function with `event` (synchronously, as API Gateway and the SQS poller do). */
  invoke(event: unknown): Promise<InvokeOutcome> {
    const run = async (): Promise<InvokeOutcome> => {
      const began = performance.now();
      const coldStart = !this.child;
      let outcome: InvokeOutcome;
      try {
        const child = await this.start();
        const id = randomUUID();
        let timer: NodeJS.Timeout | undefined;
        outcome = await new Promise<InvokeOutcome>((resolve) => {
          this.pending.set(id, resolve);
          child.send({ type: 'invoke', id, event: JSON.stringify(event) });
          // The shim times the handler out itself; this catches one that blocks its event loop.
          timer = setTimeout(
            () => {
              this.pending.delete(id);
              resolve({ ok: false, error: timedOut(this.options.timeoutSeconds) });
            },
            this.options.timeoutSeconds * 1000 + 1000,
          );
        });
        clearTimeout(timer);
        // After a timeout or an uncaught error Lambda discards the environment: so does this.
        if (!outcome.ok && environmentEnding.has(outcome.error.errorType)) await this.discard(child);
      } catch (error) {
        outcome = {
          ok: false,
          error:
            error instanceof FunctionInvokeError
              ? error.error
              : { errorType: 'Runtime.Unknown', errorMessage: String(error) },
        };
      }
      this.invocations.push({
        function: this.options.name,
        ms: Math.round(performance.now() - began),
        coldStart,
        outcome,
      });
      return outcome;
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Kills the process and waits for its exit: the next invocation starts a new one. */
  private async discard(child: ChildProcess): Promise<void> {
    if (this.child === child) this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** Ends the process (and refuses further invocations). */
  async stop(): Promise<void> {
    this.stopped = true;
    const child = this.child ?? (await this.starting?.catch(() => undefined));
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
