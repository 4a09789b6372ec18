/**
 * The smoke run's checks, one small function each. Every check uses the public API only, as a
 * customer would, and returns its outcome or throws (a `CheckFailure` naming its cause, or the API's
 * own typed error, which `runSmoke` names).
 */
import { createHash } from 'node:crypto';
import { outputFiles } from '../client.ts';
import { classifyStepError } from './causes.ts';
import {
  CheckFailure,
  type CheckOutcome,
  chargedCredits,
  expectCompleted,
  runToEnd,
  type SmokeContext,
} from './context.ts';
import { smokePng } from './fixtures.ts';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

const wrong = (message: string, credits = 0, jobId?: string) =>
  new CheckFailure('wrong result', message, { credits, ...(jobId ? { jobId } : {}) });

/** POST /files, a read before the bytes (`awaiting_upload`), the presigned PUT, a read after (`ready`). */
export const uploadCheck = async (ctx: SmokeContext): Promise<CheckOutcome> => {
  const { client, signal } = ctx;
  const created = await client.createFile(
    { name: 'smoke.png', contentType: 'image/png', size: smokePng.byteLength },
    { signal },
  );
  const before = await client.getFile(created.fileId, { signal });
  if (before.state !== 'awaiting_upload') throw wrong(`read before its bytes: ${before.state}, not awaiting_upload`);
  const put = await ctx.fetch(created.upload.url, {
    method: created.upload.method,
    headers: created.upload.headers,
    body: smokePng,
    signal,
  });
  if (!put.ok) {
    throw new CheckFailure('storage refused', `PUT to storage: ${put.status} ${(await put.text()).slice(0, 200)}`);
  }
  const after = await client.getFile(created.fileId, { signal });
  if (after.state !== 'ready') throw wrong(`read after its bytes: ${after.state}, not ready`);
  return { status: 'pass', detail: `${created.fileId}: awaiting_upload, then ready`, credits: 0 };
};

/** A run that hands the uploaded PNG to an ImageGallery; its output's file link gives back the same bytes. */
export const fileLinkCheck = async (ctx: SmokeContext): Promise<CheckOutcome> => {
  const workflowId = await ctx.workflowFor('file-link', [
    { key: 'image', type: 'ImageLoader', config: { apiInputKey: 'image' } },
    { key: 'show', type: 'ImageGallery', inputs: ['image'] },
  ]);
  const image = await ctx.uploaded('image');
  const { run, credits } = await expectCompleted(
    await runToEnd(ctx, workflowId, { inputs: { image } }),
    classifyStepError,
  );
  const file = outputFiles(run).find((f) => f.file.availability === 'ready')?.file;
  if (file?.availability !== 'ready') throw wrong('the run has no ready file in its output', credits, run.jobId);
  const response = await ctx.fetch(file.url, { signal: ctx.signal });
  if (!response.ok) throw wrong(`GET the file link: ${response.status}`, credits, run.jobId);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (sha256(bytes) !== sha256(smokePng)) {
    throw wrong(`the file link gave ${bytes.byteLength} bytes, not the ${smokePng.byteLength} uploaded`, credits);
  }
  return { status: 'pass', detail: `${bytes.byteLength} bytes, as uploaded`, credits, jobId: run.jobId };
};

/** A run followed through its event stream to `done`, which carries the completed Run. */
export const eventsCheck = async (ctx: SmokeContext): Promise<CheckOutcome> => {
  const { client, signal } = ctx;
  const workflowId = await ctx.workflowFor('events', [
    { key: 'text', type: 'TextEntry', config: { text: 'smoke' } },
    { key: 'show', type: 'TextConsole', inputs: ['text'] },
  ]);
  const started = await client.runWorkflow(workflowId, {}, { signal });
  const seen: string[] = [];
  let status: string | undefined;
  const url = ctx.streamBaseUrl && `${ctx.streamBaseUrl}/runs/${encodeURIComponent(started.jobId)}/events`;
  for await (const event of client.runEvents(started.jobId, { signal, ...(url && { url }) })) {
    seen.push(event.event);
    if (event.event === 'done') status = event.data.status;
  }
  const credits = await chargedCredits(ctx, workflowId, started.jobId, started.estimatedCredits);
  if (status !== 'completed') {
    throw wrong(`the stream ended ${status ? `with a ${status} run` : 'without done'}`, credits, started.jobId);
  }
  return { status: 'pass', detail: `${seen.length} events, the last done`, credits, jobId: started.jobId };
};

