/**
 * Throttled reads (functions/store/read.ts; docs/api.md, "When the service is busy"): DynamoDB
 * Local never throttles, so the client's HTTP handler answers the picked reads with DynamoDB's own
 * throttling and 5xx answers (test/support/throttled-dynamo.ts). The SDK's standard retries run as
 * in Lambda: fewer failures than its tries (4 for DynamoDB) are absorbed; as many answer 503 with Retry-After,
 * never a 500, and a throttled key read is never a 401.
 */
import { describe, expect, it } from 'vitest';
import { StorageBusyError } from '../functions/errors/table.ts';
import { batchGet } from '../functions/store/batch.ts';
import { runKey } from '../functions/store/keys.ts';
import { api, pairSteps, startRunCall, startSecondApi } from './support/runs.ts';
import { createWorkflow, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';
import { type DynamoFault, type FaultRule, sdkTries, throttledDeps } from './support/throttled-dynamo.ts';

const { stack, closers } = stackPerFile();

/** The SDK's standard mode: tries in all, the first included (its default `maxAttempts` for DynamoDB). */
const tries = await sdkTries();

/** An API whose DynamoDB answers `fault` to the reads `rule` picks (the first `times` of them). */
const apiOver = async (fault: DynamoFault, rule: FaultRule, times?: number) => {
  const { deps, state } = throttledDeps(stack, fault, rule, times);
  const second = await startSecondApi(deps);
  closers.push(() => second.close());
  return { baseUrl: second.baseUrl, state };
};

const expectBusy = (answer: { status: number; body: unknown; headers: Headers }) => {
  expect([answer.status, answer.body]).toEqual([503, { error: 'Service busy; try again shortly' }]);
  expect(answer.headers.get('retry-after')).toBe('1');
};

const isKeyRead: FaultRule = (operation, body) => operation === 'GetItem' && body.includes('"APIKEY#');
const isQuery: FaultRule = (operation) => operation === 'Query';

/** A team with the pair workflow and one run of it. */
const teamWithRun = async () => {
  const t = await seedUnthrottledTeam(stack.deps, 100);
  const workflowId = await createWorkflow(stack, t, pairSteps);
  const started = await startRunCall(stack.baseUrl, t.key, workflowId);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return { t, workflowId, jobId: started.body.jobId as string };
};

const reads = [
  { name: 'the key check', rule: isKeyRead, path: () => '/workflows' },
  { name: 'GET /runs/{jobId}', rule: isQuery, path: (jobId: string) => `/runs/${jobId}` },
  { name: 'GET /runs', rule: isQuery, path: () => '/runs' },
  { name: 'GET /workflows', rule: isQuery, path: () => '/workflows' },
];
const faults: DynamoFault[] = [
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
];

describe.each(faults)('%s on a read', (fault) => {
  it.each(reads)('$name: on every SDK try 503 with Retry-After; on fewer, answered', async ({ rule, path }) => {
    const { t, jobId } = await teamWithRun();
    const busy = await apiOver(fault, rule);
    expectBusy(await api(busy.baseUrl, 'GET', path(jobId), { key: t.key }));
    // The SDK's own tries, and no more: the read wrapper adds none.
    expect(busy.state.sent).toBe(tries);

    const absorbed = await apiOver(fault, rule, tries - 1);
    const answer = await api(absorbed.baseUrl, 'GET', path(jobId), { key: t.key });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(absorbed.state.sent).toBe(tries - 1);
  });
});

describe('a BatchGet DynamoDB keeps leaving unprocessed', () => {
  it('is tried again with backoff, then StorageBusyError (a 503 at the edge), not a bare Error (a 500)', async () => {
    const { jobId } = await teamWithRun();
    const { deps, state } = throttledDeps(stack, 'UnprocessedKeys', (operation) => operation === 'BatchGetItem');
    await expect(batchGet(deps, [runKey(jobId)])).rejects.toBeInstanceOf(StorageBusyError);
    expect(state.sent).toBe(12);
  }, 30_000);
});
