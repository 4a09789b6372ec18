/**
 * POST /runs/{jobId}/resume through the real path: the route over the local API,
 * the real step-executor handler fed the messages the service queued (drainSteps), the sandbox
 * provider's real executors, with one node made to fail at the edge (StepFailedError, as a refused
 * provider call ends a step).
 */
import './support/test-providers.ts';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { sweepQueuedRuns } from '../functions/app/sweep-queued-runs.ts';
import type { Deps } from '../functions/deps.ts';
import { StepFailedError } from '../functions/nodes/executors/types.ts';
import { setPerStepLimit } from '../functions/store/tenancy.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import {
  api,
  doc,
  drainSteps,
  expectBalanced,
  getRunCall,
  ledgerOf,
  runParts,
  stepHandler,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

/** Five steps in a chain; the third fails on its first execution. 1 + 200 + 1 + 1 + 1 hundredths. */
const chain = [
  { key: 'topic', type: 'TextEntry', config: { text: 'otters', apiInputKey: 'topic' } },
  { key: 'llm', type: 'LlmWorker', inputs: ['topic'] },
  { key: 'third', type: 'PromptBuilder', config: { template: 'About {{0}}', apiInputKey: 'third' }, inputs: ['llm'] },
  { key: 'fourth', type: 'PromptBuilder', config: { template: '{{0}}!' }, inputs: ['third'] },
  { key: 'show', type: 'TextConsole', inputs: ['fourth'] },
];
const chainPrices = { topic: 1, llm: 200, third: 1, fourth: 1, show: 1 };

/** The real step executor, whose node `failing` (while `fails.left` > 0) fails as a refused provider call does. */
const handlerFailing = (deps: Deps, failing: string, fails = { left: 1 }) =>
  stepHandler(deps, () => async (context) => {
    if (context.node.id === failing && fails.left > 0) {
      fails.left -= 1;
      throw new StepFailedError('the provider refused the request');
    }
    return deps.executors(context.node.type)(context);
  });

const resumeCall = (key: string, jobId: string, body?: unknown, headers?: Record<string, string>) =>
  api(stack.baseUrl, 'POST', `/runs/${jobId}/resume`, { key, body, headers });

/** A team, a workflow of `steps`, and a run of it that failed at `failing` (every message delivered). */
const failedRun = async (steps: unknown[] = chain, failing = 'third', credits = 100) => {
  const team = await seedUnthrottledTeam(stack.deps, credits);
  const workflowId = await createWorkflow(stack, team, steps);
  const started = await api(stack.baseUrl, 'POST', `/workflows/${workflowId}/runs`, { key: team.key, body: {} });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const jobId = started.body.jobId as string;
  await drainSteps(stack.deps, handlerFailing(stack.deps, failing));
  const original = await getRunCall(stack.baseUrl, team.key, jobId);
  expect(original.body.status).toBe('failed');
  return { team, workflowId, jobId, original };
};

const statusesOf = (body: Record<string, unknown>) =>
  Object.fromEntries((body.steps as { node_id: string; status: string }[]).map((s) => [s.node_id, s.status]));

