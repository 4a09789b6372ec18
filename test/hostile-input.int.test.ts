/**
 * Keys and numbers that cannot wedge a run: step keys and `apiInputKey` follow one
 * pattern, numbers fit storage, SQS bodies carry only what SQS accepts, and the sweep fails a run
 * whose messages keep being refused, releasing its hold and its workflow's lock. Through the local
 * API and the real handlers, against the emulators; SQS's refusal is injected only where fauxqs
 * cannot be made to refuse an escaped body.
 */
import { ReceiveMessageCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { maxSweepRefusals } from '../functions/app/sweep-queued-runs.ts';
import { canvasKey, workflowLockKey } from '../functions/store/keys.ts';
import { sqsMessageBody } from '../functions/store/queues.ts';
import { sendStepMessages } from '../functions/store/run/index.ts';
import type { LocalApi } from '../local/api-gateway.ts';
import { localAwsConfig } from '../local/emulators.ts';
import { localDeps } from '../local/local-deps.ts';
import { stepKeyPattern } from '../schemas/workflow-words.ts';
import { queueContents } from './support/queue-contents.ts';
import {
  api,
  dispatcherHandler,
  expectBalanced,
  getRunCall,
  ledgerOf,
  pairPrice,
  pairSteps,
  startRunCall,
  startSecondApi,
  waitForEnd,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile, startWorkers } from './support/stack.ts';

const { stack, closers } = stackPerFile();

const team = (credits = 100) => seedUnthrottledTeam(stack.deps, credits);

const createCall = (t: SeededTeam, steps: unknown[]) =>
  api(stack.baseUrl, 'POST', '/workflows', { key: t.key, body: { name: 'Hostile', agentId: t.agentId, steps } });

/** A TextEntry `key` read by a TextConsole: the smallest workflow naming a step by `key`. */
const twoSteps = (key: string, config: Record<string, unknown> = { text: 'x' }) => [
  { key, type: 'TextEntry', config },
  { key: 'out', type: 'TextConsole', inputs: [key] },
];

const keyRule = 'letters, digits, _ and -, 1 to 64 characters; not __proto__, constructor or prototype';

describe('step keys and apiInputKey', () => {
  it('__proto__, constructor and prototype as step keys are the 422 (they were 201, then every start a 500)', async () => {
    const t = await team();
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const answer = await createCall(t, twoSteps(key));
      expect([answer.status, answer.body.error], key).toEqual([422, 'Workflow validation failed']);
      expect(answer.body.errors, key).toEqual([
        { code: 'invalid_key', key, path: 'key', message: `Step key "${key}" is not allowed: ${keyRule}` },
      ]);
    }
  });

  it('a key outside the pattern is the 422, each reported; 64 characters of the pattern are accepted', async () => {
    const t = await team();
    const refused = ['a\ufffe', 'a\uffff', 'x\ud800', 'k'.repeat(65), 'a b', 'a.b', 'é', '😀', 'a/b', 'a\u0000'];
    for (const key of refused) {
      const answer = await createCall(t, twoSteps(key));
      expect([answer.status, answer.body.errors], JSON.stringify(key)).toEqual([
        422,
        [
          {
            code: 'invalid_key',
            key,
            path: 'key',
            message: `Step key ${JSON.stringify(key)} is not allowed: ${keyRule}`,
          },
        ],
      ]);
    }
    for (const key of ['k'.repeat(64), 'A-z_0-9', '_', '-']) {
      expect((await createCall(t, twoSteps(key))).status, key).toBe(201);
      expect(stepKeyPattern.test(key)).toBe(true);
    }
  });

  it('an apiInputKey outside the pattern is the 422 at config.apiInputKey', async () => {
    const t = await team();
    for (const apiInputKey of ['__proto__', 'constructor', 'prototype', 'a\ufffe', 'k'.repeat(65), 'a b']) {
      const answer = await createCall(t, twoSteps('in', { text: 'x', apiInputKey }));
      expect([answer.status, answer.body.errors], JSON.stringify(apiInputKey)).toEqual([
        422,
        [
          {
            code: 'invalid_config',
            key: 'in',
            path: 'config.apiInputKey',
            message: `apiInputKey ${JSON.stringify(apiInputKey)} is not allowed: ${keyRule}`,
          },
        ],
      ]);
    }
    expect((await createCall(t, twoSteps('in', { text: 'x', apiInputKey: 'k'.repeat(64) }))).status).toBe(201);
  });

  it('an apiInputKey named like an Object.prototype member (toString) reads only the run’s own inputs', async () => {
    const t = await team();
    const workflowId = await createWorkflow(stack, t, twoSteps('in', { text: 'as built', apiInputKey: 'toString' }));
    const workers = await startWorkers(stack);
    try {
      const plain = await startRunCall(stack.baseUrl, t.key, workflowId);
      const ended = await waitForEnd(stack.baseUrl, t.key, String(plain.body.jobId));
      expect(ended.body).toMatchObject({ status: 'completed', output: [{ node_id: 'out', result: 'as built' }] });
      const given = await startRunCall(stack.baseUrl, t.key, workflowId, { inputs: { toString: 'given' } });
      const run = await waitForEnd(stack.baseUrl, t.key, String(given.body.jobId));
      expect(run.body).toMatchObject({ status: 'completed', output: [{ node_id: 'out', result: 'given' }] });
    } finally {
      await workers.stop();
    }
  });

  it('a stored workflow with such a key (written before the rule) answers its start with the 422, not a 500', async () => {
    const t = await team();
    const workflowId = await createWorkflow(stack, t, twoSteps('in'));
    const { Item } = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: canvasKey(workflowId), ConsistentRead: true }),
    );
    const canvas = Item?.canvas as { nodes: { id: string }[]; edges: { source: string }[] };
    for (const key of ['constructor', 'a\ufffe']) {
      (canvas.nodes[0] as { id: string }).id = key;
      (canvas.edges[0] as { source: string }).source = key;
      await stack.deps.ddb.send(new PutCommand({ TableName: stack.deps.tableName, Item: { ...Item, canvas } }));
      const started = await startRunCall(stack.baseUrl, t.key, workflowId);
      expect([started.status, started.body.success], JSON.stringify(key)).toEqual([422, false]);
      expect(started.body.errors).toContainEqual(expect.objectContaining({ code: 'invalid_key', key, path: 'key' }));
    }
  });
});

