/**
 * Lambda's recursive loop detection, from the functions' own data (lib/workers.ts).
 * Lambda counts, along one chain of requests, how often an event has invoked a function through
 * SQS, SNS, S3 or Lambda itself, and at about 16 stops the next invocation unless the function is set
 * to Allow (https://docs.aws.amazon.com/lambda/latest/dg/invocation-recursion.html, read 2026-12-07).
 * The count travels downstream in the trace header, so only a function that an event can reach
 * again through a queue it (or a function it feeds) sends to can reach it. The local event source
 * does not count: instead every such function must be set to Allow (`feedsItsOwnQueue`), and every
 * other one is left to Terminate, so detection cannot change an answer of ours on AWS.
 */
import { describe, expect, it } from 'vitest';
import { workers } from '../lib/workers.ts';
import type { Access } from '../platform/access.ts';
import type { QueueDefinition } from '../platform/definitions.ts';

type QueueId = QueueDefinition['id'];

/** The queues a function's grants let it send to. */
const sendsTo = (grants: Access): QueueId[] => [
  ...(grants.stepsQueue === 'send' ? (['Steps'] as const) : []),
  ...(grants.webhooksQueue === 'send' ? (['Webhooks'] as const) : []),
];

/** Queue → the worker it invokes. */
const consumerOf = new Map(workers.flatMap((w) => (w.trigger.kind === 'queue' ? [[w.trigger.queue, w] as const] : [])));

/** Whether an event that invoked `start` can invoke it again through queues alone. */
const reachesItself = (start: (typeof workers)[number]): boolean => {
  const seen = new Set<string>();
  const next = (grants: Access): (typeof workers)[number][] =>
    sendsTo(grants).flatMap((queue) => consumerOf.get(queue) ?? []);
  const frontier = next(start.grants);
  while (frontier.length > 0) {
    const worker = frontier.pop();
    if (!worker || seen.has(worker.id)) continue;
    if (worker.id === start.id) return true;
    seen.add(worker.id);
    frontier.push(...next(worker.grants));
  }
  return false;
};

describe('recursive loop detection cannot stop one of our functions', () => {
  it('sets exactly the functions an event can reach again through a queue to Allow', () => {
    const looping = workers.filter(reachesItself).map((w) => w.id);
    expect(looping).toEqual(['StepExecutor', 'WebhookDelivery']);
    expect(workers.filter((w) => w.feedsItsOwnQueue).map((w) => w.id)).toEqual(looping);
  });
});
