/**
 * Run starts, reads and cancels through HTTP on the local API (spec 2.3, 3.1, 4.3 to 4.5, 7, 8),
 * with every answer checked against the OpenAPI document. Steps run on the real step-executor
 * handler polling the steps queue, with an instant node executor as the provider edge.
 */
import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { capResetsText, nextSpendMonthStart } from '../functions/domain/monthly-cap.ts';
import { canvasKey, workflowLockKey } from '../functions/store/keys.ts';
import { claimStep, readRunItem, stepLeaseSeconds } from '../functions/store/run/index.ts';
import { createAgent, createProject, getTeam, setPerStepLimit } from '../functions/store/tenancy.ts';
import { activateWorkflow } from '../functions/store/workflows.ts';
import type { LocalApi } from '../local/api-gateway.ts';
import type { QueuePoller } from '../local/event-source.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import { queueContents } from './support/queue-contents.ts';
import {
  api,
  cancelRunCall,
  chainPrice,
  concurrentPosts,
  deliver,
  dispatcherHandler,
  expectBalanced,
  faultyDeps,
  getRunCall,
  ledgerOf,
  pairPrice,
  pairSteps,
  realStepHandler,
  runBody,
  runLinks,
  runParts,
  startRunCall,
  startSecondApi,
  startStepWorkers,
  stepHandler,
  stepRecord,
  stepStatuses,
  sumCharges,
  transactionConflict,
  waitForEnd,
} from './support/runs.ts';
import { addKey, chainSteps, createWorkflow, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack, closers } = stackPerFile();

/** A team with `credits`, and a key (all scopes) whose rate limit the tests cannot reach. */
const team = (credits = 100, key: Parameters<typeof addKey>[2] = {}) => seedUnthrottledTeam(stack.deps, credits, key);

const runAgentCall = (baseUrl: string, key: string, agentId: string, body?: unknown) =>
  api(baseUrl, 'POST', `/agents/${agentId}/runs`, { key, body });

const lockOf = async (workflowId: string) =>
  (
    await stack.deps.ddb.send(
      new GetCommand({ TableName: stack.deps.tableName, Key: workflowLockKey(workflowId), ConsistentRead: true }),
    )
  ).Item;

/** The run item, as a worker claiming one of its steps has read it. */
const runItemOf = async (jobId: string) => {
  const run = await readRunItem(stack.deps, jobId);
  if (!run) throw new Error(`run ${jobId} not found`);
  return run;
};

/** Resolves once the steps queue holds no message, visible or taken by a worker still running it. */
const stepsQueueDrained = () =>
  vi.waitFor(
    async () => {
      const { Attributes = {} } = await stack.deps.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: stack.resources.queueUrls.Steps,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      expect([Attributes.ApproximateNumberOfMessages, Attributes.ApproximateNumberOfMessagesNotVisible]).toEqual([
        '0',
        '0',
      ]);
    },
    { timeout: 60_000, interval: 50 },
  );