describe('numbers storage cannot hold', () => {
  it('maxMultiplier: at least 0.0001, at most 10, at most 4 decimals; else a 400 (1e-200 was a 500)', async () => {
    const t = await team();
    const workflowId = await createWorkflow(stack, t, pairSteps);
    for (const [maxMultiplier, problem] of [
      [1e-200, 'Invalid value: Expected >=0.0001 but received 1e-200'],
      [0.00009, 'Invalid value: Expected >=0.0001 but received 0.00009'],
      [0, 'Invalid value: Expected >=0.0001 but received 0'],
      [-0.5, 'Invalid value: Expected >=0.0001 but received -0.5'],
      [10.0001, 'Invalid value: Expected <=10 but received 10.0001'],
      [1e308, 'Invalid value: Expected <=10 but received 1e+308'],
      [0.12345, 'at most 4 decimals'],
      [0.00015, 'at most 4 decimals'],
    ] as const) {
      const answer = await startRunCall(stack.baseUrl, t.key, workflowId, { defer: true, maxMultiplier });
      expect([answer.status, answer.body], String(maxMultiplier)).toEqual([
        400,
        { error: `Invalid request body: maxMultiplier: ${problem}` },
      ]);
    }
    // -0 is JSON's spelling of 0.
    const negativeZero = await startRunCall(stack.baseUrl, t.key, workflowId, '{"defer":true,"maxMultiplier":-0}');
    expect(negativeZero.status).toBe(400);
    for (const maxMultiplier of [0.0001, 0.0003, 0.7, 1.2345, 10]) {
      const answer = await startRunCall(stack.baseUrl, t.key, workflowId, { defer: true, maxMultiplier });
      expect(answer.status, String(maxMultiplier)).toBe(202);
    }
  });

  it('a number in a step config too small or too large to store is a 400 naming it (they were 500s)', async () => {
    const t = await team();
    const rule = 'a number must be 0 or between 1e-130 and 9007199254740991 in size';
    for (const [config, at] of [
      [{ data: 1e-200 }, 'data'],
      [{ data: { a: [1, -1e-131] } }, 'data.a[1]'],
      [{ data: 1e308 }, 'data'],
      [{ data: 2 ** 53 }, 'data'],
      [{ data: -1e20 }, 'data'],
    ] as const) {
      const answer = await createCall(t, [{ key: 'data', type: 'JsonLoader', config }]);
      expect([answer.status, answer.body], JSON.stringify(config)).toEqual([
        400,
        { error: `Invalid request body: steps[0].config.${at}: ${rule}` },
      ]);
    }
    const temperature = await createCall(t, [{ key: 'llm', type: 'LlmWorker', config: { temperature: 1e-200 } }]);
    expect([temperature.status, temperature.body.error]).toEqual([
      400,
      `Invalid request body: steps[0].config.temperature: ${rule}`,
    ]);
    // The edges themselves, and -0 (stored as 0), are stored.
    for (const data of [1e-130, -1e-130, 2 ** 53 - 1, -(2 ** 53 - 1), 0, 0.1, 123.456]) {
      const answer = await createCall(t, [{ key: 'data', type: 'JsonLoader', config: { data } }]);
      expect(answer.status, String(data)).toBe(201);
    }
    const negativeZero = await api(stack.baseUrl, 'POST', '/workflows', {
      key: t.key,
      body: `{"name":"z","agentId":"${t.agentId}","steps":[{"key":"d","type":"JsonLoader","config":{"data":-0}}]}`,
    });
    expect(negativeZero.status).toBe(201);
  });
});

