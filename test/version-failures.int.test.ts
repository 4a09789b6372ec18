/**
 * What the canary's `<id>NewVersionFailures` alarm reads (lib/safe-deploys.ts): the real handlers,
 * over an API Gateway event or SQS records with a Lambda context naming the version, write one
 * embedded metric format line `AnsweredFailures` by `functionName` and `functionVersion` for each
 * 5xx they answer and for the records they hand back as batch item failures, and none for a 4xx
 * or a batch that succeeded. The lines are read off stdout, as CloudWatch Logs reads them.
 */
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it, vi } from 'vitest';

// Metrics are off in tests (vitest.config.ts); the count reads the switch once, at import.
vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
});

import { makeHandler } from '../functions/api/run-workflow.ts';
import { anyOrigin } from '../functions/http/origin-check.ts';
import { publicHandler } from '../functions/http/public-handler.ts';
import { json } from '../functions/http/response.ts';
import type { NodeExecutor } from '../functions/nodes/executors/types.ts';
import { invokedAs } from '../local/invocation.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { answeredFailures, metricsNamespace } from '../platform/metric-names.ts';
import { basePath, routeById } from '../platform/routes.ts';
import {
  faultyDeps,
  instantExecutor,
  type StepMessage,
  startRunCall,
  stepHandler,
  stepRecord,
  takeStepMessages,
} from './support/runs.ts';
import { createWorkflow, type SeededTeam, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

type Line = Record<string, unknown> & {
  _aws?: {
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
};

/** What `work` writes on stdout, one JSON line at a time (EMF and log lines alike), and its result. */
const captureStdout = async <T>(work: () => Promise<T>): Promise<{ lines: Line[]; result: T }> => {
  const written: string[] = [];
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
    written.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  });
  try {
    const result = await work();
    return { lines: written.map((line) => JSON.parse(line) as Line), result };
  } finally {
    stdout.mockRestore();
  }
};

/** The EMF lines that publish `AnsweredFailures`. */
const failureLines = (lines: Line[]) =>
  lines.filter((line) => line._aws?.CloudWatchMetrics.some((d) => d.Metrics.some((m) => m.Name === answeredFailures)));

/** The one versioned failure line a function wrote: its directive, dimensions and count. */
const expectOneFailureLine = (lines: Line[], functionName: string, functionVersion: string, count: number) => {
  const found = failureLines(lines);
  expect(found).toHaveLength(1);
  const [line] = found as [Line];
  expect(line._aws?.CloudWatchMetrics).toEqual([
    {
      Namespace: metricsNamespace,
      Dimensions: [['functionName', 'functionVersion']],
      Metrics: [{ Name: answeredFailures, Unit: 'Count' }],
    },
  ]);
  expect(line._aws).toMatchObject({ Timestamp: expect.any(Number) });
  expect(line).toMatchObject({ functionName, functionVersion, [answeredFailures]: count });
  // One dimension set only: no service, stage or request id that would make each line a metric of its own.
  expect(Object.keys(line).sort()).toEqual(['_aws', answeredFailures, 'functionName', 'functionVersion'].sort());
};

