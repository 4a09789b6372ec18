/**
 * The item parsers of functions/store/items/ read what the store writes (each item built by the
 * function the store writes it with, or, for a step, with the attributes its updates set) and refuse
 * a malformed item with an error that names its key. Pure: no emulator.
 */
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { workflowLock } from '../functions/domain/workflow-lock.ts';
import { apiKeyIdItem, apiKeyItem } from '../functions/store/api-keys.ts';
import { deferredRunItem } from '../functions/store/deferred-runs.ts';
import { idempotencyPut } from '../functions/store/idempotency.ts';
import { ApiKeyIdItemSchema, ApiKeyItemSchema } from '../functions/store/items/api-keys.ts';
import { DeferredRunItemSchema } from '../functions/store/items/deferred-runs.ts';
import { DeliveryItemSchema } from '../functions/store/items/deliveries.ts';
import { IdempotencyItemSchema } from '../functions/store/items/idempotency.ts';
import { MalformedItemError, parseItem } from '../functions/store/items/item.ts';
import { RunCallbackSchema, RunItemSchema, StepItemSchema } from '../functions/store/items/runs.ts';
import { ServerSecretItemSchema } from '../functions/store/items/server-secrets.ts';
import { AgentItemSchema, IdEntrySchema, ProjectItemSchema, TeamItemSchema } from '../functions/store/items/tenancy.ts';
import { WorkflowLockItemSchema } from '../functions/store/items/workflow-locks.ts';
import { CanvasItemSchema, WorkflowItemSchema } from '../functions/store/items/workflows.ts';
import { stepKey, webhookDeliveryKey, workflowLockKey } from '../functions/store/keys.ts';
import { runItem } from '../functions/store/run/index.ts';
import { serverSecretItem } from '../functions/store/server-secrets.ts';
import { agentItem, projectItem, teamItem } from '../functions/store/tenancy.ts';
import { attemptAttributes, pendingDeliveryAttributes } from '../functions/store/webhook-deliveries.ts';
import { canvasItem, workflowSummaryItem } from '../functions/store/workflows.ts';

const at = '2026-03-04T05:06:07.000Z';
const ids = {
  team: 'a1b2c3d4-0000-4000-8000-000000000001',
  project: 'a1b2c3d4-0000-4000-8000-000000000002',
  agent: 'a1b2c3d4-0000-4000-8000-000000000003',
  workflow: 'a1b2c3d4-0000-4000-8000-000000000004',
  job: 'a1b2c3d4-0000-4000-8000-000000000005',
  key: 'a1b2c3d4-0000-4000-8000-000000000006',
  deferred: 'a1b2c3d4-0000-4000-8000-000000000007',
};
const canvas = {
  nodes: [{ id: 'a', type: 'TextEntry' as const, label: 'a', config: { text: 'hi' }, position: { x: 0, y: 0 } }],
  edges: [],
};

const workflow = {
  teamId: ids.team,
  agentId: ids.agent,
  projectId: ids.project,
  name: 'Chain',
  description: null,
  status: 'draft' as const,
  canvas,
  stepsCount: 1,
};
const summary = workflowSummaryItem(ids.workflow, workflow, at);
const storedCanvas = canvasItem(ids.workflow, workflow);

const run = runItem(
  {
    jobId: ids.job,
    teamId: ids.team,
    keyId: ids.key,
    workflow: {
      workflowId: ids.workflow,
      agentId: ids.agent,
      projectId: ids.project,
      version: 2,
      status: 'active',
      canvas,
    },
    mode: 'draft',
    inputs: { topic: 'badgers' },
    callbackUrl: 'https://example.com/hook',
    callbackSecret: 'shh',
    estimate: { steps: [{ nodeId: 'a', type: 'TextEntry', hundredths: 3 }], totalHundredths: 3, multiplier: 1 },
    month: '2026-03',
    monthlyCap: null,
    hardCap: null,
    idempotency: null,
    deferredJobId: null,
  },
  at,
);