describe('SQS message bodies', () => {
  const allowedBySqs = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

  it('are escaped to the characters SQS accepts, and read back as sent', () => {
    const nodeId = 'a\ufffe\uffff\ud800\udfff\u0000\u0008\u000b\u001f😀é\t';
    const body = sqsMessageBody({ jobId: 'j', nodeId });
    // JSON.stringify leaves U+FFFE and U+FFFF raw, and SQS refuses them.
    expect(allowedBySqs.test(JSON.stringify({ nodeId }))).toBe(false);
    expect(allowedBySqs.test(body)).toBe(true);
    // fauxqs checks UTF-16 units, so refuses astral characters too: they are escaped as their pair; é stays as it is.
    expect(body).toMatch(/^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD]*$/);
    expect(body).toContain('é');
    expect(JSON.parse(body)).toEqual({ jobId: 'j', nodeId });
  });

  it('fauxqs refuses U+FFFE as SQS does, and takes the escaped body the steps use', async () => {
    const sqs = new SQSClient({ ...localAwsConfig, endpoint: stack.resources.sqsS3Endpoint });
    closers.push(async () => sqs.destroy());
    const raw = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: stack.resources.queueUrls.Steps,
        Entries: [{ Id: '0', MessageBody: JSON.stringify({ nodeId: 'a\ufffe' }) }],
      }),
    );
    expect(raw.Failed).toEqual([
      expect.objectContaining({ Id: '0', SenderFault: true, Code: 'InvalidMessageContents' }),
    ]);
    const deps = localDeps(stack.resources);
    await sendStepMessages(deps, { jobId: 'job', workflowId: 'wf', teamId: undefined }, ['a\ufffe\uffff😀']);
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: stack.resources.queueUrls.Steps, MaxNumberOfMessages: 10 }),
    );
    expect(Messages.map((m) => JSON.parse(m.Body ?? ''))).toContainEqual({
      jobId: 'job',
      workflowId: 'wf',
      nodeId: 'a\ufffe\uffff😀',
    });
  });
});

