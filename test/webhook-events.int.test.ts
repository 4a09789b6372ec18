/**
 * Lifecycle webhook events through the real path: the run start over the local
 * API, the steps queue polled by the real step executor (its node executors answer at once, one
 * node made to fail at the edge), the table's stream on DynamoDB Local read by the local mapping
 * (local/stream-source.ts, with `lifecycleWebhooksMapping`'s filters) into the real fan-out handler,
 * the webhooks queue polled by the real webhook worker, and a loopback https receiver verifying
 * every delivery with the `standardwebhooks` library.
 */
import { GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { Webhook } from 'standardwebhooks';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redeliveriesPerRunPerMinute } from '../functions/domain/redelivery-limits.ts';
import { webhookId } from '../functions/domain/webhook.ts';
import { StepFailedError } from '../functions/nodes/executors/types.ts';
import { runPartition, stepEventCountKey, stepKey, webhookDeliveryKey } from '../functions/store/keys.ts';
import { openLifecycleDelivery } from '../functions/store/lifecycle-webhook-deliveries.ts';
import { makeHandler as makeFanOutHandler } from '../functions/workers/lifecycle-webhooks.ts';
import { invokedAs } from '../local/invocation.ts';
import { type StreamPoller, startLifecycleEvents } from '../local/stream-source.ts';
import { StepWebhookBodySchema } from '../schemas/lifecycle-webhooks.ts';
import { WebhookBodySchema } from '../schemas/runs.ts';
import { lifecycleEvents, stepEventCap, webhookEventsMessages } from '../schemas/webhook-events.ts';
import { queueContents } from './support/queue-contents.ts';
import { api, faultyDeps, instantExecutor, startStepWorkers, startWebhookWorkers, waitForEnd } from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedTeam, startTestStack, type TestStack } from './support/stack.ts';
import { type Received, startReceiver } from './support/webhook-receiver.ts';

const secret = 'whsec_bGlmZWN5Y2xlIGV2ZW50cyBzZWNyZXQ=';
// A whsec_ secret is taken by the library as it is (its decoded bytes key the signature).
const verifier = new Webhook(secret);

let stack: TestStack;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let lifecycle: StreamPoller;
const streamFailures: unknown[] = [];
const pollers: { stop: () => Promise<void> | void }[] = [];
/** Nodes whose next execution fails as a refused provider call does (then they succeed). */
const failNext = new Set<string>();
/** While set, a node keyed `hold` runs only once this settles (a run kept in progress). */
let holdGate: Promise<void> | undefined;

beforeAll(async () => {
  stack = await startTestStack();
  receiver = await startReceiver();
  pollers.push(
    startStepWorkers(stack, {
      executors: () => async (context) => {
        if (failNext.delete(context.node.id)) throw new StepFailedError('the provider refused the request');
        if (context.node.id === 'hold') await holdGate;
        return instantExecutor(context);
      },
    }),
  );
  pollers.push(startWebhookWorkers(stack));
  lifecycle = await startLifecycleEvents({
    dynamoDbEndpoint: stack.resources.dynamoDbEndpoint,
    deps: stack.deps,
    intervalMs: 100,
    onFailure: (failure) => streamFailures.push(failure),
  });
}, 120_000);
afterAll(async () => {
  for (const poller of pollers) await poller.stop();
  await lifecycle?.stop();
  await receiver?.close();
  await stack?.close();
});

const newTeam = () => seedTeam(stack.deps, { credits: 1000, key: { rateLimitPerMinute: 100_000 } });
const start = (team: SeededTeam, workflowId: string, body: unknown) =>
  api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, { key: team.key, body });
const startOk = async (team: SeededTeam, workflowId: string, body: Record<string, unknown>) => {
  const started = await start(team, workflowId, { callbackUrl: receiver.url, callbackSecret: secret, ...body });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.jobId as string;
};

/** One delivery as the receiver got it, verified with the standardwebhooks library (it throws when not). */
interface Verified {
  event: string;
  id: string;
  body: Record<string, unknown>;
}
const verified = (received: Received): Verified => {
  const headers = Object.fromEntries(Object.entries(received.headers).map(([k, value]) => [k, String(value)]));
  const body = verifier.verify(received.body, headers) as Record<string, unknown>;
  expect(headers['x-service-event']).toBe(body.event);
  return { event: headers['x-service-event'] as string, id: headers['webhook-id'] as string, body };
};

const receivedFor = (jobId: string): Verified[] =>
  receiver.received.filter((r) => (JSON.parse(r.body) as { jobId?: string }).jobId === jobId).map(verified);

