/**
 * Bulk cancel through the real path: run starts and deferrals over HTTP on the local API,
 * POST /runs/cancel and GET /bulk-actions/{id} over HTTP, and the real step executor's handler
 * delivering the steps queue's messages by hand (steps and bulk pages alike), so each page's
 * delivery, its redelivery and a crash in it are the test's to play. The team ledger is read from
 * the table.
 */
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import type { BulkCancelMessage } from '../functions/app/bulk-cancel.ts';
import { bulkCancelPageSize } from '../functions/domain/bulk-cancel.ts';
import { readBulkAction } from '../functions/store/bulk-actions.ts';
import { itemVersion } from '../functions/store/items/item.ts';
import { runKey, runListIndex } from '../functions/store/keys.ts';
import { readRunItem } from '../functions/store/run/index.ts';
import { createClient } from '../packages/client/src/index.ts';
import { RunStatus } from '../platform/run-statuses.ts';
import { expectValidResponse } from './support/openapi-validator.ts';
import {
  api,
  deliver,
  doc,
  expectBalanced,
  faultyDeps,
  ledgerOf,
  pairSteps,
  type StepHandler,
  stepHandler,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

const fast = { rateLimitPerMinute: 100_000 };
const newTeam = (credits = 10_000) => seedTeam(stack.deps, { credits, key: fast });

/** A call checked against the OpenAPI document. */
const checked = async (method: string, path: string, key: string, body?: unknown) => {
  const answer = await api(stack.baseUrl, method, path, { key, ...(body !== undefined && { body }) });
  expectValidResponse(doc, { method, path: path.split('?')[0] as string, status: answer.status, body: answer.body });
  return answer;
};

const startRun = async (team: SeededTeam, workflowId: string, body: Record<string, unknown>) => {
  const started = await checked('POST', `/workflows/${workflowId}/runs`, team.key, body);
  expect([200, 202], JSON.stringify(started.body)).toContain(started.status);
  return started.body as { jobId?: string; deferredJobId?: string; status?: string };
};

const bulkCancel = async (team: SeededTeam, body: unknown) => {
  const answer = await checked('POST', '/runs/cancel', team.key, body);
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  return answer.body.bulkActionId as string;
};

const bulkAction = async (team: SeededTeam, id: string) => {
  const answer = await checked('GET', `/bulk-actions/${id}`, team.key);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as { status: string; matched: number; cancelled: number; skipped: number; failed: number };
};

/**
 * Plays the event source mapping: every message on the steps queue is delivered once to `handler`
 * (a step's or a bulk page's), until the queue stays empty. Returns the bulk pages delivered.
 */
const drain = async (handler: StepHandler = stepHandler(stack.deps)) => {
  let pages = 0;
  for (let round = 0; round < 1000; round++) {
    const messages = await takeStepMessages(stack.deps);
    if (messages.length === 0) return pages;
    for (const message of messages) {
      if ((message as unknown as { kind?: string }).kind === 'bulkCancel') pages += 1;
      expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    }
  }
  throw new Error('the steps queue never emptied');
};

/** The one bulk page among messages taken off the queue (a cancel may also have promoted a run). */
const bulkPage = (messages: unknown[]) => {
  const pages = messages.filter((m) => (m as { kind?: string }).kind === 'bulkCancel');
  expect(pages).toHaveLength(1);
  return pages[0] as BulkCancelMessage;
};

describe('POST /runs/cancel', () => {
  it('cancels 500 tagged runs (queued, waiting, processing and deferred), releases every hold, leaves the rest', async () => {
    const team = await newTeam();
    const workflows = await Promise.all(Array.from({ length: 20 }, () => createWorkflow(stack, team, pairSteps)));
    const tagged = { tags: ['sweep'] };
    // Each workflow: one run in progress, 14 waiting behind it (listed and found as `queued`).
    const active: string[] = [];
    const waiting: string[] = [];
    for (const workflowId of workflows) {
      active.push((await startRun(team, workflowId, tagged)).jobId as string);
      for (let i = 0; i < 14; i++) {
        const run = await startRun(team, workflowId, { ...tagged, onConflict: 'queue' });
        waiting.push(run.jobId as string);
      }
    }
    // 200 deferred runs waiting for a price multiplier that never comes.
    const deferred: string[] = [];
    for (let i = 0; i < 200; i++) {
      const workflowId = workflows[i % workflows.length] as string;
      deferred.push((await startRun(team, workflowId, { ...tagged, defer: true })).deferredJobId as string);
    }
    // Not tagged: a run in progress and a deferred run of a workflow of their own, which stay.
    const other = await createWorkflow(stack, team, pairSteps);
    const untouched = (await startRun(team, other, { tags: ['keep'] })).jobId as string;
    const untouchedDeferred = (await startRun(team, other, { defer: true })).deferredJobId as string;

    // Half the runs in progress complete their first step (charged): `processing`.
    const roots = await takeStepMessages(stack.deps);
    const processing = active.slice(0, 10);
    const handler = stepHandler(stack.deps);
    for (const message of roots.filter((m) => processing.includes(m.jobId))) {
      expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    }
    // The other runs' first steps and these runs' next steps are held back: delivered after the
    // cancel, they must start and charge nothing.
    const heldBack = [...roots, ...(await takeStepMessages(stack.deps))].filter(
      (m) => !processing.includes(m.jobId) || m.nodeId === 'out',
    );
    expect(heldBack).toHaveLength(21);
    for (const jobId of processing) expect((await readRunItem(stack.deps, jobId))?.status).toBe(RunStatus.processing);
    // What the runs in progress were charged for their completed steps: kept by their end, no more.
    const chargedBefore = new Map<string, number>();
    for (const jobId of processing) {
      chargedBefore.set(jobId, (await readRunItem(stack.deps, jobId))?.chargedHundredths ?? -1);
    }

    const id = await bulkCancel(team, { filter: { tag: 'sweep' } });
    expect((await bulkAction(team, id)).status).toBe('running');
    const pages = await drain(handler);
    for (const message of heldBack.filter((m) => m.jobId !== untouched)) {
      expect(await deliver(handler, [stepRecord(message)])).toEqual([]);
    }
    // 200 deferred runs, 300 runs: at least two pages of each at 100 entries a page.
    expect(pages).toBeGreaterThanOrEqual(5);

    expect(await bulkAction(team, id)).toMatchObject({
      status: 'done',
      matched: 500,
      cancelled: 500,
      skipped: 0,
      failed: 0,
    });
    for (const jobId of [...active, ...waiting]) {
      const run = await readRunItem(stack.deps, jobId);
      const ended = processing.includes(jobId) ? RunStatus.stopped : RunStatus.cancelled;
      expect(run?.status, jobId).toBe(ended);
      expect(run?.heldHundredths, jobId).toBe(0);
      expect(run?.finalizedAt, jobId).toBeDefined();
    }
    for (const deferredJobId of deferred) {
      const answer = await checked('GET', `/deferred-runs/${deferredJobId}`, team.key);
      expect(answer.body.status).toBe('cancelled');
    }
    expect((await readRunItem(stack.deps, untouched))?.status).toBe(RunStatus.queued);
    expect((await checked('GET', `/deferred-runs/${untouchedDeferred}`, team.key)).body.status).toBe('waiting');

    // The ledger: only the untouched run holds; the stopped runs were charged their completed steps, no more.
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    const kept = await readRunItem(stack.deps, untouched);
    expect(ledger.held).toBe(kept?.heldHundredths);
    let charged = 0;
    for (const [jobId, before] of chargedBefore) {
      const run = await readRunItem(stack.deps, jobId);
      expect(run?.chargedHundredths).toBe(before);
      expect(run?.finalChargedHundredths).toBe(before);
      charged += before;
    }
    expect(ledger.charged).toBe(charged);
  }, 600_000);

  it('counts each run once when a page comes twice, and resumes a page that crashed mid-way', async () => {
    const team = await newTeam();
    const workflows = await Promise.all(Array.from({ length: 6 }, () => createWorkflow(stack, team, pairSteps)));
    const jobIds: string[] = [];
    for (const workflowId of workflows) {
      jobIds.push((await startRun(team, workflowId, {})).jobId as string);
      for (let i = 0; i < 3; i++)
        jobIds.push((await startRun(team, workflowId, { onConflict: 'queue' })).jobId as string);
    }
    await takeStepMessages(stack.deps);
    const [ended] = jobIds;
    expect((await checked('POST', `/runs/${ended}/cancel`, team.key)).status).toBe(200);
    const id = await bulkCancel(team, { jobIds: [...jobIds, '00000000-0000-4000-8000-000000000000'] });
    const page = bulkPage(await takeStepMessages(stack.deps));
    expect(page).toMatchObject({ kind: 'bulkCancel', bulkActionId: id, page: 0, phase: 'ids' });

    // The first delivery crashes after a few runs are settled: the rest cancelled, or not yet, unsettled.
    let settles = 0;
    const crashing = faultyDeps(stack, {
      failDynamo: (command, input) =>
        command === 'UpdateItemCommand' && JSON.stringify(input).includes('":pending"') && ++settles > 3,
    });
    expect(await deliver(stepHandler(crashing), [stepRecord(page as never)])).toHaveLength(1);
    const halfway = await bulkAction(team, id);
    expect(halfway.status).toBe('running');
    expect(halfway.matched).toBe(0);

    // Redelivered after the queue's visibility timeout (the clock moved on: the crashed delivery's
    // leases ran out), twice at once: the two race for each run; one that meets the other's live
    // lease fails, to come again. Then once more, later still; then a stale duplicate.
    const later = (minutes: number) => ({ ...stack.deps, now: () => new Date(Date.now() + minutes * 60_000) });
    await Promise.all([
      deliver(stepHandler(later(10)), [stepRecord(page as never, 2)]),
      deliver(stepHandler(later(10)), [stepRecord(page as never, 3)]),
    ]);
    const handler = stepHandler(later(20));
    expect(await deliver(handler, [stepRecord(page as never, 4)])).toEqual([]);
    expect(await deliver(handler, [stepRecord(page as never, 1)])).toEqual([]);
    await drain(handler);
    expect(await bulkAction(team, id)).toMatchObject({
      status: 'done',
      matched: 25,
      cancelled: 23,
      skipped: 2,
      failed: 0,
    });
    for (const jobId of jobIds) expect((await readRunItem(stack.deps, jobId))?.status).toBe(RunStatus.cancelled);
    const ledger = await ledgerOf(stack.deps, team.teamId);
    expectBalanced(ledger);
    expect(ledger.held).toBe(0);
  }, 300_000);

  it('sends the next page again when a redelivered page finds its move made but the message lost', async () => {
    const team = await newTeam();
    const workflows = await Promise.all(Array.from({ length: 3 }, () => createWorkflow(stack, team, pairSteps)));
    for (const workflowId of workflows) {
      await startRun(team, workflowId, { tags: ['lost'] });
      for (let i = 0; i < 2; i++) await startRun(team, workflowId, { tags: ['lost'], onConflict: 'queue' });
    }
    await takeStepMessages(stack.deps);
    const id = await bulkCancel(team, { filter: { tag: 'lost', status: ['queued'] } });
    const first = bulkPage(await takeStepMessages(stack.deps));
    // The deferred runs' page moves the action on, then its next message is lost (the send fails).
    const losing = faultyDeps(stack, { failSqs: (command) => command === 'SendMessageCommand' });
    expect(await deliver(stepHandler(losing), [stepRecord(first as never)])).toHaveLength(1);
    expect((await readBulkAction(stack.deps, id))?.page).toBe(1);
    expect(await takeStepMessages(stack.deps)).toEqual([]);
    // A first delivery of a page left behind does nothing; its redelivery sends the next page.
    expect(await deliver(stepHandler(stack.deps), [stepRecord(first as never, 1)])).toEqual([]);
    expect(await takeStepMessages(stack.deps)).toEqual([]);
    expect(await deliver(stepHandler(stack.deps), [stepRecord(first as never, 2)])).toEqual([]);
    await drain();
    expect(await bulkAction(team, id)).toMatchObject({ status: 'done', matched: 9, cancelled: 9 });
  }, 300_000);

  it('the typed client cancels by filter and its waiter polls until done; another team reads the action as missing', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const jobId = (await startRun(team, workflowId, { tags: ['client'] })).jobId as string;
    await takeStepMessages(stack.deps); // its first step never runs: it stays queued
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
    const { bulkActionId } = await client.cancelRuns({ filter: { workflowId, tag: 'client' } });
    const seen: string[] = [];
    const waiting = client.waitForBulkAction(bulkActionId, {
      intervalMs: 50,
      onProgress: (action) => {
        seen.push(action.status);
      },
    });
    await drain();
    const done = await waiting;
    expect(done).toMatchObject({ bulkActionId, status: 'done', matched: 1, cancelled: 1, skipped: 0, failed: 0 });
    expect(seen.at(-1)).toBe('done');
    expect((await readRunItem(stack.deps, jobId))?.status).toBe(RunStatus.cancelled);
    const other = await newTeam();
    const missing = await checked('GET', `/bulk-actions/${bulkActionId}`, other.key);
    expect([missing.status, missing.body]).toEqual([404, { error: 'Bulk action not found' }]);
    // Neither or both of ids and filter, a filter without a field or with one it does not take: 400.
    for (const body of [{}, { jobIds: [jobId], filter: { tag: 'x' } }, { filter: {} }, { filter: { tags: 'x' } }]) {
      expect((await checked('POST', '/runs/cancel', team.key, body)).status, JSON.stringify(body)).toBe(400);
    }
  }, 120_000);

  it('pages a filter matching 10,000 runs (seeded directly): every one cancelled, each counted once', async () => {
    const team = await newTeam();
    const workflowId = await createWorkflow(stack, team, pairSteps);
    const total = 10_000;
    const completed = 100;
    const base = Date.parse('2026-12-01T00:00:00.000Z');
    // Seeded as a start leaves a free run (nothing held, no lock; 10,000 starts over HTTP would take
    // minutes), all queued, and 100 completed ones the filter must pass over. The filter reads them a
    // page at a time; each queued run is cancelled by the ordinary cancel (the 500-run test above
    // cancels each kind of run, holds and locks included).
    const items = Array.from({ length: total + completed }, (_, i) => {
      const jobId = `${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`;
      const createdAt = new Date(base + i * 1000).toISOString();
      return {
        ...runKey(jobId),
        ...runListIndex(team.teamId, createdAt, jobId),
        v: itemVersion,
        jobId,
        teamId: team.teamId,
        keyId: team.keyId,
        workflowId,
        projectId: team.projectId,
        status: i % 101 === 1 ? RunStatus.completed : RunStatus.queued,
        mode: 'production',
        inputs: {},
        spendMonth: '2026-12',
        estimateHundredths: 0,
        heldHundredths: 0,
        chargedHundredths: 0,
        stepEstimates: {},
        stepsTotal: 2,
        stepsCompleted: 0,
        stepsSkipped: 0,
        createdAt,
      };
    });
    for (let i = 0; i < items.length; i += 25) {
      await stack.deps.ddb.send(
        new BatchWriteCommand({
          RequestItems: { [stack.deps.tableName]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) },
        }),
      );
    }
    const id = await bulkCancel(team, { filter: { workflowId, status: ['queued'] } });
    const pages = await drain();
    expect(pages).toBeGreaterThanOrEqual(total / bulkCancelPageSize);
    expect(await bulkAction(team, id)).toMatchObject({
      status: 'done',
      matched: total,
      cancelled: total,
      skipped: 0,
      failed: 0,
    });
    const [first, second] = await Promise.all(
      ['00000000', '00000001'].map((n) => readRunItem(stack.deps, `${n}-0000-4000-8000-000000000000`)),
    );
    expect([first?.status, second?.status]).toEqual([RunStatus.cancelled, RunStatus.completed]);
  }, 600_000);
});
