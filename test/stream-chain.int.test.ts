/**
 * GET /runs/{jobId}/events runs in the keyed routes' middy chain (functions/http/keyed-handler.ts):
 * its handler, given the invocation's Lambda context, answers an unmapped failure before the stream
 * opens from the one error table and counts the 500 for the function's version, as every keyed
 * route's chain does; a 4xx counts nothing.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';

// Metrics are off in tests (vitest.config.ts); the count reads the switch once, at import.
vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
});

import { makeHandler } from '../functions/api/get-run-events.ts';
import type { ResponseHead } from '../functions/http/event-stream.ts';
import { invokedAs } from '../local/invocation.ts';
import { lambdaContext } from '../local/lambda-context.ts';
import { answeredFailures } from '../platform/metric-names.ts';
import { runEventsUrlEvent } from './support/function-url-event.ts';
import { faultyDeps, startRunCall } from './support/runs.ts';
import { createWorkflow, seedUnthrottledTeam, stackPerFile } from './support/stack.ts';

const { stack } = stackPerFile();

type Line = Record<string, unknown>;

/** What `work` writes on stdout, one JSON line at a time (EMF and log lines alike). */
const captureStdout = async (work: () => Promise<void>): Promise<Line[]> => {
  const written: string[] = [];
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
    written.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  });
  try {
    await work();
    return written.map((line) => JSON.parse(line) as Line);
  } finally {
    stdout.mockRestore();
  }
};

const functionName = 'WorkflowRunApi-prod-Api-GetRunEvents';
const context: Context = { ...lambdaContext(functionName, 130_000), functionVersion: '9' };

/** The handler's answer on `deps`, taken whole, with what it wrote on stdout. */
const answer = async (deps: Parameters<typeof makeHandler>[0], key: string, jobId: string) => {
  let head: ResponseHead | undefined;
  let body = '';
  const lines = await captureStdout(() =>
    invokedAs('GetRunEvents', makeHandler(deps))(
      runEventsUrlEvent(jobId, { authorization: `Bearer ${key}` }),
      (opened) => {
        head = opened;
        return { write: (text) => (body += text), end: () => undefined, closed: false };
      },
      context,
    ),
  );
  return { head, body, lines };
};

describe('the event stream in the keyed routes’ chain', () => {
  it('answers an unmapped failure before the stream from the error table, counted for its version by the chain', async () => {
    const team = await seedUnthrottledTeam(stack.deps, 100);
    const workflowId = await createWorkflow(stack, team, [{ key: 'only', type: 'TextEntry', config: { text: 'hi' } }]);
    const started = await startRunCall(stack.baseUrl, team.key, workflowId);
    const jobId = started.body.jobId as string;
    // The run item's read fails (the key's lookup does not).
    const failing = faultyDeps(stack, {
      failDynamo: (command, input) => command === 'GetItemCommand' && JSON.stringify(input).includes(`RUN#${jobId}`),
      // A defect, not DynamoDB's own failure (that one is a 503 with Retry-After).
      error: () => new TypeError('a defect in the read'),
    });
    const failed = await answer(failing, team.key, jobId);
    expect(failed.head?.statusCode).toBe(500);
    expect(failed.head?.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(failed.body)).toMatchObject({ error: expect.stringMatching(/^Server error/) });
    const counted = failed.lines.filter((line) => answeredFailures in line);
    expect(counted).toHaveLength(1);
    expect(counted[0]).toMatchObject({ functionName, functionVersion: '9', [answeredFailures]: 1 });

    // Another run id: the chain's 404, counted as nothing.
    const missing = await answer(stack.deps, team.key, randomUUID());
    expect(missing.head?.statusCode).toBe(404);
    expect(missing.lines.filter((line) => answeredFailures in line)).toEqual([]);
  });
});