/** A model step as its claim and its completion leave it (functions/store/run-steps.ts). */
const completedStep = {
  ...stepKey(ids.job, 'a'),
  nodeId: 'a',
  status: 'completed',
  attempts: 1,
  startedAt: at,
  endedAt: at,
  outputs: { text: 'hi' },
  model: { provider: 'sandbox', model: 'sandbox-text-1' },
  licence: {
    node_id: 'a',
    provider_key: 'sandbox',
    model: 'sandbox-text-1',
    licence: null,
    licence_url: null,
    commercial_use: null,
    terms_url: null,
    stamped_at: at,
  },
  chargeHundredths: 3,
};

/** A cheap step written once, when it finished; a skipped step records no charge but 0. */
const skippedStep = { ...stepKey(ids.job, 'b'), nodeId: 'b', status: 'skipped', endedAt: at, chargeHundredths: 0 };

const deferred = deferredRunItem(
  {
    deferredJobId: ids.deferred,
    key: { teamId: ids.team, keyId: ids.key },
    workflowId: ids.workflow,
    request: { mode: 'production', defer: true, maxMultiplier: 0.5, inputs: { topic: 'owls' } },
  },
  new Date(at),
);

const key = apiKeyItem(
  { teamId: ids.team, scopes: ['runs:read'], monthlyCapHundredths: 500 },
  { keyId: ids.key, secretHash: 'f'.repeat(64), hint: 'wra_…abcd', createdAt: at },
);

/** Who started the run (and the deferred run) and what: as each run item's parser reads them back. */
const startedBy = { teamId: ids.team, keyId: ids.key, workflowId: ids.workflow };