describe('POST /runs/{jobId}/resume', () => {
  it('runs and charges only the failed step and what follows it; the completed steps keep their outputs', async () => {
    const { team, workflowId, jobId, original } = await failedRun();
    expect(statusesOf(original.body)).toEqual({
      topic: 'completed',
      llm: 'completed',
      third: 'failed',
      fourth: 'skipped',
      show: 'skipped',
    });
    const before = await runParts(stack.deps, jobId);
    // A per-step limit below the model step's 200: the resume does not run it, so it is not refused.
    await setPerStepLimit(stack.deps, team.teamId, 50);

    const resumed = await resumeCall(team.key, jobId);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const newJobId = resumed.body.jobId as string;
    expect(resumed.body).toEqual({
      jobId: newJobId,
      workflowId,
      status: 'queued',
      estimatedCredits: 0.03,
      stepsCount: 5,
      resumedFrom: jobId,
      carriedSteps: ['topic', 'llm'],
    });
    expect(newJobId).not.toBe(jobId);

    const delivered = await drainSteps(stack.deps, handlerFailing(stack.deps, 'none'));
    expect(delivered.filter((m) => m.jobId === newJobId).map((m) => m.nodeId)).toEqual(['third', 'fourth', 'show']);

    const { run, steps } = await runParts(stack.deps, newJobId);
    expect(run).toMatchObject({ status: 'completed', heldHundredths: 0, chargedHundredths: 3, resumedFrom: jobId });
    expect(Object.fromEntries([...steps].map(([node, s]) => [node, s.chargeHundredths]))).toEqual({
      topic: 0,
      llm: 0,
      third: 1,
      fourth: 1,
      show: 1,
    });
    // The carried steps are the original's, word for word: outputs, model, licence stamp, start.
    for (const node of ['topic', 'llm']) {
      const carried = steps.get(node);
      const from = before.steps.get(node);
      expect(carried).toMatchObject({ status: 'completed', carriedFrom: jobId });
      expect(carried).toMatchObject({ outputs: from?.outputs, model: from?.model, licence: from?.licence });
      expect(carried?.startedAt).toBe(from?.startedAt);
    }
    // What the model step produced is what the steps run again read.
    const llmOutput = Object.values(steps.get('llm')?.outputs as Record<string, string>)[0] as string;
    expect(JSON.stringify(steps.get('third')?.outputs)).toContain(llmOutput.slice(0, 20));

    // The ledger: the original charged 201 (topic, llm), the resume 3; nothing held.
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger).toMatchObject({ held: 0, charged: 201 + 3, balance: 10_000 - 204 });

    const read = await getRunCall(stack.baseUrl, team.key, newJobId);
    expectValidResponse(doc, { method: 'GET', path: `/runs/${newJobId}`, status: 200, body: read.body });
    expect(read.body.resumedFrom).toBe(jobId);
    expect(read.body.progress).toBe(100);
    expect(statusesOf(read.body)).toEqual(
      Object.fromEntries(Object.keys(chainPrices).map((node) => [node, 'completed'])),
    );
    // Lineage and licence: the output still comes from the carried model step.
    const [output] = read.body.output as { generated_by?: { node_id: string }[]; licence?: { models: unknown[] } }[];
    expect(output?.generated_by?.map((g) => g.node_id)).toEqual(['llm']);
    expect(output?.licence?.models).toHaveLength(1);

    // The run list marks it too; the original carries no mark.
    const listed = await api(stack.baseUrl, 'GET', '/runs', { key: team.key });
    expectValidResponse(doc, { method: 'GET', path: '/runs', status: 200, body: listed.body });
    const summaries = listed.body.runs as { jobId: string; resumedFrom?: string }[];
    expect(summaries.find((r) => r.jobId === newJobId)?.resumedFrom).toBe(jobId);
    expect(summaries.find((r) => r.jobId === jobId)).not.toHaveProperty('resumedFrom');

    // The original is unchanged.
    expect(await getRunCall(stack.baseUrl, team.key, jobId)).toMatchObject({ status: 200, body: original.body });
    expect((await runParts(stack.deps, jobId)).run).toEqual(before.run);
  });

  it('applies new inputs only to the steps that run', async () => {
    const { team, jobId } = await failedRun();
    const resumed = await resumeCall(team.key, jobId, { inputs: { topic: 'badgers', third: 'given' } });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const newJobId = resumed.body.jobId as string;
    await drainSteps(stack.deps, handlerFailing(stack.deps, 'none'));
    const { run, steps } = await runParts(stack.deps, newJobId);
    // `topic` was carried over: its value stays the original's; `third` runs and reads the one given.
    expect(run?.inputs).toEqual({ third: 'given' });
    expect(JSON.stringify(steps.get('topic')?.outputs)).toContain('otters');
    expect(run?.status).toBe('completed');
  });

  it('answers 409 for a run that is not failed or stopped, and 404 for another team', async () => {
    const { team, workflowId, jobId } = await failedRun();
    const resumed = await resumeCall(team.key, jobId);
    const newJobId = resumed.body.jobId as string;
    // Queued (its steps not delivered yet).
    const queued = await resumeCall(team.key, newJobId);
    expectValidResponse(doc, { method: 'POST', path: `/runs/${newJobId}/resume`, ...queued });
    expect([queued.status, queued.body]).toEqual([
      409,
      { error: 'Only a failed or stopped run can be resumed', status: 'queued' },
    ]);
    // The lock: one run in progress per workflow, even a resume of a failed one.
    const locked = await resumeCall(team.key, jobId);
    expect([locked.status, locked.body]).toEqual([
      409,
      { error: 'This workflow already has a run in progress', activeJobId: newJobId },
    ]);
    await drainSteps(stack.deps, handlerFailing(stack.deps, 'none'));
    const completed = await resumeCall(team.key, newJobId);
    expect([completed.status, completed.body.status]).toEqual([409, 'completed']);

    const other: SeededTeam = await seedUnthrottledTeam(stack.deps);
    const foreign = await resumeCall(other.key, jobId);
    expect([foreign.status, foreign.body]).toEqual([404, { error: 'Run not found' }]);
    const unknown = await resumeCall(team.key, '00000000-0000-4000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(workflowId).toBeTruthy();
  });

  it('refuses a resume whose steps to run pass the per-step limit (402), checking only those', async () => {
    // The model step fails: it runs again, so the limit applies to it.
    const { team, jobId } = await failedRun(chain, 'llm');
    await setPerStepLimit(stack.deps, team.teamId, 50);
    const refused = await resumeCall(team.key, jobId);
    expectValidResponse(doc, { method: 'POST', path: `/runs/${jobId}/resume`, ...refused });
    expect([refused.status, refused.body.nodeType]).toEqual([402, 'LlmWorker']);
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger.held).toBe(0);
  });

  it('answers the same Idempotency-Key and body with the first answer, and another body with 422', async () => {
    const { team, jobId } = await failedRun();
    const headers = { 'Idempotency-Key': `resume-${jobId}` };
    const first = await resumeCall(team.key, jobId, { inputs: { third: 'x' } }, headers);
    const again = await resumeCall(team.key, jobId, { inputs: { third: 'x' } }, headers);
    expect(first.status).toBe(200);
    expect(again).toMatchObject({ status: 200, body: first.body });
    const other = await resumeCall(team.key, jobId, { inputs: { third: 'y' } }, headers);
    expect(other.status).toBe(422);
    expect(other.body.error).toMatch(/Idempotency-Key/);
    // One run started: its three steps' messages, no more.
    const messages = (await takeStepMessages(stack.deps)).filter((m) => m.jobId !== jobId);
    expect(messages.map((m) => [m.jobId, m.nodeId])).toEqual([[first.body.jobId, 'third']]);
  });

  it('shares a carried-over file with the new run, which links it', async () => {
    const steps = [
      { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse' } },
      { key: 'image', type: 'ImageGen', inputs: ['prompt'] },
      { key: 'third', type: 'PromptBuilder', config: { template: '{{0}}' }, inputs: ['prompt'] },
      { key: 'show', type: 'TextConsole', inputs: ['third'] },
    ];
    const { team, jobId } = await failedRun(steps, 'third');
    const resumed = await resumeCall(team.key, jobId);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const newJobId = resumed.body.jobId as string;
    await drainSteps(stack.deps, handlerFailing(stack.deps, 'none'));
    const files = JSON.stringify((await runParts(stack.deps, newJobId)).steps.get('image')?.outputs).match(
      /"key":"([^"]+)"/,
    );
    const key = files?.[1] as string;
    // The original's object itself: a resume stores no byte again.
    expect(key.startsWith(`teams/${team.teamId}/runs/${jobId}/image/`)).toBe(true);
    await stack.deps.s3.send(new HeadObjectCommand({ Bucket: stack.deps.bucket, Key: key }));
    const read = await getRunCall(stack.baseUrl, team.key, newJobId);
    const image = (read.body.output as { node_id: string; result: unknown }[]).find((o) => o.node_id === 'image');
    expect(JSON.stringify(image?.result)).toContain('"availability":"ready"');
  });

  it('the sweep re-sends a queued resume its first steps to run, not its roots', async () => {
    const { team, jobId } = await failedRun();
    const resumed = await resumeCall(team.key, jobId);
    const newJobId = resumed.body.jobId as string;
    await takeStepMessages(stack.deps); // lost
    const later = new Date(Date.now() + 10 * 60_000);
    const report = await sweepQueuedRuns({ ...stack.deps, now: () => later });
    expect(report.resent).toContain(newJobId);
    const resent = (await takeStepMessages(stack.deps)).filter((m) => m.jobId === newJobId);
    expect(resent.map((m) => m.nodeId)).toEqual(['third']);
  });
});
