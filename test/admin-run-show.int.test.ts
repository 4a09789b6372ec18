/**
 * `npm run admin -- run show <jobId>` (local/run-show.ts): a run's item, steps, webhook delivery and
 * trail query, read from the table, in-process over the local stack and through `local/admin-main.ts`
 * against a table as a deployed stage's (TABLE_NAME, SERVICE_STAGE). Its provider jobs are shown in
 * test/provider-jobs.int.test.ts, where a step has one.
 */
import { spawnSync } from 'node:child_process';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { defaultStackPrefix } from '../lib/stages.ts';
import { runAdmin } from '../local/admin.ts';
import { functionLogGroupName, renderQuery, runTrailQuery, savedQueryNames } from '../platform/log-queries.ts';
import { queueContents, recordOf } from './support/queue-contents.ts';
import {
  loopbackWebhookHandler,
  realStepHandler,
  startRunCall,
  stepHandler,
  stepRecord,
  takeStepMessages,
  waitForEnd,
} from './support/runs.ts';
import { createWorkflow, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';
import { startReceiver } from './support/webhook-receiver.ts';

const { stack, closers } = stackPerFile();

const secret = 'whsec_c2VjcmV0IG9mIHRoZSBydW4gc2hvdyB0ZXN0';
const privateInput = 'a private input the CLI never prints';

/** A finished two-step run whose run.completed webhook was delivered once to a receiver. */
const deliveredRun = async () => {
  const receiver = await startReceiver();
  closers.push(() => receiver.close());
  const team = await seedUnthrottledTeam(stack.deps);
  const workflowId = await createWorkflow(stack, team, [
    { key: 'topic', type: 'TextEntry', config: { text: 'x', apiInputKey: 'topic' } },
    { key: 'show', type: 'TextConsole', inputs: ['topic'] },
  ]);
  const started = await startRunCall(stack.baseUrl, team.key, workflowId, {
    inputs: { topic: privateInput },
    callbackUrl: `${receiver.url}/hooks/token-in-the-path`,
    callbackSecret: secret,
  });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const jobId = started.body.jobId as string;
  const steps = stepHandler(stack.deps);
  for (let round = 0; round < 10; round++) {
    const messages = (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);
    if (messages.length === 0) break;
    await steps({ Records: messages.map((m) => stepRecord(m)) } as SQSEvent);
  }
  expect((await waitForEnd(stack.baseUrl, team.key, jobId)).body.status).toBe('completed');
  const [message] = (await queueContents(stack.resources, 'Webhooks')).filter((m) => m.body.includes(jobId));
  if (!message) throw new Error('no webhook message');
  const webhook = loopbackWebhookHandler(stack.deps);
  const answer = (await webhook({ Records: [recordOf(message)] } as SQSEvent)) as SQSBatchResponse;
  expect(answer.batchItemFailures).toEqual([]);
  expect(receiver.received).toHaveLength(1);
  return { team, jobId, workflowId };
};

describe('run show', () => {
  it("prints the run, its steps, its webhook delivery and its trail's query with the stage's log groups", async () => {
    const { team, jobId, workflowId } = await deliveredRun();
    const apiStackName = 'WorkflowRunApi-prod-Api';
    const result = await runAdmin(['run', 'show', jobId, '--json'], stack.deps, {
      logs: { kind: 'stage', apiStackName },
    });
    expect(result.exitCode, result.output).toBe(0);
    const shown = JSON.parse(result.output);
    expect(shown.run).toMatchObject({
      jobId,
      status: 'completed',
      teamId: team.teamId,
      workflowId,
      steps: { total: 2, completed: 2, skipped: 0 },
      held: 0,
      inputKeys: ['topic'],
      endedAt: expect.any(String),
    });
    expect(shown.steps.map((s: { nodeId: string; status: string }) => [s.nodeId, s.status]).sort()).toEqual([
      ['show', 'completed'],
      ['topic', 'completed'],
    ]);
    expect(shown.providerJobs).toEqual([]);
    expect(shown.webhook).toMatchObject({ event: 'run.completed', state: 'delivered', attempts: 1 });
    expect(shown.webhook.log).toEqual([expect.objectContaining({ attempt: 1, statusCode: 200 })]);
    expect(shown.logs).toEqual({
      query: renderQuery(runTrailQuery(jobId)),
      logGroups: expect.arrayContaining([
        functionLogGroupName(apiStackName, 'StepExecutor'),
        functionLogGroupName(apiStackName, 'WebhookDelivery'),
        functionLogGroupName(apiStackName, 'RunWorkflow'),
      ]),
      savedQuery: savedQueryNames(apiStackName).runTrail,
    });
    expect(shown.logs.query).toContain(`filter jobId = "${jobId}"`);
    // What the run keeps private stays so: its inputs' values, its callback's secret and path.
    expect(result.output).not.toContain(privateInput);
    expect(result.output).not.toContain(secret);
    expect(result.output).not.toContain('token-in-the-path');

    const plain = await runAdmin(['run', 'show', jobId], stack.deps);
    expect(plain.output).toContain('status');
    expect(plain.output).toContain(`"query":"fields @timestamp`);
  });

  it('lists every step the API lists, a skipped step (which has no item) included', async () => {
    const team = await seedUnthrottledTeam(stack.deps);
    const workflowId = await createWorkflow(stack, team, [
      { key: 'data', type: 'JsonLoader', config: { data: '{broken' } },
      { key: 'show', type: 'JsonInspector', inputs: ['data'] },
    ]);
    const started = await startRunCall(stack.baseUrl, team.key, workflowId, {});
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const jobId = started.body.jobId as string;
    // The node executors the stack has: the loader's JSON does not parse, so its step fails.
    const steps = realStepHandler(stack.deps);
    for (let round = 0; round < 10; round++) {
      const messages = (await takeStepMessages(stack.deps)).filter((m) => m.jobId === jobId);
      if (messages.length === 0) break;
      await steps({ Records: messages.map((m) => stepRecord(m)) } as SQSEvent);
    }
    const read = await waitForEnd(stack.baseUrl, team.key, jobId);
    expect(read.body.status, JSON.stringify(read.body)).toBe('failed');
    const listed = (read.body.steps as { node_id: string; status: string }[]).map((s) => [s.node_id, s.status]);
    expect(listed).toEqual([
      ['data', 'failed'],
      ['show', 'skipped'],
    ]);

    const result = await runAdmin(['run', 'show', jobId, '--json'], stack.deps);
    expect(result.exitCode, result.output).toBe(0);
    const shown = JSON.parse(result.output) as { steps: { nodeId: string; status: string; stored: string | null }[] };
    expect(shown.steps.map((s) => [s.nodeId, s.status])).toEqual(listed);
    expect(shown.steps.find((s) => s.nodeId === 'show')).toMatchObject({ stepType: 'JsonInspector', stored: null });
  });

  it('answers 1 for a run that is not there, 2 without a jobId', async () => {
    const missing = await runAdmin(['run', 'show', '00000000-0000-4000-8000-000000000000'], stack.deps);
    expect(missing).toMatchObject({ exitCode: 1, output: expect.stringContaining('No run') });
    expect((await runAdmin(['run', 'show'], stack.deps)).exitCode).toBe(2);
    expect((await runAdmin(['run', 'show', 'a', 'b'], stack.deps)).exitCode).toBe(2);
  });

  it("against a deployed table, names SERVICE_STAGE's log groups (STACK_PREFIX as deployed)", async () => {
    const { jobId } = await deliveredRun();
    const show = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['local/admin-main.ts', 'run', 'show', jobId, '--json'], {
        encoding: 'utf8',
        env: {
          ...process.env,
          TABLE_NAME: stack.deps.tableName,
          AWS_ENDPOINT_URL_DYNAMODB: stack.resources.dynamoDbEndpoint,
          AWS_ACCESS_KEY_ID: 'local',
          AWS_SECRET_ACCESS_KEY: 'local',
          ...env,
        },
      });
    const prod = show({ SERVICE_STAGE: 'prod' });
    expect(prod.status, prod.stderr).toBe(0);
    const shown = JSON.parse(prod.stdout);
    expect(shown.run).toMatchObject({ jobId, status: 'completed' });
    expect(shown.logs.logGroups).toContain(functionLogGroupName(`${defaultStackPrefix}-prod-Api`, 'StepExecutor'));
    const prefixed = JSON.parse(show({ SERVICE_STAGE: 'dev', STACK_PREFIX: 'Acme' }).stdout);
    expect(prefixed.logs.savedQuery).toBe(savedQueryNames('Acme-dev-Api').runTrail);
  });
});
