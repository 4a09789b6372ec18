/**
 * The background functions: what triggers each one and what it may touch. Pure data, read by the
 * CDK stack (`lib/api-stack.ts`); the local default drives the same entry modules by polling the
 * queues and ticking the schedule.
 */

import type { QueueDefinition } from './definitions.ts';

/** How a worker is invoked: by an SQS event source mapping on one queue, or by the dispatcher schedule. */
export type WorkerTrigger = { kind: 'queue'; queue: QueueDefinition['id'] } | { kind: 'schedule' };

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
  /**
   * What the function may touch beyond consuming its own queue (the event source grants that),
   * for least-privilege grants.
   */
  grants: {
    table: 'none' | 'read' | 'readwrite';
    stepsQueue?: 'send';
    webhooksQueue?: 'send';
    /** `read` lets it presign GETs of stored files; `readwrite` also lets it store new ones. */
    bucket?: 'read' | 'readwrite';
  };
}

export const workers: readonly Worker[] = [
  {
    // Runs a step, stores its files, charges it, releases ready successors, and on the last step
    // finalizes the run and queues its webhook.
    id: 'StepExecutor',
    entry: 'functions/workers/step-executor.ts',
    trigger: { kind: 'queue', queue: 'Steps' },
    grants: { table: 'readwrite', stepsQueue: 'send', webhooksQueue: 'send', bucket: 'readwrite' },
  },
  {
    // Builds the run body at delivery time (fresh presigned file URLs), POSTs it and logs each attempt;
    // retries move the message's visibility, which the event source grant already allows.
    id: 'WebhookDelivery',
    entry: 'functions/workers/webhook-delivery.ts',
    trigger: { kind: 'queue', queue: 'Webhooks' },
    grants: { table: 'readwrite', bucket: 'read' },
  },
  {
    // Dispatches, expires and cancels deferred runs; dispatching starts a run, so it sends root steps.
    id: 'DeferredDispatcher',
    entry: 'functions/workers/deferred-dispatcher.ts',
    trigger: { kind: 'schedule' },
    // Shorter than the one-minute tick, so a slow tick ends before the next one starts.
    timeoutSeconds: 50,
    grants: { table: 'readwrite', stepsQueue: 'send' },
  },
];