/** Waits (generously: a loaded machine) until `ready` holds of the run's deliveries. */
const waitForDeliveries = async (jobId: string, ready: (got: Verified[]) => boolean, timeoutMs = 90_000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = receivedFor(jobId);
    if (ready(got)) return got;
    if (Date.now() > deadline) throw new Error(`deliveries of ${jobId}: ${JSON.stringify(got.map((g) => g.event))}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

const chain = [
  { key: 'topic', type: 'TextEntry', config: { text: 'otters' } },
  { key: 'llm', type: 'LlmWorker', inputs: ['topic'] },
  { key: 'show', type: 'TextConsole', inputs: ['llm'] },
];

/**
 * A barrier on the stream: a run that chose `run.started` only, delivered. The local mapping reads
 * the table's stream in order, so every change written before it was handed to the consumer first.
 */
const streamPassed = async (team: SeededTeam) => {
  const workflowId = await createWorkflow(stack, team, [{ key: 'one', type: 'TextEntry', config: { text: 'x' } }]);
  const jobId = await startOk(team, workflowId, { webhookEvents: ['run.started'] });
  await waitForDeliveries(jobId, (got) => got.length === 1);
};

/** The order a receiver puts a run's events in (docs/api.md): run.started, the steps by `ended_at`, the end. */
const inReceiverOrder = (got: Verified[]) =>
  [...got].sort((a, b) => {
    const rank = (x: Verified) => (x.event === 'run.started' ? 0 : x.event.startsWith('step.') ? 1 : 2);
    const ended = (x: Verified) => String((x.body.step as { ended_at?: string } | undefined)?.ended_at ?? '');
    return rank(a) - rank(b) || ended(a).localeCompare(ended(b));
  });

describe('a run queued behind another', () => {
  it('sends run.started when it actually starts (its promotion), once, then its end', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, [
      { key: 'hold', type: 'TextEntry', config: { text: 'otters' } },
      { key: 'show', type: 'TextConsole', inputs: ['hold'] },
    ]);
    let release = () => {};
    holdGate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = await startOk(team, workflowId, {});
    const queued = await start(team, workflowId, {
      callbackUrl: receiver.url,
      callbackSecret: secret,
      webhookEvents: ['run.started', 'run.completed'],
      onConflict: 'queue',
    });
    expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    expect(queued.body).toMatchObject({ queuePosition: 1, queuedBehind: first });
    const jobId = queued.body.jobId as string;
    // Nothing is sent while it waits: the run in progress holds the workflow until released.
    await streamPassed(team);
    expect(receivedFor(jobId)).toEqual([]);
    release();
    holdGate = undefined;
    // The two come by two paths (the stream's consumer, the run's end), in either order.
    const got = await waitForDeliveries(jobId, (events) => events.length >= 2);
    expect(got.map((g) => g.event).sort()).toEqual(['run.completed', 'run.started']);
    expect(got.find((g) => g.event === 'run.started')?.id).toBe(webhookId(jobId, 'run.started'));
  });
});

describe('a run that chose its events', () => {
  let team: SeededTeam;
  let jobId: string;

  it('sends run.started, step.completed for each step, then run.completed: each its own signed delivery', async () => {
    team = await newTeam();
    const workflowId = await createWorkflow(stack, team, chain);
    jobId = await startOk(team, workflowId, { webhookEvents: [...lifecycleEvents] });
    await waitForEnd(stack.baseUrl, team.key, jobId);
    const got = await waitForDeliveries(jobId, (all) => all.length === 5);

    const ordered = inReceiverOrder(got);
    expect(ordered.map((g) => [g.event, (g.body.step as { node_id?: string } | undefined)?.node_id])).toEqual([
      ['run.started', undefined],
      ['step.completed', 'topic'],
      ['step.completed', 'llm'],
      ['step.completed', 'show'],
      ['run.completed', undefined],
    ]);
    // Each its own webhook-id, the one the delivery log shows; the end's is the contract's id.
    expect(new Set(got.map((g) => g.id)).size).toBe(5);
    expect(ordered[0]?.id).toBe(webhookId(jobId, 'run.started'));
    expect(ordered[2]?.id).toBe(webhookId(jobId, 'step.completed#llm'));
    expect(ordered[4]?.id).toBe(webhookId(jobId, 'run.completed'));
    // Run events have the end webhook's body; a step event adds `step`, with its result.
    for (const run of [ordered[0], ordered[4]]) expect(() => v.parse(WebhookBodySchema, run?.body)).not.toThrow();
    const llm = v.parse(StepWebhookBodySchema, ordered[2]?.body);
    expect(llm).toMatchObject({
      jobId,
      event: 'step.completed',
      step: { node_id: 'llm', step_type: 'LlmWorker', status: 'completed', result: 'llm(topic())' },
    });
    expect(llm.step).not.toHaveProperty('error');
    // Not the Run's steps or outputs: a link to read the Run, which has them.
    for (const field of ['steps', 'output', 'output_next']) expect(llm).not.toHaveProperty(field);
    expect(llm.links?.run).toBe(`${stack.baseUrl}/runs/${jobId}`);
    const read = await fetch(llm.links?.run as string, { headers: { authorization: `Bearer ${team.key}` } });
    expect(read.status).toBe(200);
    const whole = (await read.json()) as { steps: { node_id: string }[] };
    expect(whole.steps.map((s) => s.node_id)).toEqual(['topic', 'llm', 'show']);
  }, 120_000);

  it('lists every delivery in the log, and one step event is redeliverable with the same webhook-id', async () => {
    const path = `/runs/${jobId}/deliveries`;
    const log = await api(stack.baseUrl, 'GET', path, { key: team.key });
    expect(log.status).toBe(200);
    expect(log.body).toMatchObject({ event: 'run.completed', state: 'delivered', attempts: 1 });
    const events = log.body.events as { event: string; nodeId?: string; webhookId: string; state: string }[];
    expect(events.map((e) => [e.event, e.nodeId, e.state]).sort()).toEqual(
      [
        ['run.completed', undefined, 'delivered'],
        ['run.started', undefined, 'delivered'],
        ['step.completed', 'llm', 'delivered'],
        ['step.completed', 'show', 'delivered'],
        ['step.completed', 'topic', 'delivered'],
      ].sort(),
    );
    const llm = events.find((e) => e.nodeId === 'llm');
    expect(llm?.webhookId).toBe(webhookId(jobId, 'step.completed#llm'));

    const again = await api(stack.baseUrl, 'POST', `${path}/redeliver`, {
      key: team.key,
      body: { event: 'step.completed', nodeId: 'llm' },
    });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body).toEqual({
      jobId,
      event: 'step.completed',
      nodeId: 'llm',
      webhookId: llm?.webhookId,
      state: 'pending',
      attempt: 2,
    });
    const got = await waitForDeliveries(jobId, (all) => all.length === 6);
    expect(got.filter((g) => g.id === llm?.webhookId)).toHaveLength(2);
    const after = await api(stack.baseUrl, 'GET', path, { key: team.key });
    const redelivered = (after.body.events as { nodeId?: string; attempts: number; state: string }[]).find(
      (e) => e.nodeId === 'llm',
    );
    expect(redelivered).toMatchObject({ attempts: 2, state: 'delivered' });

    // A delivery the run never opened is named in a 400; the end's is still redelivered without a body.
    const unknown = await api(stack.baseUrl, 'POST', `${path}/redeliver`, {
      key: team.key,
      body: { event: 'step.failed', nodeId: 'llm' },
    });
    expect(unknown.status).toBe(400);
    const end = await api(stack.baseUrl, 'POST', `${path}/redeliver`, { key: team.key });
    expect(end.status, JSON.stringify(end.body)).toBe(202);
    expect(end.body).toMatchObject({ event: 'run.completed', attempt: 2 });
    // Received before the next test looks at the queue for this run's messages.
    const all = await waitForDeliveries(jobId, (received) => received.length === 7);
    expect(all.filter((g) => g.id === webhookId(jobId, 'run.completed'))).toHaveLength(2);
  }, 120_000);

  it('a stream record handed over twice more opens no delivery and sends nothing', async () => {
    const raw = await stack.deps.ddb.send(
      new GetItemCommand({ TableName: stack.deps.tableName, Key: marshalled(stepKey(jobId, 'show')) }),
    );
    expect(raw.Item?.notify).toEqual({ BOOL: true });
    const record = {
      eventID: 'again',
      eventName: 'INSERT' as const,
      eventSource: 'aws:dynamodb',
      dynamodb: {
        Keys: marshalled(stepKey(jobId, 'show')),
        NewImage: raw.Item,
        SequenceNumber: '1',
        StreamViewType: 'NEW_AND_OLD_IMAGES' as const,
      },
    };
    const fanOut = invokedAs('RunEventWebhooks', makeFanOutHandler(stack.deps));
    for (let i = 0; i < 2; i++) {
      expect(await fanOut({ Records: [record] } as unknown as DynamoDBStreamEvent, {} as never)).toEqual({
        batchItemFailures: [],
      });
    }
    // No message of the show step's event (another of the run's may still be leaving the queue).
    const waiting = (await queueContents(stack.resources, 'Webhooks')).filter((m) => {
      const message = JSON.parse(m.body) as { jobId?: string; nodeId?: string };
      return message.jobId === jobId && message.nodeId === 'show';
    });
    expect(waiting).toEqual([]);
    const show = receivedFor(jobId).filter((g) => g.id === webhookId(jobId, 'step.completed#show'));
    expect(show).toHaveLength(1);
  });
});

describe('a delivery whose message could not be sent', () => {
  it('is taken back with its count, so the stream hands the record over again and it opens then', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, chain);
    const jobId = await startOk(team, workflowId, { webhookEvents: ['step.completed'] });
    await waitForDeliveries(jobId, (all) => all.length === 3);
    // The real end of its last step, as the stream gave it, but for a step of its own.
    const raw = await stack.deps.ddb.send(
      new GetItemCommand({ TableName: stack.deps.tableName, Key: marshalled(stepKey(jobId, 'show')) }),
    );
    const ghost = stepKey(jobId, 'ghost');
    const record = {
      eventID: 'ghost',
      eventName: 'INSERT' as const,
      eventSource: 'aws:dynamodb',
      dynamodb: {
        Keys: marshalled(ghost),
        NewImage: { ...raw.Item, SK: { S: ghost.SK }, nodeId: { S: 'ghost' } },
        SequenceNumber: '7',
        StreamViewType: 'NEW_AND_OLD_IMAGES' as const,
      },
    };
    const event = { Records: [record] } as unknown as DynamoDBStreamEvent;
    const countOf = async () =>
      (
        await stack.deps.ddb.send(
          new GetCommand({ TableName: stack.deps.tableName, Key: stepEventCountKey(jobId), ConsistentRead: true }),
        )
      ).Item?.sent;
    const deliveryOf = async () =>
      (
        await stack.deps.ddb.send(
          new GetCommand({
            TableName: stack.deps.tableName,
            Key: webhookDeliveryKey(jobId, 'step.completed#ghost'),
            ConsistentRead: true,
          }),
        )
      ).Item;
    expect(await countOf()).toBe(3);

    const failing = faultyDeps(stack, { failSqs: (command) => command === 'SendMessageCommand' });
    const refused = await invokedAs('RunEventWebhooks', makeFanOutHandler(failing))(event, {} as never);
    expect(refused).toEqual({ batchItemFailures: [{ itemIdentifier: '7' }] });
    expect(await deliveryOf()).toBeUndefined();
    expect(await countOf()).toBe(3);

    const handed = await invokedAs('RunEventWebhooks', makeFanOutHandler(stack.deps))(event, {} as never);
    expect(handed).toEqual({ batchItemFailures: [] });
    expect(await deliveryOf()).toMatchObject({ event: 'step.completed', nodeId: 'ghost' });
    expect(await countOf()).toBe(4);
    await waitForDeliveries(jobId, (all) => all.some((g) => g.id === webhookId(jobId, 'step.completed#ghost')));
  }, 120_000);

  it('mid-batch: that record and every later one are reported, the later ones untried; the retry opens them', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, chain);
    const jobId = await startOk(team, workflowId, { webhookEvents: ['step.completed'] });
    await waitForDeliveries(jobId, (all) => all.length === 3);
    const raw = await stack.deps.ddb.send(
      new GetItemCommand({ TableName: stack.deps.tableName, Key: marshalled(stepKey(jobId, 'show')) }),
    );
    // Three step ends of its own, as the stream gives them, in sequence order.
    const recordOf = (nodeId: string, sequenceNumber: string) => {
      const key = stepKey(jobId, nodeId);
      return {
        eventID: nodeId,
        eventName: 'INSERT' as const,
        eventSource: 'aws:dynamodb',
        dynamodb: {
          Keys: marshalled(key),
          NewImage: { ...raw.Item, SK: { S: key.SK }, nodeId: { S: nodeId } },
          SequenceNumber: sequenceNumber,
          StreamViewType: 'NEW_AND_OLD_IMAGES' as const,
        },
      };
    };
    const records = [recordOf('first', '21'), recordOf('second', '22'), recordOf('third', '23')];
    const deliveryOf = async (nodeId: string) =>
      (
        await stack.deps.ddb.send(
          new GetCommand({
            TableName: stack.deps.tableName,
            Key: webhookDeliveryKey(jobId, `step.completed#${nodeId}`),
            ConsistentRead: true,
          }),
        )
      ).Item;
    // Only the second record's message is refused.
    const failing = faultyDeps(stack, {
      failSqs: (command, input) =>
        command === 'SendMessageCommand' &&
        String((input as { MessageBody?: string }).MessageBody).includes('"nodeId":"second"'),
    });
    const refused = await invokedAs('RunEventWebhooks', makeFanOutHandler(failing))(
      { Records: records } as unknown as DynamoDBStreamEvent,
      {} as never,
    );
    expect(refused).toEqual({ batchItemFailures: [{ itemIdentifier: '22' }, { itemIdentifier: '23' }] });
    expect(await deliveryOf('first')).toMatchObject({ nodeId: 'first' });
    expect(await deliveryOf('second')).toBeUndefined();
    expect(await deliveryOf('third')).toBeUndefined();

    // Lambda hands the batch over again from the lowest sequence number reported.
    const handed = await invokedAs('RunEventWebhooks', makeFanOutHandler(stack.deps))(
      { Records: records.slice(1) } as unknown as DynamoDBStreamEvent,
      {} as never,
    );
    expect(handed).toEqual({ batchItemFailures: [] });
    expect(await deliveryOf('second')).toMatchObject({ nodeId: 'second' });
    expect(await deliveryOf('third')).toMatchObject({ nodeId: 'third' });
  }, 120_000);
});