// Until the workers start (last block), accepted runs stay `queued`: nothing races the checks.
describe('run starts without workers (runs stay queued)', () => {
  it('answers 200 with the spec fields, holds the estimate and takes the lock; empty and missing bodies run as built', async () => {
    const t = await team(10);
    const [w1, w2, w3] = (await Promise.all([1, 2, 3].map(() => createWorkflow(stack, t)))) as [string, string, string];
    const missing = await startRunCall(stack.baseUrl, t.key, w1);
    const empty = await startRunCall(stack.baseUrl, t.key, w2, '');
    const draft = await startRunCall(stack.baseUrl, t.key, w3, { mode: 'draft', inputs: { topic: 'x' } });
    for (const [answer, workflowId] of [
      [missing, w1],
      [empty, w2],
    ] as const) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toEqual({
        jobId: expect.any(String),
        workflowId,
        status: 'queued',
        estimatedCredits: 2.03,
        stepsCount: 4,
      });
      expect((await lockOf(workflowId))?.jobId).toBe(answer.body.jobId);
    }
    // draft: the LlmWorker's answer is cut to 64 tokens, ceil(200 × 64 / 1000) = 13, at half price
    // (7); the others unchanged.
    expect(draft.body).toMatchObject({ status: 'queued', estimatedCredits: 0.1 });
    const { run } = await runParts(stack.deps, draft.body.jobId as string);
    expect(run).toMatchObject({ status: 'queued', mode: 'draft', inputs: { topic: 'x' }, heldHundredths: 10 });
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({
      balance: 1000 - 203 - 203 - 10,
      held: 203 + 203 + 10,
      charged: 0,
      granted: 1000,
    });
  });

  it('200 concurrent starts of one workflow: exactly one accepted, 199 × 409 naming it', {
    timeout: 180_000,
  }, async () => {
    const t = await team(1000);
    const workflowId = await createWorkflow(stack, t);
    const answers = await concurrentPosts(stack.baseUrl, `/workflows/${workflowId}/runs`, t.key, 200);
    const accepted = answers.filter((a) => a.status === 200);
    expect(accepted).toHaveLength(1);
    const jobId = accepted[0]?.body.jobId as string;
    expect(accepted[0]?.body).toEqual({ jobId, workflowId, status: 'queued', estimatedCredits: 2.03, stepsCount: 4 });
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.map((a) => a.status)).toEqual(Array(199).fill(409));
    for (const answer of refused) {
      expect(answer.body).toEqual({ error: 'This workflow already has a run in progress', activeJobId: jobId });
    }
    expect((await lockOf(workflowId))?.jobId).toBe(jobId);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({
      balance: 100_000 - chainPrice,
      held: chainPrice,
      charged: 0,
      granted: 100_000,
    });
  });

  it('every run-start error of spec 7, with its exact body, on both endpoints', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t);
    const both = async (key: string | undefined, body?: unknown, ids = { workflowId, agentId: t.agentId }) => [
      await api(stack.baseUrl, 'POST', `/workflows/${ids.workflowId}/runs`, { key, body }),
      await api(stack.baseUrl, 'POST', `/agents/${ids.agentId}/runs`, { key, body }),
    ];
    const expectBoth = async (
      answers: Promise<Awaited<ReturnType<typeof api>>[]>,
      status: number,
      body: Record<string, unknown>,
    ) => {
      for (const answer of await answers) {
        expect(answer.status, JSON.stringify(answer.body)).toBe(status);
        expect(answer.body).toEqual(body);
      }
    };

    // 401
    await expectBoth(both(undefined), 401, { error: 'Unauthorized', reason: 'missing' });
    await expectBoth(both('wra_not-a-key'), 401, { error: 'Unauthorized', reason: 'malformed' });
    // 400: not JSON, or a field of the wrong type
    await expectBoth(both(t.key, '{"inputs":'), 400, { error: 'Invalid request body: not valid JSON' });
    for (const answer of await both(t.key, { mode: 'fast' })) {
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatch(/^Invalid request body: mode: /);
    }
    // 403
    const readOnly = await addKey(stack.deps, t.teamId, { scopes: ['runs:read'], rateLimitPerMinute: 100_000 });
    await expectBoth(both(readOnly.key), 403, { error: 'Scope not permitted for this key' });
    const other = await createWorkflow(stack, t, undefined, 'Other');
    const limited = await addKey(stack.deps, t.teamId, { workflowIds: [other], rateLimitPerMinute: 100_000 });
    // The agent's newest workflow is `other`; pin the agent to `workflowId` so both name it.
    await activateWorkflow(stack.deps, t.teamId, t.agentId, workflowId);
    await expectBoth(both(limited.key), 403, { error: 'Workflow not permitted for this key' });
    // 404
    const stranger = await team(100);
    const strangersWorkflow = await createWorkflow(stack, stranger);
    for (const id of [randomUUID(), 'not-a-uuid', strangersWorkflow]) {
      const answer = await startRunCall(stack.baseUrl, t.key, id);
      expect([answer.status, answer.body]).toEqual([404, { error: 'Workflow not found' }]);
    }
    for (const id of [randomUUID(), 'not-a-uuid', stranger.agentId]) {
      const answer = await runAgentCall(stack.baseUrl, t.key, id);
      expect([answer.status, answer.body]).toEqual([404, { error: 'Agent not found' }]);
    }
    const { agentId: emptyAgent } = await createAgent(stack.deps, {
      teamId: t.teamId,
      projectId: t.projectId,
      name: 'Empty',
    });
    const noWorkflow = await runAgentCall(stack.baseUrl, t.key, emptyAgent);
    expect([noWorkflow.status, noWorkflow.body]).toEqual([404, { error: 'No workflow found for this agent' }]);
    const { agentId: canvaslessAgent } = await createAgent(stack.deps, {
      teamId: t.teamId,
      projectId: t.projectId,
      name: 'Canvasless',
    });
    const canvasless = await createWorkflow(stack, { ...t, agentId: canvaslessAgent });
    await stack.deps.ddb.send(new DeleteCommand({ TableName: stack.deps.tableName, Key: canvasKey(canvasless) }));
    await expectBoth(both(t.key, undefined, { workflowId: canvasless, agentId: canvaslessAgent }), 404, {
      error: 'Canvas not found',
    });
    // 422
    await expectBoth(both(t.key, { inputs: { nope: 'x', topic: 'y', bad: 'z' } }), 422, {
      error: 'Unknown input key(s): nope, bad',
      validKeys: ['topic'],
    });
    await expectBoth(both(t.key, { callbackUrl: 'http://example.com/hook' }), 422, {
      error: 'callbackUrl must be a valid https:// URL',
    });
    await expectBoth(both(t.key, { callbackUrl: 'not a url' }), 422, {
      error: 'callbackUrl must be a valid https:// URL',
    });
    // 409 on both endpoints, naming the run in progress
    const started = await startRunCall(stack.baseUrl, t.key, workflowId);
    expect(started.status).toBe(200);
    await expectBoth(both(t.key), 409, {
      error: 'This workflow already has a run in progress',
      activeJobId: started.body.jobId,
    });
    // Nothing was held by any refusal: only the one run.
    expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ held: chainPrice, balance: 10_000 - chainPrice });
  });

  it('409 comes before 402: a busy workflow whose team could not pay again still names the run in progress', async () => {
    // Credits for one run of the chain, not two.
    const t = await team(chainPrice / 100 + 1);
    const workflowId = await createWorkflow(stack, t);
    const started = await startRunCall(stack.baseUrl, t.key, workflowId);
    expect(started.status).toBe(200);
    const busy = { error: 'This workflow already has a run in progress', activeJobId: started.body.jobId };
    for (const answer of [
      await startRunCall(stack.baseUrl, t.key, workflowId),
      await runAgentCall(stack.baseUrl, t.key, t.agentId),
    ]) {
      expect([answer.status, answer.body]).toEqual([409, busy]);
    }
    // Another workflow of the same team, not busy, is refused for the money.
    const other = await createWorkflow(stack, t, undefined, 'Other');
    const refused = await startRunCall(stack.baseUrl, t.key, other);
    expect([refused.status, refused.body]).toEqual([
      402,
      { error: 'Insufficient credits', required: chainPrice / 100, balance: expect.any(Number) },
    ]);
  });

  it('402 in the spec order: per-step limit, project hard cap, key monthly cap, balance, each with its numbers', async () => {
    const now = new Date();
    // Per-step limit (checked first: this team also lacks the credits).
    const t = await team(1);
    const workflowId = await createWorkflow(stack, t);
    await setPerStepLimit(stack.deps, t.teamId, 150);
    const perStep = {
      error: "LlmWorker step would be charged an estimated 2 credits, above the team's per-step limit of 1.5",
      nodeType: 'LlmWorker',
      estimatedCharge: 2,
      ceiling: 1.5,
      balance: 1,
    };
    for (const answer of [
      await startRunCall(stack.baseUrl, t.key, workflowId),
      await runAgentCall(stack.baseUrl, t.key, t.agentId),
    ]) {
      expect([answer.status, answer.body]).toEqual([402, perStep]);
    }
    await setPerStepLimit(stack.deps, t.teamId, null);
    const insufficient = { error: 'Insufficient credits', required: 2.03, balance: 1 };
    for (const answer of [
      await startRunCall(stack.baseUrl, t.key, workflowId),
      await runAgentCall(stack.baseUrl, t.key, t.agentId),
    ]) {
      expect([answer.status, answer.body]).toEqual([402, insufficient]);
    }

    // Project hard cap of 3 credits: the first run fits, the second would pass it.
    const capped = await team(100);
    const { projectId } = await createProject(stack.deps, {
      teamId: capped.teamId,
      name: 'Capped',
      hardCapHundredths: 300,
    });
    const { agentId } = await createAgent(stack.deps, { teamId: capped.teamId, projectId, name: 'In capped' });
    const first = await createWorkflow(stack, { ...capped, agentId }, undefined, 'First');
    const second = await createWorkflow(stack, { ...capped, agentId }, undefined, 'Second');
    expect((await startRunCall(stack.baseUrl, capped.key, first)).status).toBe(200);
    const hardCap = {
      error: 'Project hard cap exceeded',
      hardCap: 3,
      spent: 2.03,
      estimate: 2.03,
      balance: 100 - 2.03,
    };
    for (const answer of [
      await startRunCall(stack.baseUrl, capped.key, second),
      await runAgentCall(stack.baseUrl, capped.key, agentId), // its newest: `second`
    ]) {
      expect([answer.status, answer.body]).toEqual([402, hardCap]);
    }

    // Key monthly cap of 3 credits.
    const k = await team(100, { monthlyCapHundredths: 300 });
    const [a, b] = [await createWorkflow(stack, k, undefined, 'A'), await createWorkflow(stack, k, undefined, 'B')];
    expect((await startRunCall(stack.baseUrl, k.key, a)).status).toBe(200);
    const monthly = {
      error: 'Monthly credit cap reached',
      monthlyCreditCap: 3,
      spentThisMonth: 2.03,
      resets: capResetsText(nextSpendMonthStart(now)),
      balance: 100 - 2.03,
    };
    for (const answer of [
      await startRunCall(stack.baseUrl, k.key, b),
      await runAgentCall(stack.baseUrl, k.key, k.agentId), // its newest: `b`
    ]) {
      expect([answer.status, answer.body]).toEqual([402, monthly]);
    }
    // Another key of the same team is not capped.
    const uncapped = await addKey(stack.deps, k.teamId, { rateLimitPerMinute: 100_000 });
    expect((await startRunCall(stack.baseUrl, uncapped.key, b)).status).toBe(200);
  });

  it('503 with Retry-After when a capped key’s month cannot be read, and for the same failure with an uncapped key', async () => {
    const t = await team(100, { monthlyCapHundredths: 10_000 });
    const uncapped = await addKey(stack.deps, t.teamId, { rateLimitPerMinute: 100_000 });
    const workflowId = await createWorkflow(stack, t);
    // The admission read is the BatchGet that includes the key's month (KEYSPEND#…).
    const broken = faultyDeps(stack, {
      failDynamo: (command, input) => command.startsWith('BatchGet') && JSON.stringify(input).includes('KEYSPEND#'),
    });
    const brokenApi = await startSecondApi(broken);
    closers.push(() => brokenApi.close());
    const before = await ledgerOf(stack.deps, t.teamId);
    for (const path of [`/workflows/${workflowId}/runs`, `/agents/${t.agentId}/runs`]) {
      const refused = await api(brokenApi.baseUrl, 'POST', path, { key: t.key });
      expect(refused.status).toBe(503);
      expect(refused.body).toEqual({ error: 'Unable to verify monthly credit cap; try again shortly' });
      expect(refused.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      // Without a cap to verify, the same throttled read is the storage's 503 (functions/store/read.ts).
      const failed = await api(brokenApi.baseUrl, 'POST', path, { key: uncapped.key });
      expect(failed.status).toBe(503);
      expect(failed.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    }
    // Refused, never started unmetered: nothing held, no lock.
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual(before);
    expect(await lockOf(workflowId)).toBeUndefined();
    expect((await startRunCall(stack.baseUrl, t.key, workflowId)).status).toBe(200);
  });

  it('a start whose transaction meets a conflicting one is retried: 200, not 500', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t);
    // DynamoDB cancels a transaction that meets another one writing the same item (the team item
    // is written by every start and every charge of the team): TransactionConflict, once.
    let conflicts = 1;
    const conflicting = faultyDeps(stack, {
      failDynamo: (command, input) =>
        command.startsWith('TransactWrite') && JSON.stringify(input).includes('WFLOCK#') && conflicts-- > 0,
      error: transactionConflict,
    });
    const conflictingApi = await startSecondApi(conflicting);
    closers.push(() => conflictingApi.close());
    const started = await startRunCall(conflictingApi.baseUrl, t.key, workflowId);
    expect([started.status, started.body.status]).toEqual([200, 'queued']);
    expect(conflicts).toBe(-1);
    expect((await lockOf(workflowId))?.jobId).toBe(started.body.jobId);
    expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ held: chainPrice, balance: 10_000 - chainPrice });
  });

  it('the agent endpoint runs the active workflow, else the newest; workflowId names it', async () => {
    const t = await team(100);
    const { agentId } = await createAgent(stack.deps, { teamId: t.teamId, projectId: t.projectId, name: 'Agent' });
    const older = await createWorkflow(stack, { ...t, agentId }, undefined, 'Older');
    const newer = await createWorkflow(stack, { ...t, agentId }, undefined, 'Newer');
    const byNewest = await runAgentCall(stack.baseUrl, t.key, agentId);
    expect(byNewest.status).toBe(200);
    expect(byNewest.body.workflowId).toBe(newer);
    expect((await lockOf(newer))?.jobId).toBe(byNewest.body.jobId);

    await activateWorkflow(stack.deps, t.teamId, agentId, older);
    const byActive = await runAgentCall(stack.baseUrl, t.key, agentId);
    expect(byActive.status).toBe(200);
    expect(byActive.body.workflowId).toBe(older);
    expect((await lockOf(older))?.jobId).toBe(byActive.body.jobId);
    const again = await runAgentCall(stack.baseUrl, t.key, agentId);
    expect(again.body).toEqual({
      error: 'This workflow already has a run in progress',
      activeJobId: byActive.body.jobId,
    });
  });

  it('Idempotency-Key: the same key and body answer the first 200 and start one run; another body is 422', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t);
    const body = { inputs: { topic: 'badgers' } };
    const headers = { 'idempotency-key': `order-${randomUUID()}` };
    const first = await startRunCall(stack.baseUrl, t.key, workflowId, body, headers);
    expect(first.status).toBe(200);
    const retries = [
      await startRunCall(stack.baseUrl, t.key, workflowId, body, headers),
      ...(await Promise.all(
        Array.from({ length: 4 }, () => startRunCall(stack.baseUrl, t.key, workflowId, body, headers)),
      )),
    ];
    for (const retry of retries) expect([retry.status, retry.body]).toEqual([200, first.body]);
    expect((await lockOf(workflowId))?.jobId).toBe(first.body.jobId);
    expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ held: chainPrice, balance: 10_000 - chainPrice });

    const reused = await startRunCall(stack.baseUrl, t.key, workflowId, { inputs: { topic: 'otters' } }, headers);
    expect([reused.status, reused.body]).toEqual([422, { error: 'Idempotency-Key reused with a different request' }]);
    // Without the key, the same body is a new request: the workflow is busy with the first run.
    const fresh = await startRunCall(stack.baseUrl, t.key, workflowId, body);
    expect(fresh.body).toEqual({ error: 'This workflow already has a run in progress', activeJobId: first.body.jobId });
  });

  it('five concurrent first requests with one Idempotency-Key start one run and all answer it', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t);
    const headers = { 'idempotency-key': randomUUID() };
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => startRunCall(stack.baseUrl, t.key, workflowId, undefined, headers)),
    );
    const jobId = (await lockOf(workflowId))?.jobId;
    for (const answer of answers) {
      expect([answer.status, answer.body]).toEqual([
        200,
        { jobId, workflowId, status: 'queued', estimatedCredits: 2.03, stepsCount: 4 },
      ]);
    }
    expect((await ledgerOf(stack.deps, t.teamId)).held).toBe(chainPrice);
  });

  it('GET /runs/{jobId}: queued, claimed, processing with progress; another team’s run reads as missing', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t);
    const started = await startRunCall(stack.baseUrl, t.key, workflowId, { inputs: { topic: 'badgers' } });
    const jobId = started.body.jobId as string;

    const queued = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(queued.body).toEqual(runBody(jobId, 'queued', 0, chainSteps, ['queued', 'queued', 'queued', 'queued']));
    // A worker took the first step and none has finished: `claimed`.
    const claim = await claimStep(stack.deps, await runItemOf(jobId), 'topic');
    expect(claim.claimed).toBe(true);
    const claimed = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(claimed.body).toMatchObject({ status: 'claimed', progress: 0 });
    expect(claimed.body.steps).toEqual(stepStatuses(chainSteps, ['processing', 'queued', 'queued', 'queued']));

    // A second run: its first step done by the real handler: `processing`, 25 %.
    const w2 = await createWorkflow(stack, t);
    const run2 = (await startRunCall(stack.baseUrl, t.key, w2)).body.jobId as string;
    expect(
      await deliver(stepHandler(stack.deps), [stepRecord({ jobId: run2, workflowId: w2, nodeId: 'topic' })]),
    ).toEqual([]);
    const processing = await getRunCall(stack.baseUrl, t.key, run2);
    expect(processing.body).toEqual(
      runBody(run2, 'processing', 25, chainSteps, ['completed', 'queued', 'queued', 'queued']),
    );

    const stranger = await team(100);
    for (const id of [jobId, randomUUID(), 'not-a-uuid']) {
      const missing = await getRunCall(stack.baseUrl, stranger.key, id);
      expect([missing.status, missing.body]).toEqual([404, { error: 'Run not found' }]);
    }
    const noScope = await addKey(stack.deps, t.teamId, { scopes: ['runs:create'], rateLimitPerMinute: 100_000 });
    const refused = await getRunCall(stack.baseUrl, noScope.key, jobId);
    expect([refused.status, refused.body]).toEqual([403, { error: 'Scope not permitted for this key' }]);
  });

  it('cancel: a queued run is cancelled (hold released, lock freed); again is 409; another team’s is 404', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t);
    const jobId = (await startRunCall(stack.baseUrl, t.key, workflowId)).body.jobId as string;
    expect((await ledgerOf(stack.deps, t.teamId)).held).toBe(chainPrice);

    const stranger = await team(100);
    const foreign = await cancelRunCall(stack.baseUrl, stranger.key, jobId);
    expect([foreign.status, foreign.body]).toEqual([404, { error: 'Run not found' }]);
    const unknown = await cancelRunCall(stack.baseUrl, t.key, randomUUID());
    expect([unknown.status, unknown.body]).toEqual([404, { error: 'Run not found' }]);

    const cancelled = await cancelRunCall(stack.baseUrl, t.key, jobId);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual(
      runBody(jobId, 'cancelled', 0, chainSteps, ['skipped', 'skipped', 'skipped', 'skipped']),
    );
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({ balance: 10_000, held: 0, charged: 0, granted: 10_000 });
    expect(await lockOf(workflowId)).toBeUndefined();
    const again = await cancelRunCall(stack.baseUrl, t.key, jobId);
    expect([again.status, again.body]).toEqual([409, { error: 'Run already ended' }]);
    expect((await getRunCall(stack.baseUrl, t.key, jobId)).body.status).toBe('cancelled');
    // Its late step message finds the run ended and charges nothing.
    expect(await deliver(stepHandler(stack.deps), [stepRecord({ jobId, workflowId, nodeId: 'topic' })])).toEqual([]);
    expect((await ledgerOf(stack.deps, t.teamId)).charged).toBe(0);
    const next = await startRunCall(stack.baseUrl, t.key, workflowId);
    expect(next.status).toBe(200);
  });

  it('cancel: a run under way is stopped; the finished step stays charged, in-flight steps read unknown and hold the lock', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t);
    const jobId = (await startRunCall(stack.baseUrl, t.key, workflowId)).body.jobId as string;
    expect(await deliver(stepHandler(stack.deps), [stepRecord({ jobId, workflowId, nodeId: 'topic' })])).toEqual([]);
    expect((await claimStep(stack.deps, await runItemOf(jobId), 'prompt')).claimed).toBe(true);
    const stopped = await cancelRunCall(stack.baseUrl, t.key, jobId);
    expect(stopped.body).toEqual(
      runBody(jobId, 'stopped', 25, chainSteps, ['completed', 'unknown', 'skipped', 'skipped']),
    );
    // A claimed step is in flight: the run keeps its whole hold and its workflow's lock until it settles.
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({
      balance: 10_000 - chainPrice,
      held: chainPrice,
      charged: 0,
      granted: 10_000,
    });
    expect(await lockOf(workflowId)).toMatchObject({ jobId });
    // Its worker died: once the lease ran out, its message's redelivery settles the run.
    const later = { ...stack.deps, now: () => new Date(Date.now() + (stepLeaseSeconds + 1) * 1000) };
    const redelivered = stepRecord({ jobId, workflowId, nodeId: 'prompt' }, 2);
    expect(await deliver(stepHandler(later), [redelivered])).toEqual([]);
    expect(await ledgerOf(stack.deps, t.teamId)).toEqual({ balance: 9_999, held: 0, charged: 1, granted: 10_000 });
    expect(await lockOf(workflowId)).toBeUndefined();
  });

  it('cancel: a stopped run answers with its finished files signed, and queues run.stopped for its callbackUrl', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t, [
      { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
      { key: 'image', type: 'ImageGen', inputs: ['prompt'] },
      { key: 'llm', type: 'LlmWorker', inputs: ['prompt'] },
    ]);
    const started = await startRunCall(stack.baseUrl, t.key, workflowId, { callbackUrl: 'https://example.com/hook' });
    const jobId = started.body.jobId as string;
    // The real node executors (the sandbox provider draws the image), the llm step left queued.
    for (const nodeId of ['prompt', 'image']) {
      expect(await deliver(realStepHandler(stack.deps), [stepRecord({ jobId, workflowId, nodeId })])).toEqual([]);
    }
    const stopped = await cancelRunCall(stack.baseUrl, t.key, jobId);
    expect(stopped.body).toMatchObject({ status: 'stopped' });
    const image = (stopped.body.output as { node_id: string; result: unknown }[]).find((o) => o.node_id === 'image');
    expect(JSON.stringify(image?.result)).toMatch(/"url":"http/);
    const webhooks = (await queueContents(stack.resources, 'Webhooks'))
      .map((m) => JSON.parse(m.body) as { jobId: string; event: string })
      .filter((m) => m.jobId === jobId);
    expect(webhooks).toEqual([{ jobId, event: 'run.stopped' }]);
  });
});