describe('each parser accepts the item the store writes', () => {
  it('the run item: counters a start does not write read 0, and no step counted', () => {
    expect(parseItem(RunItemSchema, run)).toEqual({
      jobId: ids.job,
      ...startedBy,
      projectId: ids.project,
      // The version its start ran: the latest, or the one it pinned.
      workflowVersion: 2,
      status: 'queued',
      mode: 'draft',
      inputs: { topic: 'badgers' },
      // No input file: the start writes none, and it reads as none.
      inputFiles: {},
      callbackUrl: 'https://example.com/hook',
      callbackSecret: 'shh',
      spendMonth: '2026-03',
      estimateHundredths: 3,
      heldHundredths: 3,
      chargedHundredths: 0,
      stepEstimates: { a: 3 },
      priceMultiplier: 1,
      stepsTotal: 1,
      stepsCompleted: 0,
      stepsSkipped: 0,
      doneSteps: new Set(),
      createdAt: at,
      sweepRefusals: 0,
    });
  });

  it("the run item as the webhook worker reads it: its callback, its secret, its start (the delivery's ttl)", () => {
    expect(parseItem(RunCallbackSchema, run)).toEqual({
      callbackUrl: 'https://example.com/hook',
      callbackSecret: 'shh',
      createdAt: at,
    });
    const { callbackUrl, callbackSecret, ...withoutCallback } = run;
    expect(parseItem(RunCallbackSchema, withoutCallback)).toEqual({ createdAt: at });
  });

  it('step items: a completed model step with its lineage, a skipped step', () => {
    expect(parseItem(StepItemSchema, completedStep)).toMatchObject({
      nodeId: 'a',
      status: 'completed',
      outputs: { text: 'hi' },
      model: { provider: 'sandbox', model: 'sandbox-text-1' },
      licence: { node_id: 'a', stamped_at: at },
      chargeHundredths: 3,
    });
    expect(parseItem(StepItemSchema, skippedStep)).toEqual({
      nodeId: 'b',
      status: 'skipped',
      chargeHundredths: 0,
      // A step event's body says when its step ended.
      endedAt: at,
    });
  });

  it("a refused write's old item, as attribute values, is read at its version (a 409's lock holder)", () => {
    const Refused = v.object({ jobId: v.object({ S: v.string() }) });
    expect(parseItem(Refused, { jobId: { S: 'j1' }, v: { N: '1' } })).toEqual({ jobId: { S: 'j1' } });
    expect(parseItem(Refused, { jobId: { S: 'j1' } })).toEqual({ jobId: { S: 'j1' } });
    expect(() => parseItem(Refused, { jobId: { S: 'j1' }, v: { N: '2' } })).toThrow(MalformedItemError);
  });

  it('the deferred run: not dispatched yet, its request as the caller sent it', () => {
    expect(parseItem(DeferredRunItemSchema, deferred)).toEqual({
      deferredJobId: ids.deferred,
      ...startedBy,
      status: 'waiting',
      maxMultiplier: 0.5,
      createdAt: at,
      expiresAt: '2026-03-05T05:06:07.000Z',
      dispatchedAt: null,
      jobId: null,
      request: { mode: 'production', defer: true, maxMultiplier: 0.5, inputs: { topic: 'owls' } },
      inputFiles: {},
      inputUploads: {},
    });
  });

  it('the API key: what was not set reads as none, never the secret or its hash', () => {
    const parsed = parseItem(ApiKeyItemSchema, key);
    expect(parsed).toEqual({
      keyId: ids.key,
      teamId: ids.team,
      scopes: ['runs:read'],
      workflowIds: [],
      monthlyCapHundredths: 500,
      expiresAt: null,
      revokedAt: null,
      rateLimitPerMinute: null,
      hint: 'wra_…abcd',
      createdAt: at,
    });
    expect(JSON.stringify(parsed)).not.toContain('f'.repeat(64));
  });

  it('the workflow summary and its canvas, the agent, the team, the lock, an idempotency record', () => {
    expect(parseItem(WorkflowItemSchema, summary)).toEqual({
      workflowId: ids.workflow,
      agentId: ids.agent,
      projectId: ids.project,
      name: 'Chain',
      description: null,
      status: 'draft',
      createdAt: at,
      updatedAt: at,
      version: 1,
    });
    expect(parseItem(CanvasItemSchema, storedCanvas)).toEqual({ teamId: ids.team, canvas, version: 1 });
    expect(
      parseItem(
        AgentItemSchema,
        agentItem({ teamId: ids.team, projectId: ids.project, agentId: ids.agent, name: 'A' }, at),
      ),
    ).toEqual({ projectId: ids.project, activeWorkflowId: undefined });
    expect(
      parseItem(
        TeamItemSchema,
        teamItem(ids.team, { name: 'T', creditsHundredths: 900, perStepLimitHundredths: null }, at),
      ),
    ).toEqual({ balance: 900, held: 0, charged: 0, granted: 900, perStepLimitHundredths: null, connections: {} });
    expect(
      parseItem(WorkflowLockItemSchema, { ...workflowLockKey(ids.workflow), ...workflowLock(ids.job, at) }),
    ).toEqual({ jobId: ids.job, waiting: 0, accepted: 0 });
    const remembered = idempotencyPut({ tableName: 'Data', now: () => new Date(at) }, ids.key, {
      keyHash: 'k',
      requestHash: 'r',
      response: { body: { jobId: ids.job } },
      expiresAt: 1_800_000_000,
    }).Put.Item;
    expect(parseItem(IdempotencyItemSchema, remembered)).toEqual({
      requestHash: 'r',
      response: { body: { jobId: ids.job } },
      ttl: 1_800_000_000,
    });
  });
});

