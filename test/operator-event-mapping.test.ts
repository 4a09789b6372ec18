/**
 * The operator events' pure parts, without I/O: which item change gives which event
 * (functions/domain/operator-events.ts), the mapping's filters as the local poller applies them
 * (the same data the stack deploys), and how the publisher cuts PutEvents calls and reports what
 * the bus refused (the bus is a function here; test/operator-events.int.test.ts puts through the SDK).
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { publishOperatorEvents } from '../functions/app/publish-operator-events.ts';
import { creditsText, operatorDetailTypes, operatorEventOf } from '../functions/domain/operator-events.ts';
import { MalformedItemError } from '../functions/store/items/item.ts';
import { deferredRunKey, runKey } from '../functions/store/keys.ts';
import { type BusEntry, operatorImagesOf } from '../functions/store/operator-event-bus.ts';
import type { ItemChange } from '../functions/store/stream-images.ts';
import { passesOperatorEventsFilters } from '../local/stream-source.ts';
import { operatorEventsMapping } from '../platform/definitions.ts';

const jobId = '0b7f6a0e-1c1d-4e2f-9a3b-4c5d6e7f8a9b';
const run = (fields: Record<string, unknown> = {}) => ({
  ...runKey(jobId),
  jobId,
  teamId: 'team-1',
  keyId: 'key-1',
  workflowId: 'wf-1',
  projectId: 'proj-1',
  status: 'queued',
  mode: 'production',
  inputs: { topic: 'a private input' },
  callbackUrl: 'https://example.com/hook',
  callbackSecret: 'secret-value',
  spendMonth: '2026-11',
  estimateHundredths: 1234,
  heldHundredths: 1234,
  chargedHundredths: 0,
  stepEstimates: {},
  stepsTotal: 3,
  createdAt: '2026-11-22T03:00:00.000Z',
  GSI1PK: 'QUEUEDRUNS#1',
  ...fields,
});

const deferredId = '5e0c8a51-7b0a-4b7e-9f55-0c1d2e3f4a5b';
const deferred = (fields: Record<string, unknown> = {}) => ({
  ...deferredRunKey(deferredId),
  deferredJobId: deferredId,
  teamId: 'team-1',
  keyId: 'key-1',
  workflowId: 'wf-1',
  status: 'waiting',
  maxMultiplier: 0.6,
  createdAt: '2026-11-22T03:00:00.000Z',
  expiresAt: '2026-11-23T03:00:00.000Z',
  request: { inputs: { topic: 'a private input' }, callbackSecret: 'secret-value' },
  ...fields,
});

/** The event of a change, its images read as the publisher reads them (with their items' schemas). */
const eventOf = (oldImage: Record<string, unknown> | undefined, newImage: Record<string, unknown> | undefined) =>
  operatorEventOf(operatorImagesOf({ oldImage, newImage }));