describe('a delivery opened whose consumer died before its send', () => {
  it('is sent when the stream hands the record over again (never attempted), and only then', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, chain);
    const jobId = await startOk(team, workflowId, { webhookEvents: ['step.completed'] });
    await waitForDeliveries(jobId, (all) => all.length === 3);
    const raw = await stack.deps.ddb.send(
      new GetItemCommand({ TableName: stack.deps.tableName, Key: marshalled(stepKey(jobId, 'show')) }),
    );
    const lost = stepKey(jobId, 'lost');
    const event = {
      Records: [
        {
          eventName: 'INSERT',
          dynamodb: {
            Keys: marshalled(lost),
            NewImage: { ...raw.Item, SK: { S: lost.SK }, nodeId: { S: 'lost' } },
            SequenceNumber: '11',
          },
        },
      ],
    } as unknown as DynamoDBStreamEvent;
    // The write the dead invocation made; its message never went out.
    const ref = { event: 'step.completed' as const, nodeId: 'lost' };
    expect(await openLifecycleDelivery(stack.deps, jobId, ref, 1_900_000_000)).toBe('opened');
    expect(await openLifecycleDelivery(stack.deps, jobId, ref, 1_900_000_000)).toBe('unsent');
    const handed = await invokedAs('RunEventWebhooks', makeFanOutHandler(stack.deps))(event, {} as never);
    expect(handed).toEqual({ batchItemFailures: [] });
    const id = webhookId(jobId, 'step.completed#lost');
    await waitForDeliveries(jobId, (all) => all.some((g) => g.id === id));
    // Attempted now: handed over once more, it is a duplicate and nothing is sent.
    await waitFor(async () => {
      const log = await api(stack.baseUrl, 'GET', `/runs/${jobId}/deliveries`, { key: team.key });
      return (log.body.events as { nodeId?: string; attempts: number }[]).some(
        (e) => e.nodeId === 'lost' && e.attempts === 1,
      );
    });
    expect(await openLifecycleDelivery(stack.deps, jobId, ref, 1_900_000_000)).toBe('duplicate');
    expect(receivedFor(jobId).filter((g) => g.id === id)).toHaveLength(1);
  }, 120_000);
});