/** A Lambda context as the runtime gives it to version `version` of `functionName`, invoked through its alias. */
const versionContext = (functionName: string, version: string): Context => ({
  ...lambdaContext(functionName, 10_000),
  functionVersion: version,
  invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}:live`,
});

/** POST /workflows/{id}/runs as API Gateway (payload 2.0) hands it to the RunWorkflow function. */
const runWorkflowEvent = (workflowId: string, key?: string): APIGatewayProxyEventV2 => {
  const route = routeById('RunWorkflow');
  const routeKey = `${route.method} ${basePath}${route.path}`;
  const path = `${basePath}/workflows/${workflowId}/runs`;
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    pathParameters: { id: workflowId },
    requestContext: {
      accountId: '000000000000',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method: route.method, path, protocol: 'HTTP/1.1', sourceIp: '198.51.100.7', userAgent: 'test' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    body: JSON.stringify({}),
    isBase64Encoded: false,
  };
};

/** DynamoDB's own 500 on every transaction, as the SDK throws it: the start cannot be written. */
const internalServerError = () =>
  Object.assign(new Error('We encountered an internal error. Please try again.'), {
    name: 'InternalServerError',
    $fault: 'server',
    $metadata: { httpStatusCode: 500 },
  });

/** The real RunWorkflow handler over `deps`, run as that function (the AWS command log names it). */
const makeRunWorkflow = (deps: Parameters<typeof makeHandler>[0]) => invokedAs('RunWorkflow', makeHandler(deps));

let team: SeededTeam;
let workflowId: string;
beforeAll(async () => {
  team = await seedUnthrottledTeam(stack.deps);
  workflowId = await createWorkflow(stack, team, [{ key: 'only', type: 'TextEntry', config: { text: 'hi' } }]);
});

describe('an API function counts each 5xx it answers for its version', () => {
  it('RunWorkflow answering 500 (its start transaction failed) writes AnsweredFailures 1 for version 7', async () => {
    const failing = faultyDeps(stack, {
      failDynamo: (command) => command === 'TransactWriteItemsCommand',
      error: internalServerError,
    });
    const handler = makeRunWorkflow(failing);
    const context = versionContext('WorkflowRunApi-prod-Api-RunWorkflow', '7');
    const { lines, result } = await captureStdout(() => handler(runWorkflowEvent(workflowId, team.key), context));
    expect(result.statusCode).toBe(500);
    expectOneFailureLine(lines, 'WorkflowRunApi-prod-Api-RunWorkflow', '7', 1);
  });

  it("a 4xx is the caller's: no key (401) and a workflow that is not there (404) write no failure line", async () => {
    const handler = makeRunWorkflow(stack.deps);
    const context = versionContext('WorkflowRunApi-prod-Api-RunWorkflow', '7');
    const { lines, result } = await captureStdout(async () => [
      await handler(runWorkflowEvent(workflowId), context),
      await handler(runWorkflowEvent(randomUUID(), team.key), context),
    ]);
    expect(result.map((r) => r.statusCode)).toEqual([401, 404]);
    expect(failureLines(lines)).toEqual([]);
  });

  it('the same handler answering 200 writes none either, and a public function counts its 500 too', async () => {
    const handler = makeRunWorkflow(stack.deps);
    const ok = await captureStdout(() =>
      handler(runWorkflowEvent(workflowId, team.key), versionContext('WorkflowRunApi-prod-Api-RunWorkflow', '7')),
    );
    expect(ok.result.statusCode).toBe(200);
    expect(failureLines(ok.lines)).toEqual([]);

    const open = publicHandler(async () => {
      throw new Error('renderer missing');
    }, anyOrigin);
    const fine = publicHandler(async () => json(200, {}), anyOrigin);
    const context = versionContext('WorkflowRunApi-prod-Api-GetDocs', '3');
    const { lines, result } = await captureStdout(async () => [
      await open(runWorkflowEvent(workflowId), context),
      await fine(runWorkflowEvent(workflowId), context),
    ]);
    expect(result.map((r) => r.statusCode)).toEqual([500, 200]);
    expectOneFailureLine(lines, 'WorkflowRunApi-prod-Api-GetDocs', '3', 1);
  });
});

describe('the step executor counts the records it hands back for its version', () => {
  /** A node that throws every time: a broken version's step. */
  const failing: NodeExecutor = async () => {
    throw new Error('this version cannot run the node');
  };

  /** Two one-step runs' root messages (of two workflows: a workflow runs one at a time), taken off the queue. */
  const twoRoots = async () => {
    const jobIds: string[] = [];
    for (const name of ['first', 'second']) {
      const id = await createWorkflow(stack, team, [{ key: name, type: 'TextEntry', config: { text: name } }]);
      const started = await startRunCall(stack.baseUrl, team.key, id);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      jobIds.push(started.body.jobId as string);
    }
    const messages = await takeStepMessages(stack.deps);
    return jobIds.map((jobId) => messages.find((m) => m.jobId === jobId) as StepMessage);
  };

  it('a batch whose two steps fail writes AnsweredFailures 2 for version 12; a batch that succeeds writes none', async () => {
    const { result: roots } = await captureStdout(twoRoots); // the starts' own metric lines, set aside
    const context = versionContext('WorkflowRunApi-prod-Api-StepExecutor', '12');
    const batch = (executor: NodeExecutor, delivery: number) =>
      stepHandler(stack.deps, () => executor)(
        { Records: roots.map((root) => stepRecord(root, delivery)) } as SQSEvent,
        context,
      ) as Promise<SQSBatchResponse>;

    const failed = await captureStdout(() => batch(failing, 1));
    expect(failed.result.batchItemFailures).toHaveLength(2);
    expectOneFailureLine(failed.lines, 'WorkflowRunApi-prod-Api-StepExecutor', '12', 2);

    // Their redelivery, on a version whose node runs: nothing failed, nothing counted.
    const redelivered = await captureStdout(() => batch(instantExecutor, 2));
    expect(redelivered.result.batchItemFailures).toEqual([]);
    expect(failureLines(redelivered.lines)).toEqual([]);
  });
});