describe('operatorEventOf', () => {
  it('gives Run Started for a run item inserted, with its hold, and nothing secret', () => {
    const event = eventOf(undefined, run());
    expect(event).toEqual({
      detailType: 'Run Started',
      time: '2026-11-22T03:00:00.000Z',
      detail: {
        version: 1,
        eventId: `${jobId}:run-started`,
        jobId,
        teamId: 'team-1',
        projectId: 'proj-1',
        workflowId: 'wf-1',
        mode: 'production',
        stepsTotal: 3,
        estimateHundredths: 1234,
        estimateCredits: '12.34',
        createdAt: '2026-11-22T03:00:00.000Z',
        // Always present on a run's events, empty when the start gave none.
        metadata: {},
        tags: [],
      },
    });
    expect(JSON.stringify(event)).not.toMatch(/private input|secret-value|example\.com|key-1/);
  });

  it("carries the run's metadata and tags on Run Started and Run Finished", () => {
    const labels = { metadata: { order: 'A-1', user: 'u-7' }, tags: ['vip', 'order:A-1'] };
    expect(eventOf(undefined, run(labels))?.detail).toMatchObject(labels);
    const ended = run({ ...labels, status: 'completed', endedAt: '2026-11-22T03:00:09.000Z' });
    expect(eventOf(run({ ...labels, status: 'processing' }), ended)?.detail).toMatchObject(labels);
  });

  it('gives Run Finished once, when the status becomes an end status, with the exact charge', () => {
    for (const status of ['completed', 'failed', 'cancelled', 'stopped']) {
      const ended = run({ status, chargedHundredths: 1005, stepsCompleted: 2, endedAt: '2026-11-22T03:00:09.000Z' });
      const event = eventOf(run({ status: 'processing' }), ended);
      expect(event?.detailType).toBe(operatorDetailTypes.runFinished);
      expect(event?.time).toBe('2026-11-22T03:00:09.000Z');
      expect(event?.detail).toMatchObject({
        eventId: `${jobId}:run-finished`,
        status,
        creditsChargedHundredths: 1005,
        creditsCharged: '10.05',
        stepsCompleted: 2,
        stepsSkipped: 0,
        endedAt: '2026-11-22T03:00:09.000Z',
      });
      // A change after the end (its TTL set again, say) gives nothing more.
      expect(eventOf(ended, { ...ended, ttl: 1 })).toBeUndefined();
    }
  });

  it('gives nothing for a step counted, a claim, or a removal (TTL)', () => {
    expect(eventOf(run(), run({ status: 'processing' }))).toBeUndefined();
    expect(eventOf(run({ status: 'processing' }), run({ status: 'processing', stepsCompleted: 1 }))).toBeUndefined();
    expect(eventOf(run({ status: 'completed' }), undefined)).toBeUndefined();
    expect(eventOf(undefined, { PK: 'TEAM#t', SK: 'TEAM', status: 'completed' })).toBeUndefined();
  });

  it('gives a deferred run event when it leaves waiting, never with its request', () => {
    const cases = [
      ['dispatched', operatorDetailTypes.deferredDispatched, 'job-2'],
      ['expired', operatorDetailTypes.deferredExpired, null],
      ['cancelled', operatorDetailTypes.deferredCancelled, null],
    ] as const;
    for (const [status, type, job] of cases) {
      const moved = deferred({ status, movedAt: '2026-11-22T04:00:00.000Z', jobId: job ?? undefined });
      const event = eventOf(deferred(), moved);
      expect(event).toEqual({
        detailType: type,
        time: '2026-11-22T04:00:00.000Z',
        detail: {
          version: 1,
          eventId: `${deferredId}:deferred-${status}`,
          deferredJobId: deferredId,
          teamId: 'team-1',
          workflowId: 'wf-1',
          status,
          maxMultiplier: 0.6,
          createdAt: '2026-11-22T03:00:00.000Z',
          expiresAt: '2026-11-23T03:00:00.000Z',
          movedAt: '2026-11-22T04:00:00.000Z',
          jobId: job,
        },
      });
      expect(JSON.stringify(event)).not.toMatch(/private input|secret-value|request/);
      expect(eventOf(moved, { ...moved, ttl: 1 })).toBeUndefined();
    }
    expect(eventOf(undefined, deferred())).toBeUndefined();
  });

  it('reads each image with its item schema: an image without its shape is an error naming its key', () => {
    expect(() => eventOf(undefined, run({ stepsTotal: 'three' }))).toThrow(MalformedItemError);
    expect(() => eventOf(deferred(), deferred({ status: 'cancelled', maxMultiplier: null }))).toThrow(
      `DEFERRED#${deferredId}|DEFERRED`,
    );
  });

  it('writes credits exactly, with two decimals', () => {
    expect([0, 1, 10, 99, 100, 123456789, -5].map(creditsText)).toEqual([
      '0.00',
      '0.01',
      '0.10',
      '0.99',
      '1.00',
      '1234567.89',
      '-0.05',
    ]);
  });
});

/** A stream record as Lambda hands it over (only what the filters read). */
const record = (eventName: 'INSERT' | 'MODIFY' | 'REMOVE', sk: string, oldStatus?: string, newStatus?: string) =>
  ({
    eventName,
    dynamodb: {
      Keys: { PK: { S: 'X#1' }, SK: { S: sk } },
      ...(oldStatus ? { OldImage: { SK: { S: sk }, status: { S: oldStatus } } } : {}),
      ...(newStatus ? { NewImage: { SK: { S: sk }, status: { S: newStatus } } } : {}),
    },
  }) as DynamoDBRecord;