/** Polls `ready` until it holds (generously: a loaded machine). */
const waitFor = async (ready: () => Promise<boolean>, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

/** A table key as the low-level client takes it. */
const marshalled = (key: { PK: string; SK: string }) => ({ PK: { S: key.PK }, SK: { S: key.SK } });

describe('a failing step', () => {
  it('gives step.failed and run.failed when chosen, and nothing it did not choose', async () => {
    const team = await newTeam();
    const steps = [
      { key: 'topic', type: 'TextEntry', config: { text: 'otters' } },
      { key: 'boom', type: 'PromptBuilder', config: { template: 'About {{0}}' }, inputs: ['topic'] },
      { key: 'show', type: 'TextConsole', inputs: ['boom'] },
    ];
    const workflowId = await createWorkflow(stack, team, steps);
    failNext.add('boom');
    const jobId = await startOk(team, workflowId, { webhookEvents: ['step.failed', 'run.failed'] });
    const ended = await waitForEnd(stack.baseUrl, team.key, jobId);
    expect(ended.body.status).toBe('failed');
    await streamPassed(team);
    const got = await waitForDeliveries(jobId, (all) => all.length >= 2);
    expect(got.map((g) => g.event).sort()).toEqual(['run.failed', 'step.failed']);
    const failed = v.parse(StepWebhookBodySchema, got.find((g) => g.event === 'step.failed')?.body);
    expect(failed.step).toMatchObject({ node_id: 'boom', step_type: 'PromptBuilder', status: 'failed' });
    expect(failed.step.error).toEqual(expect.any(String));
    expect(failed.step).not.toHaveProperty('result');

    // A resume may choose its own events: the new run is its own.
    const resumed = await api(stack.baseUrl, 'POST', `/runs/${jobId}/resume`, {
      key: team.key,
      body: { callbackUrl: receiver.url, callbackSecret: secret, webhookEvents: ['run.started', 'run.completed'] },
    });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const next = resumed.body.jobId as string;
    const nextGot = await waitForDeliveries(next, (all) => all.length >= 2);
    expect(nextGot.map((g) => g.event).sort()).toEqual(['run.completed', 'run.started']);
  }, 120_000);
});

describe('a run that chose nothing', () => {
  it("gets exactly one end delivery with today's body and headers, and no step event", async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, chain);
    const started = await start(team, workflowId, { callbackUrl: receiver.url, callbackSecret: secret });
    expect(started.status).toBe(200);
    const jobId = started.body.jobId as string;
    await waitForEnd(stack.baseUrl, team.key, jobId);
    await waitForDeliveries(jobId, (all) => all.length >= 1);
    await streamPassed(team);
    const got = receivedFor(jobId);
    expect(got).toHaveLength(1);
    const [end] = got as [Verified];
    expect(end.event).toBe('run.completed');
    expect(end.id).toBe(webhookId(jobId, 'run.completed'));
    expect(Object.keys(end.body).sort()).toEqual(['event', 'jobId', 'output', 'progress', 'status', 'steps']);
    // Its step items carry no mark, and it has one delivery item and no count of step events.
    const partition = await stack.deps.ddb.send(
      new QueryCommand({
        TableName: stack.deps.tableName,
        KeyConditionExpression: 'PK = :pk',
        ExpressionAttributeValues: { ':pk': { S: runPartition(jobId) } },
        ConsistentRead: true,
      }),
    );
    const items = partition.Items ?? [];
    expect(items.filter((i) => i.SK?.S?.startsWith('WEBHOOK#')).map((i) => i.SK?.S)).toEqual(['WEBHOOK#run.completed']);
    expect(items.filter((i) => i.SK?.S?.startsWith('STEP#') && i.notify !== undefined)).toEqual([]);
    expect(items.filter((i) => i.SK?.S === stepEventCountKey(jobId).SK)).toEqual([]);
    const log = await api(stack.baseUrl, 'GET', `/runs/${jobId}/deliveries`, { key: team.key });
    expect(log.body).not.toHaveProperty('events');
  }, 120_000);
});