describe('the sweep', () => {
  /** Deps whose SQS refuses, entry by entry as SQS does, every step message of the `workflows`' runs. */
  const refusingDeps = (workflows: Set<string>) => {
    const sqs = new SQSClient({ ...localAwsConfig, endpoint: stack.resources.sqsS3Endpoint });
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Entries?: { Id: string; MessageBody: string }[] };
        if (context.commandName !== 'SendMessageBatchCommand' || !input.Entries) return next(args);
        const refused = input.Entries.filter((e) => workflows.has(JSON.parse(e.MessageBody).workflowId));
        if (refused.length === 0) return next(args);
        return {
          response: {},
          output: {
            $metadata: {},
            Successful: [],
            Failed: refused.map((e) => ({ Id: e.Id, SenderFault: true, Code: 'InvalidMessageContents' })),
          },
        } as never;
      },
      { step: 'initialize', name: 'testRefusal' },
    );
    closers.push(async () => sqs.destroy());
    // Through localDeps, so the commands the handlers send are logged for the least-privilege audit.
    return localDeps(stack.resources, { executors: stack.deps.executors, sqs });
  };

  it('fails a run whose messages keep being refused, releasing its hold and its lock, and sweeps the others', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, pairSteps);
    const refused = new Set([workflowId]);
    const refusing = refusingDeps(refused);
    // The start's own send is refused too: the run is committed and left queued, as the finding saw (a 200).
    const lossyApi: LocalApi = await startSecondApi(refusing);
    closers.push(() => lossyApi.close());
    const started = await startRunCall(lossyApi.baseUrl, t.key, workflowId, {
      callbackUrl: 'https://example.com/hook',
    });
    expect(started.status).toBe(200);
    const jobId = String(started.body.jobId);
    // Another team's run, queued as long: the refusals of the first must not keep it from being re-sent.
    const u = await team(100);
    const otherWorkflow = await createWorkflow(stack, u, pairSteps);

    const later = { ...refusing, now: () => new Date(Date.now() + 3 * 60_000) };
    const held = await ledgerOf(stack.deps, t.teamId);
    expect(held).toMatchObject({ held: pairPrice });
    for (let pass = 1; pass < maxSweepRefusals; pass++) {
      const report = await dispatcherHandler(later)();
      expect(report.resent, `pass ${pass}`).not.toContain(jobId);
      expect((await getRunCall(stack.baseUrl, t.key, jobId)).body.status).toBe('queued');
    }
    const other = String((await startRunCall(stack.baseUrl, u.key, otherWorkflow)).body.jobId);
    const last = await dispatcherHandler(later)();
    expect(last.failed).toEqual(expect.arrayContaining([jobId]));
    expect(last.resent).toContain(other);

    const failed = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(failed.body).toMatchObject({ status: 'failed', progress: 0 });
    expect(failed.body.steps).toContainEqual({
      node_id: 'in',
      step_type: 'TextEntry',
      status: 'failed',
      error: 'The step could not be queued; the run was stopped',
    });
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 0 });
    const lock = await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: workflowLockKey(workflowId), ConsistentRead: true }),
    );
    expect(lock.Item).toBeUndefined();
    // Its webhook says so.
    const webhooks = await queueContents(stack.resources, 'Webhooks');
    expect(webhooks.map((m) => JSON.parse(m.body))).toContainEqual({ jobId, event: 'run.failed' });
    // The workflow is free: the next start is accepted.
    refused.clear();
    expect((await startRunCall(stack.baseUrl, t.key, workflowId)).status).toBe(200);
    // A later pass has nothing more to do with it.
    expect((await dispatcherHandler(later)()).failed).not.toContain(jobId);
  });
});
