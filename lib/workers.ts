/**
 * The background functions: what triggers each one and what it may touch. Pure data, read by the
 * CDK stack (`lib/api-stack.ts`); the local default drives the same entry modules by polling the
 * queues and ticking the schedule.
 */

import type { Access } from '../platform/access.ts';
import type { QueueDefinition, StreamMappingId } from '../platform/definitions.ts';

/**
 * How a worker is invoked: by an SQS event source mapping on one queue, by the dispatcher schedule,
 * or by one mapping of the table's stream (`streamMappings` in definitions.ts: its filters and retries).
 */
export type WorkerTrigger =
  | { kind: 'queue'; queue: QueueDefinition['id'] }
  | { kind: 'schedule' }
  | { kind: 'stream'; mapping: StreamMappingId };

export interface Worker {
  /** Stable logical id, used for CDK construct ids and logs. */
  id: string;
  /** Handler module relative to the repository root; it exports `handler`. */
  entry: string;
  trigger: WorkerTrigger;
  /**
   * Seconds the function may run when the trigger does not fix it; queue consumers take
   * `consumerTimeoutSeconds` from their queue definition instead.
   */
  timeoutSeconds?: number;
  /** Concurrency reserved for it, which is also its most. Default: none. */
  reservedConcurrency?: number;
  /** Active X-Ray tracing where the stage traces (`-c tracing=true`). Default: true. */
  tracing?: boolean;
  /**
   * It sends messages to the queue it consumes (ServiceFunctionProps.feedsItsOwnQueue): Lambda's
   * recursive loop detection is set to Allow, and the application bounds its loops. Default: false.
   */
  feedsItsOwnQueue?: boolean;
  /**
   * Exactly what the function's code sends beyond consuming its own queue (the event source grants
   * receiving, deleting and moving the visibility of its messages).
   */
  grants: Access;
}

export const workers: readonly Worker[] = [
  {
    // Runs a step, stores its files, charges it, releases ready successors, and on the last step
    // finalizes the run and queues its webhook. Query: the claims of a run that ended with a model
    // step in flight, read before it is settled (functions/store/run-ledger.ts, settleEndedRun).
    id: 'StepExecutor',
    entry: 'functions/workers/step-executor.ts',
    trigger: { kind: 'queue', queue: 'Steps' },
    // A run's next steps, a provider job's polls and a busy provider's retries.
    feedsItsOwnQueue: true,
    grants: {
      table: ['GetItem', 'BatchGetItem', 'Query', 'UpdateItem', 'DeleteItem'],
      // GSI5: a bulk cancel's pages of a team's runs and deferred runs (functions/app/bulk-cancel.ts).
      indexes: ['GSI5'],
      stepsQueue: 'send',
      webhooksQueue: 'send',
      bucket: ['GetObject', 'PutObject'],
      // The only function that reads provider credentials and team connection secrets.
      secrets: 'providers-and-connections',
      // PythonSandbox steps run there, never in this function that holds the grants above.
      pythonRunner: 'invoke',
      // Model steps on Bedrock: exactly the stage's models.
      bedrock: 'invoke',
    },
  },
  {
    // Builds the run body at delivery time (fresh file links), POSTs it and records each attempt on
    // the delivery; the next attempt is a new message on its own queue, delayed until due.
    // PutItem: creating the file links' signing key, when a delivery makes the first link.
    id: 'WebhookDelivery',
    entry: 'functions/workers/webhook-delivery.ts',
    trigger: { kind: 'queue', queue: 'Webhooks' },
    // The next attempt of a delivery.
    feedsItsOwnQueue: true,
    grants: { table: ['GetItem', 'Query', 'UpdateItem', 'PutItem'], webhooksQueue: 'send' },
  },
  {
    // Dispatches, expires and cancels deferred runs; dispatching starts a run, so it sends root steps.
    id: 'DeferredDispatcher',
    entry: 'functions/workers/deferred-dispatcher.ts',
    trigger: { kind: 'schedule' },
    // Shorter than the one-minute tick, so a slow tick ends before the next one starts.
    timeoutSeconds: 50,
    // One tick at a time: a tick that comes while one runs waits (at most a minute), then is dropped.
    reservedConcurrency: 1,
    // 43,200 ticks a month, nearly all with nothing to do: a trace each would cost more than the
    // function; each tick logs what it moved.
    tracing: false,
    grants: {
      // DeleteItem: the sweep failing a run whose messages SQS keeps refusing frees its workflow's lock;
      // Query: that failure, like any run's end, reads the run's claims before it settles the run.
      table: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'],
      // GSI1: runs left queued (the sweep). GSI2, GSI3: waiting deferred runs by multiplier, by expiry.
      indexes: ['GSI1', 'GSI2', 'GSI3'],
      stepsQueue: 'send',
      // The run-failed webhook of a run the sweep fails.
      webhooksQueue: 'send',
      // A dispatched run's copies of the uploads its inputs named (CopyObject: GetObject on the
      // upload, PutObject under teams/), made at dispatch so a waiting run stores nothing.
      uploads: ['GetObject'],
      bucket: ['PutObject'],
    },
  },
  {
    // Puts operator events on the stage's bus, read from the table's stream
    // (the event source grants reading the stream and sending to its dead-letter queue).
    id: 'EventPublisher',
    entry: 'functions/workers/operator-events.ts',
    trigger: { kind: 'stream', mapping: 'OperatorEvents' },
    grants: { eventBus: 'put' },
  },
  {
    // Opens the delivery of each lifecycle webhook event a run chose, read from the
    // table's stream through its own filters, and queues it for the webhook worker. UpdateItem: the
    // delivery item and the run's count of step events (one transaction); DeleteItem: taking back a
    // delivery whose message could not be sent. And for every run's start and end, the team's
    // webhook endpoints: Query, the team's endpoints; PutItem, each hearing one's delivery item.
    id: 'RunEventWebhooks',
    entry: 'functions/workers/lifecycle-webhooks.ts',
    trigger: { kind: 'stream', mapping: 'LifecycleEvents' },
    grants: { table: ['UpdateItem', 'DeleteItem', 'Query', 'PutItem'], webhooksQueue: 'send' },
  },
];

/**
 * The function PythonSandbox steps' code runs on (Pyodide in a child process per run, in the
 * operating system's box), invoked by the step executor alone. Its role holds no grant (only its
 * logs, and the network interfaces Lambda attaches with it) and its VPC has no route out: code that
 * escapes the interpreter finds no credentials worth having and no address it could reach.
 */
export const pythonRunner = {
  id: 'PythonRunner',
  entry: 'functions/workers/python-runner.ts',
  // Each run's process is killed past 640 MB resident (functions/python/runner.ts), beside the
  // runner's own Node. 1769 MB is one whole vCPU: each run's full load (compiling 9.6 MB of wasm and
  // initialising CPython, about 3 s of cpu) is cpu-bound, so it costs the same GB-seconds as at
  // 1024 MB (0.58 vCPU) and the step, with the step executor waiting on it, ends sooner.
  memoryMb: 1769,
  // A step's code may run 15 s (`pythonMaxTimeoutMs`), after a load of a few seconds and its kill:
  // well within 60 s. The step executor's node timeout (25 s) aborts its wait sooner.
  timeoutSeconds: 60,
} as const;