describe('a wide workflow', () => {
  it(`sends exactly ${stepEventCap} step events, and its end`, async () => {
    const team = await newTeam();
    const wide = Array.from({ length: stepEventCap + 10 }, (_, i) => ({
      key: `s${i}`,
      type: 'TextEntry',
      config: { text: `t${i}` },
    }));
    const workflowId = await createWorkflow(stack, team, wide, 'Wide');
    const jobId = await startOk(team, workflowId, { webhookEvents: ['step.completed', 'run.completed'] });
    const ended = await waitForEnd(stack.baseUrl, team.key, jobId, 120_000);
    expect(ended.body.status).toBe('completed');
    await streamPassed(team);
    const got = await waitForDeliveries(jobId, (all) => all.length >= stepEventCap + 1, 120_000);
    expect(got.filter((g) => g.event === 'step.completed')).toHaveLength(stepEventCap);
    // A step event's body does not grow with the run: it carries its step, not the Run's 60 steps
    // (each was 8.8 KB here when it carried the Run; now about 0.3 KB).
    const stepBytes = receiver.received
      .filter((r) => {
        const body = JSON.parse(r.body) as { jobId?: string; event?: string };
        return body.jobId === jobId && body.event === 'step.completed';
      })
      .map((r) => Buffer.byteLength(r.body));
    expect(Math.max(...stepBytes)).toBeLessThan(1024);
    expect(got.filter((g) => g.event === 'run.completed')).toHaveLength(1);
    // The end event carries every step.
    const end = got.find((g) => g.event === 'run.completed');
    expect(end?.body.steps).toHaveLength(stepEventCap + 10);
    const count = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: stepEventCountKey(jobId), ConsistentRead: true }),
    );
    expect(count.Item?.sent).toBe(stepEventCap);
    const log = await api(stack.baseUrl, 'GET', `/runs/${jobId}/deliveries`, { key: team.key });
    expect(log.body.events).toHaveLength(stepEventCap + 1);
    expect(streamFailures).toEqual([]);
    // Only the first 50 steps in the workflow's order are marked: the others never reach the consumer.
    const partition = await stack.deps.ddb.send(
      new QueryCommand({
        TableName: stack.deps.tableName,
        KeyConditionExpression: 'PK = :pk AND begins_with(SK, :step)',
        ExpressionAttributeValues: { ':pk': { S: runPartition(jobId) }, ':step': { S: 'STEP#' } },
        ConsistentRead: true,
      }),
    );
    const marked = (partition.Items ?? []).filter((i) => i.notify?.BOOL === true).map((i) => i.nodeId?.S);
    expect(marked.sort()).toEqual(
      wide
        .slice(0, stepEventCap)
        .map((s) => s.key)
        .sort(),
    );
    // The count is the backstop: one step event more, handed to the consumer, is refused and not sent.
    const [first] = partition.Items ?? [];
    const ghost = stepKey(jobId, 'ghost');
    const refused = await invokedAs('RunEventWebhooks', makeFanOutHandler(stack.deps))(
      {
        Records: [
          {
            eventName: 'INSERT',
            dynamodb: {
              Keys: marshalled(ghost),
              NewImage: { ...first, SK: { S: ghost.SK }, nodeId: { S: 'ghost' }, notify: { BOOL: true } },
              SequenceNumber: '9',
            },
          },
        ],
      } as unknown as DynamoDBStreamEvent,
      {} as never,
    );
    expect(refused).toEqual({ batchItemFailures: [] });
    const afterGhost = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: stepEventCountKey(jobId), ConsistentRead: true }),
    );
    expect(afterGhost.Item?.sent).toBe(stepEventCap);
    const ghostDelivery = await stack.deps.ddb.send(
      new GetCommand({
        TableName: stack.deps.tableName,
        Key: webhookDeliveryKey(jobId, 'step.completed#ghost'),
        ConsistentRead: true,
      }),
    );
    expect(ghostDelivery.Item).toBeUndefined();
  }, 240_000);
});