describe('with workers polling the steps queue', () => {
  beforeAll(() => {
    const poller: QueuePoller = startStepWorkers(stack);
    closers.push(() => poller.stop());
  });

  it('across 20 workflows with credits for exactly 10 runs: 10 accepted, 10 × 402, the ledger balances', {
    timeout: 180_000,
  }, async () => {
    const t = await team((10 * pairPrice) / 100);
    const workflowIds = await Promise.all(
      Array.from({ length: 20 }, (_, i) => createWorkflow(stack, t, pairSteps, `W${i}`)),
    );
    let lowest = Number.POSITIVE_INFINITY;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        lowest = Math.min(lowest, (await getTeam(stack.deps, t.teamId))?.balance as number);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const answers = await Promise.all(workflowIds.map((id) => startRunCall(stack.baseUrl, t.key, id)));
    const accepted = answers.filter((a) => a.status === 200);
    expect(accepted).toHaveLength(10);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.map((a) => a.status)).toEqual(Array(10).fill(402));
    for (const answer of refused)
      expect(answer.body).toEqual({ error: 'Insufficient credits', required: 0.02, balance: expect.any(Number) });

    const jobIds = accepted.map((a) => a.body.jobId as string);
    for (const jobId of jobIds) expect((await waitForEnd(stack.baseUrl, t.key, jobId)).body.status).toBe('completed');
    sampling = false;
    await sampler;
    expect(lowest).toBeGreaterThanOrEqual(0);
    let completedPrices = 0;
    for (const jobId of jobIds) {
      const { run, steps, charges } = await runParts(stack.deps, jobId);
      expect([...steps.values()].map((s) => s.status)).toEqual(['completed', 'completed']);
      completedPrices += [...steps.values()].reduce((sum, s) => sum + (s.chargeHundredths as number), 0);
      expect(sumCharges(charges)).toBe(pairPrice);
      expect(run).toMatchObject({ heldHundredths: 0, chargedHundredths: pairPrice, stepsCompleted: 2 });
    }
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toEqual({ balance: 0, held: 0, charged: completedPrices, granted: 10 * pairPrice });
    expect(completedPrices).toBe(10 * pairPrice);
  });

  it('GET /runs/{jobId} of a completed run: every field; a key whose monthly cap is spent still reads', async () => {
    const t = await team(100, { monthlyCapHundredths: chainPrice });
    const [w1, w2] = [await createWorkflow(stack, t), await createWorkflow(stack, t)];
    const jobId = (await startRunCall(stack.baseUrl, t.key, w1, { inputs: { topic: 'badgers' } })).body.jobId as string;
    await waitForEnd(stack.baseUrl, t.key, jobId);
    const overCap = await startRunCall(stack.baseUrl, t.key, w2);
    expect([overCap.status, overCap.body.error]).toEqual([402, 'Monthly credit cap reached']);

    const read = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(read.status).toBe(200);
    const { output, ...rest } = read.body as unknown as {
      output: { licence?: { models: { node_id: string }[] } }[];
    };
    expect(rest).toEqual({
      jobId,
      status: 'completed',
      progress: 100,
      steps: chainSteps.map((s) => ({ node_id: s.key, step_type: s.type, status: 'completed' })),
      links: runLinks(jobId),
      workflowVersion: 1,
    });
    expect(output).toHaveLength(1);
    expect(output[0]).toMatchObject({
      node_id: 'show',
      step_type: 'TextConsole',
      // The run input replaced the TextEntry's value, and each step got its predecessor's result.
      result: 'show(llm(prompt(badgers)))',
      ai_generated: true,
      // The instant executor reports no model: the step is stamped with the catalogue's default.
      generated_by: [{ node_id: 'llm', provider: 'bedrock', model: bedrockDefaultModels.text }],
    });
    expect(output[0]?.licence?.models.map((m) => m.node_id)).toEqual(['llm']);
    expect(await ledgerOf(stack.deps, t.teamId)).toMatchObject({ held: 0, charged: chainPrice });
  });

  it('the sweep: a run whose root messages were lost stays queued until the dispatcher re-sends them', async () => {
    const t = await team(100);
    const workflowId = await createWorkflow(stack, t);
    const lostSends: string[] = [];
    const lossy = faultyDeps(stack, {
      failSqs: (command) => command === 'SendMessageBatchCommand' && lostSends.push(command) > 0,
    });
    const lossyApi: LocalApi = await startSecondApi(lossy);
    closers.push(() => lossyApi.close());
    const started = await startRunCall(lossyApi.baseUrl, t.key, workflowId);
    expect(started.status).toBe(200);
    const jobId = started.body.jobId as string;
    // The root steps' one send was refused, and the workers have nothing left to take: the run stays queued.
    expect(lostSends).toEqual(['SendMessageBatchCommand']);
    await stepsQueueDrained();
    const stuck = await getRunCall(stack.baseUrl, t.key, jobId);
    expect(stuck.body).toMatchObject({ status: 'queued', progress: 0 });
    expect((await runParts(stack.deps, jobId)).steps.size).toBe(0);

    // One tick before two minutes re-sends nothing of it; three minutes later it does.
    expect((await dispatcherHandler(stack.deps)()).resent).not.toContain(jobId);
    const later = { ...stack.deps, now: () => new Date(Date.now() + 3 * 60_000) };
    expect((await dispatcherHandler(later)()).resent).toContain(jobId);
    const done = await waitForEnd(stack.baseUrl, t.key, jobId);
    expect(done.body).toMatchObject({ status: 'completed', progress: 100 });
    const ledger = await ledgerOf(stack.deps, t.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: chainPrice });
    // Once a step finished the run leaves the sweep's index: a later tick re-sends nothing.
    expect((await dispatcherHandler(later)()).resent).not.toContain(jobId);
  });
});