describe('the items the other writers build parse with the one schema of their item (functions/store/items/)', () => {
  it('a project: nothing spent, its cap; found by id (GSI1) to its team', () => {
    const project = projectItem({ teamId: ids.team, projectId: ids.project, name: 'P', hardCapHundredths: 700 }, at);
    expect(parseItem(ProjectItemSchema, project)).toEqual({ hardCapHundredths: 700, spentHundredths: 0 });
    expect(parseItem(IdEntrySchema, project)).toEqual({ teamId: ids.team });
    const uncapped = projectItem({ teamId: ids.team, projectId: ids.project, name: 'P', hardCapHundredths: null }, at);
    expect(parseItem(ProjectItemSchema, uncapped)).toEqual({ hardCapHundredths: null, spentHundredths: 0 });
  });

  it("a key's id pointer, the service's signing keys", () => {
    expect(parseItem(ApiKeyIdItemSchema, apiKeyIdItem(ids.key, 'f'.repeat(64), ids.team))).toEqual({
      secretHash: 'f'.repeat(64),
    });
    const secret = Buffer.alloc(32, 7);
    for (const name of ['cursor', 'fileLink'] as const)
      expect(parseItem(ServerSecretItemSchema, serverSecretItem(name, secret))).toEqual({
        secret: secret.toString('base64'),
      });
  });

  it('a webhook delivery as its first attempt creates it, and as a redelivery with no item creates it', () => {
    const entry = {
      attempt: 1,
      at,
      host: 'example.com',
      error: 'timeout' as const,
      durationMs: 8000,
      nextAttemptAt: at,
    };
    const attempted = {
      ...webhookDeliveryKey(ids.job, 'run.completed'),
      ...attemptAttributes({ messageId: 'm1', entry, log: [], state: 'pending' }),
    };
    expect(parseItem(DeliveryItemSchema, attempted)).toEqual({
      state: 'pending',
      attempts: 1,
      lastMessageId: 'm1',
      nextAttemptAt: at,
      attemptLog: [entry],
    });
    const marked = { ...webhookDeliveryKey(ids.job, 'run.completed'), ...pendingDeliveryAttributes(at) };
    expect(parseItem(DeliveryItemSchema, marked)).toEqual({
      state: 'pending',
      attempts: 0,
      attemptLog: [],
      redeliveryRequestedAt: at,
    });
  });
});

describe('a malformed item is an error that names its key', () => {
  const refusal = (read: () => unknown) => {
    try {
      read();
    } catch (error) {
      return error;
    }
    throw new Error('the malformed item was accepted');
  };

  it.each([
    [
      'a run whose hold is not a number',
      RunItemSchema,
      { ...run, heldHundredths: '3' },
      `RUN#${ids.job}|RUN`,
      'heldHundredths',
    ],
    ['a run with an unknown status', RunItemSchema, { ...run, status: 'claimed' }, `RUN#${ids.job}|RUN`, 'status'],
    [
      'a step without its status',
      StepItemSchema,
      { ...skippedStep, status: undefined },
      `RUN#${ids.job}|STEP#b`,
      'status',
    ],
    [
      'a deferred run without its request',
      DeferredRunItemSchema,
      { ...deferred, request: undefined },
      `DEFERRED#${ids.deferred}|DEFERRED`,
      'request',
    ],
    [
      'a key with a scope the service does not have',
      ApiKeyItemSchema,
      { ...key, scopes: ['admin'] },
      `APIKEY#${'f'.repeat(64)}|APIKEY`,
      'scopes',
    ],
    [
      'a canvas item without nodes',
      CanvasItemSchema,
      { ...storedCanvas, canvas: { edges: [] } },
      `WORKFLOW#${ids.workflow}|CANVAS`,
      'canvas',
    ],
  ])('%s', (_case, schema, item, keyName, field) => {
    const error = refusal(() => parseItem(schema, item));
    expect(error).toBeInstanceOf(MalformedItemError);
    expect((error as Error).message).toContain(keyName);
    expect((error as Error).message).toContain(field);
  });

  it('names the field at fault, never the value stored in it (the message is logged)', () => {
    const error = refusal(() => parseItem(RunItemSchema, { ...run, callbackUrl: 987_654_321 }));
    expect((error as Error).message).toBe(`Malformed item RUN#${ids.job}|RUN: callbackUrl expected string`);
    expect((error as Error).message).not.toContain('987654321');
  });

  it('an item read without its key (a refusal’s old image) is named by the key it was read at', () => {
    const error = refusal(() => parseItem(WorkflowLockItemSchema, { waiting: 'two' }, workflowLockKey(ids.workflow)));
    expect(error).toBeInstanceOf(MalformedItemError);
    expect((error as Error).message).toContain(`WFLOCK#${ids.workflow}|LOCK`);
  });
});