describe('redeliveries of a run', () => {
  it(`take ${redeliveriesPerRunPerMinute} a minute across its deliveries; one more is 429 with Retry-After, nothing queued`, async () => {
    const team = await newTeam();
    const steps = Array.from({ length: redeliveriesPerRunPerMinute + 1 }, (_, i) => ({
      key: `s${i}`,
      type: 'TextEntry',
      config: { text: `t${i}` },
    }));
    const workflowId = await createWorkflow(stack, team, steps, 'Eleven');
    const jobId = await startOk(team, workflowId, { webhookEvents: ['step.completed'] });
    await waitForDeliveries(jobId, (all) => all.length === steps.length, 120_000);
    const path = `/runs/${jobId}/deliveries`;
    // The worker records each delivery just after its receiver answered.
    await waitFor(async () => {
      const log = await api(stack.baseUrl, 'GET', path, { key: team.key });
      const events = (log.body.events ?? []) as { state: string }[];
      return events.length === steps.length && events.every((e) => e.state === 'delivered');
    });
    const redeliverStep = (nodeId: string) =>
      api(stack.baseUrl, 'POST', `${path}/redeliver`, { key: team.key, body: { event: 'step.completed', nodeId } });
    // Each a delivery's first redelivery, so only the run's limit can refuse one.
    for (const step of steps.slice(0, redeliveriesPerRunPerMinute)) {
      const queued = await redeliverStep(step.key);
      expect(queued.status, JSON.stringify(queued.body)).toBe(202);
    }
    const last = steps.at(-1)?.key as string;
    const refused = await redeliverStep(last);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'Too many redeliveries; retry later' });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const log = await api(stack.baseUrl, 'GET', path, { key: team.key });
    const refusedDelivery = (log.body.events as { nodeId?: string; attempts: number; state: string }[]).find(
      (e) => e.nodeId === last,
    );
    expect(refusedDelivery).toMatchObject({ attempts: 1, state: 'delivered' });
    await waitForDeliveries(jobId, (all) => all.length === steps.length + redeliveriesPerRunPerMinute, 120_000);
  }, 240_000);
});