describe("the mapping's filters (platform/definitions.ts), as the local poller applies them", () => {
  it('filter on the sort keys the store writes runs and deferred runs under', () => {
    const text = JSON.stringify(operatorEventsMapping.filters);
    expect(text).toContain(`"S":["${runKey('x').SK}"]`);
    expect(text).toContain(`"S":["${deferredRunKey('x').SK}"]`);
  });

  it('pass exactly the changes that give an event', () => {
    const passed = [
      record('INSERT', 'RUN', undefined, 'queued'),
      record('MODIFY', 'RUN', 'queued', 'cancelled'),
      record('MODIFY', 'RUN', 'processing', 'completed'),
      record('MODIFY', 'DEFERRED', 'waiting', 'dispatched'),
      record('MODIFY', 'DEFERRED', 'waiting', 'expired'),
    ];
    const blocked = [
      record('MODIFY', 'RUN', 'queued', 'processing'),
      record('MODIFY', 'RUN', 'processing', 'processing'),
      record('MODIFY', 'RUN', 'completed', 'completed'),
      record('REMOVE', 'RUN', 'completed'),
      record('INSERT', 'DEFERRED', undefined, 'waiting'),
      record('INSERT', 'STEP#a', undefined, 'completed'),
      record('MODIFY', 'TEAM', 'x', 'completed'),
    ];
    expect(passed.map(passesOperatorEventsFilters)).toEqual(passed.map(() => true));
    expect(blocked.map(passesOperatorEventsFilters)).toEqual(blocked.map(() => false));
  });
});

describe('publishOperatorEvents', () => {
  const started = (n: number): ItemChange => ({
    sequenceNumber: String(100 + n),
    newImage: run({ jobId: `job-${n}`, PK: `RUN#job-${n}` }),
  });
  const counted: ItemChange = { sequenceNumber: '99', oldImage: run(), newImage: run({ status: 'processing' }) };

  it('puts in calls of at most ten entries, in stream order, skipping changes that give no event', async () => {
    const calls: BusEntry[][] = [];
    const changes = [counted, ...Array.from({ length: 23 }, (_, i) => started(i))];
    const report = await publishOperatorEvents(
      {
        putEntries: async (entries) => {
          calls.push([...entries]);
          return entries.map(() => undefined);
        },
      },
      changes,
    );
    expect(calls.map((c) => c.length)).toEqual([10, 10, 3]);
    expect(calls.flat().map((e) => JSON.parse(e.detail).jobId)).toEqual(
      Array.from({ length: 23 }, (_, i) => `job-${i}`),
    );
    expect(calls[0]?.[0]).toMatchObject({ source: 'workflow-run-api', detailType: 'Run Started' });
    expect(report).toEqual({ put: 23, failed: [], errors: [] });
  });

  it('reports the first refused change and every later one, and stops there', async () => {
    const calls: BusEntry[][] = [];
    const changes = Array.from({ length: 15 }, (_, i) => started(i));
    const report = await publishOperatorEvents(
      {
        putEntries: async (entries) => {
          calls.push([...entries]);
          return entries.map((_, i) => (i === 4 ? 'ThrottlingException' : undefined));
        },
      },
      changes,
    );
    expect(calls).toHaveLength(1);
    expect(report.put).toBe(9);
    expect(report.failed).toEqual(changes.slice(4).map((c) => c.sequenceNumber));
    expect(report.errors).toEqual(['ThrottlingException']);
  });

  it('reports the whole call when it throws, never throwing itself', async () => {
    const changes = [started(1), started(2)];
    const report = await publishOperatorEvents(
      {
        putEntries: async () => {
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        },
      },
      changes,
    );
    expect(report).toEqual({ put: 0, failed: ['101', '102'], errors: ['TimeoutError', 'TimeoutError'] });
  });
});