/** A PythonSandbox step that doubles its input. */
export const pythonCheck = async (ctx: SmokeContext): Promise<CheckOutcome> => {
  const workflowId = await ctx.workflowFor('python', [
    { key: 'number', type: 'TextEntry', config: { text: '21' } },
    { key: 'python', type: 'PythonSandbox', config: { code: 'result = int(inputs[0]) * 2' }, inputs: ['number'] },
  ]);
  const { run, credits } = await expectCompleted(await runToEnd(ctx, workflowId), classifyStepError);
  const result = run.output.find((o) => o.node_id === 'python')?.result;
  if (result !== 42 && (result as { result?: unknown } | undefined)?.result !== 42) {
    throw wrong(`the Python step gave ${JSON.stringify(result)}, not 42`, credits, run.jobId);
  }
  return { status: 'pass', detail: 'result 42', credits, jobId: run.jobId };
};

/** Queued steps in a line, past Lambda's recursive loop detection (which stops a chain after about 16). */
export const hopCount = 20;

/**
 * A line of `hopCount` steps, each its own queued step execution: every step also reads the first
 * one, so none is the only successor of the step before it, and none runs in its predecessor's
 * invocation; each is released by a message sent from the step before it.
 */
export const hopSteps = () => [
  { key: 'seed', type: 'TextEntry' as const, config: { text: 'hop' } },
  ...Array.from({ length: hopCount }, (_, i) => ({
    key: `hop${i + 1}`,
    type: 'PromptBuilder' as const,
    config: { template: '{{0}}' },
    inputs: i === 0 ? ['seed'] : [`hop${i}`, 'seed'],
  })),
];

export const hopsCheck = async (ctx: SmokeContext): Promise<CheckOutcome> => {
  const workflowId = await ctx.workflowFor('hops', hopSteps());
  const { run, credits } = await expectCompleted(await runToEnd(ctx, workflowId), classifyStepError);
  const done = run.steps.filter((s) => s.status === 'completed').length;
  if (done !== hopCount + 1) throw wrong(`${done} of ${hopCount + 1} steps completed`, credits, run.jobId);
  return { status: 'pass', detail: `${hopCount} queued steps in a line completed`, credits, jobId: run.jobId };
};

/** A run with a signed webhook to the named receiver; its delivery log must show a 2xx answer. */
export const webhookCheck = async (ctx: SmokeContext): Promise<CheckOutcome> => {
  const { client, signal, webhook } = ctx;
  if (!webhook) return { status: 'skip', detail: 'no receiver named (--webhook-url)', credits: 0 };
  const workflowId = await ctx.workflowFor('webhook', [
    { key: 'text', type: 'TextEntry', config: { text: 'smoke' } },
    { key: 'show', type: 'TextConsole', inputs: ['text'] },
  ]);
  const { run, credits } = await expectCompleted(
    await runToEnd(ctx, workflowId, { callbackUrl: webhook.url, callbackSecret: webhook.secret }),
    classifyStepError,
  );
  for (;;) {
    const log = await client.listDeliveries(run.jobId, { signal });
    const last = log.deliveries[0];
    if (
      log.state === 'delivered' &&
      last?.statusCode !== undefined &&
      last.statusCode >= 200 &&
      last.statusCode < 300
    ) {
      return {
        status: 'pass',
        detail: `delivered: ${last.statusCode} in ${last.durationMs} ms`,
        credits,
        jobId: run.jobId,
      };
    }
    if (last && log.state !== 'pending') {
      throw wrong(`delivery ${log.state}: ${last.statusCode ?? last.error ?? 'no answer'}`, credits, run.jobId);
    }
    // A first attempt failed and a retry is due (minutes away): the check's deadline ends the wait.
    if (last && (last.statusCode === undefined || last.statusCode >= 300)) {
      throw wrong(`the receiver answered ${last.statusCode ?? last.error}; a retry is due`, credits, run.jobId);
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    signal.throwIfAborted();
  }
};