describe('a run start', () => {
  it('refuses a bad webhookEvents with a 400 naming the field', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, chain);
    const cases: [unknown, string][] = [
      [{ callbackUrl: receiver.url, webhookEvents: ['run.exploded'] }, '"run.started" | "step.completed"'],
      [{ callbackUrl: receiver.url, webhookEvents: ['run.started', 'run.started'] }, webhookEventsMessages.duplicate],
      [{ callbackUrl: receiver.url, webhookEvents: [] }, webhookEventsMessages.empty],
      [{ webhookEvents: ['run.completed'] }, webhookEventsMessages.needsCallbackUrl],
      [{ callbackUrl: receiver.url, webhookEvents: 'run.started' }, 'webhookEvents'],
    ];
    for (const [body, words] of cases) {
      const answer = await start(team, workflowId, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(String(answer.body.error)).toContain('webhookEvents');
      expect(String(answer.body.error)).toContain(words);
    }
    // A deferral is refused the same way.
    const deferred = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, {
      key: team.key,
      body: { defer: true, webhookEvents: ['run.started'] },
    });
    expect(deferred.status).toBe(400);
  });

  it('keeps the choice with a deferral, and the run it becomes sends it', async () => {
    const { setLiveMultiplier } = await import('../functions/store/price-multiplier.ts');
    const { dispatcherHandler } = await import('./support/runs.ts');
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, chain);
    await setLiveMultiplier(stack.deps, 2);
    const deferred = await start(team, workflowId, {
      defer: true,
      maxMultiplier: 0.5,
      callbackUrl: receiver.url,
      callbackSecret: secret,
      webhookEvents: ['run.started'],
    });
    expect(deferred.status, JSON.stringify(deferred.body)).toBe(202);
    await setLiveMultiplier(stack.deps, 0.5);
    await dispatcherHandler(stack.deps)();
    await setLiveMultiplier(stack.deps, null);
    const read = await api(stack.baseUrl, 'GET', `/deferred-runs/${deferred.body.deferredJobId}`, { key: team.key });
    expect(read.body.status).toBe('dispatched');
    const jobId = read.body.jobId as string;
    await waitForEnd(stack.baseUrl, team.key, jobId);
    await streamPassed(team);
    expect(receivedFor(jobId).map((g) => g.event)).toEqual(['run.started']);
  }, 120_000);
});

describe('the CLI and the typed client', () => {
  it('start a run with --event, list its deliveries, and redeliver one step event by name', async () => {
    const { runCli } = await import('./support/cli.ts');
    const { createClient, isStepWebhook } = await import('../packages/client/src/index.ts');
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, chain, 'Cli');
    const cli = (args: string[]) => runCli({ baseUrl: stack.baseUrl, key: team.key }, args);
    const started = await cli([
      'run',
      workflowId,
      '--callback-url',
      receiver.url,
      '--callback-secret',
      secret,
      '--event',
      'step.completed',
      '--event',
      'run.completed',
      '--watch',
      '--json',
    ]);
    expect(started.code, started.stderr).toBe(0);
    const { jobId } = JSON.parse(started.stdout) as { jobId: string };
    const got = await waitForDeliveries(jobId, (all) => all.length === 4);
    const bodies = got.map((g) => g.body as Parameters<typeof isStepWebhook>[0]);
    expect(
      bodies
        .filter(isStepWebhook)
        .map((b) => b.step.node_id)
        .sort(),
    ).toEqual(['llm', 'show', 'topic']);

    const listed = await cli(['deliveries', jobId]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(
      `step.completed llm: delivered, 1 attempt(s), ${webhookId(jobId, 'step.completed#llm')}`,
    );
    const again = await cli([
      'deliveries',
      jobId,
      '--redeliver',
      '--event',
      'step.completed',
      '--node-id',
      'topic',
      '--json',
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ event: 'step.completed', nodeId: 'topic', attempt: 2 });
    const misused = await cli(['deliveries', jobId, '--node-id', 'topic']);
    expect(misused.code).toBe(2);

    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    await waitForDeliveries(jobId, (all) => all.length === 5);
    const queued = await client.redeliverWebhook(jobId, { delivery: { event: 'step.completed', nodeId: 'show' } });
    expect(queued).toMatchObject({ nodeId: 'show', webhookId: webhookId(jobId, 'step.completed#show') });
    const log = await client.listDeliveries(jobId);
    expect(log.events?.map((e) => e.nodeId ?? e.event).sort()).toEqual(['llm', 'run.completed', 'show', 'topic']);
  }, 120_000);
});
