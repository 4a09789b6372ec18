import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeader, webhookHeaders, webhookId } from '../functions/domain/webhook.ts';
import { makeHandler as makeWebhookWorker } from '../functions/workers/webhook-delivery.ts';
import { invokedAs } from '../local/invocation.ts';
import { generateTypes, typesFile } from '../packages/client/scripts/generate-types.ts';
import { main } from '../packages/client/src/cli.ts';
import {
  ApiError,
  ConflictError,
  createClient,
  NotFoundError,
  outputFiles,
  RateLimitError,
  type Run,
  ServerError,
  UnauthorizedError,
  ValidationError,
  verifyStandardWebhook,
  verifyWebhook,
  WaitTimeoutError,
  type WorkflowRunClient,
  type WorkflowStep,
} from '../packages/client/src/index.ts';
import { runCli } from './support/cli.ts';
import { queueContents, recordOf } from './support/queue-contents.ts';
import {
  addKey,
  chainSteps,
  createWorkflow,
  type SeededTeam,
  seedTeam,
  startWorkingStack,
  type TestStack,
} from './support/stack.ts';
import { receiverCa, startReceiver } from './support/webhook-receiver.ts';

let stack: TestStack;
let team: SeededTeam;
let client: WorkflowRunClient;

beforeAll(async () => {
  stack = await startWorkingStack();
  team = await seedTeam(stack.deps, { credits: 1000 });
  client = createClient({ baseUrl: stack.baseUrl, apiKey: team.key });
});
afterAll(async () => {
  await stack?.close();
});

const failingSteps: WorkflowStep[] = [
  { key: 'data', type: 'JsonLoader', config: { data: '{broken' } },
  { key: 'show', type: 'JsonInspector', inputs: ['data'] },
];

const imageSteps: WorkflowStep[] = [
  { key: 'prompt', type: 'TextEntry', config: { text: 'a red fox' } },
  { key: 'image', type: 'ImageGen', config: { width: 64, height: 64 }, inputs: ['prompt'] },
  { key: 'gallery', type: 'ImageGallery', inputs: ['image'] },
];

/** Runs the CLI as a user would: a child process with the URL and key in its environment. */
const cli = (args: string[], env: Record<string, string> = {}) =>
  runCli({ baseUrl: stack.baseUrl, key: team.key }, args, env);

/** A fetch that answers from `fake` while it returns a Response, and from the real API after. */
const scriptedFetch = (fake: (request: Request, call: number) => Response | undefined) => {
  const calls: number[] = [];
  const fetchImpl = async (request: Request) => {
    calls.push(Date.now());
    return fake(request, calls.length) ?? fetch(request);
  };
  return { calls, fetch: fetchImpl };
};

const runJson = (run: Partial<Run> & Pick<Run, 'status'>) =>
  new Response(JSON.stringify({ jobId: randomUUID(), progress: 0, steps: [], output: [], ...run }), {
    status: 200,
    headers: { 'content-type': 'application/json' },
  });

describe('generated types', () => {
  it('the committed openapi-types.ts is what openapi-typescript makes of the served document', async () => {
    expect(await generateTypes(), 'run `npm run client:types` and commit the result').toBe(
      await readFile(typesFile, 'utf8'),
    );
  });
});

describe('client against the local stack', () => {
  it('creates a workflow and lists it', async () => {
    const created = await client.createWorkflow({
      name: 'Client flow',
      steps: chainSteps as WorkflowStep[],
      agentId: team.agentId,
    });
    expect(created).toMatchObject({ agentId: team.agentId, projectId: team.projectId, stepsCount: 4 });
    const workflows = await client.listWorkflows();
    expect(workflows.find((w) => w.id === created.workflowId)).toMatchObject({ name: 'Client flow' });
  });

  it('starts a run (idempotently) and waitForRun returns it completed, reporting progress', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Waited');
    const idempotencyKey = randomUUID();
    const started = await client.runWorkflow(workflowId, { inputs: { topic: 'badgers' } }, { idempotencyKey });
    expect(started).toMatchObject({ workflowId, status: 'queued', stepsCount: 4 });
    // The same key and body answer as the first request did: no second run, no 409.
    const again = await client.runWorkflow(workflowId, { inputs: { topic: 'badgers' } }, { idempotencyKey });
    expect(again.jobId).toBe(started.jobId);

    const seen: Run[] = [];
    const run = await client.waitForRun(started.jobId, { intervalMs: 100, onProgress: (r) => void seen.push(r) });
    expect(run.status, JSON.stringify(run)).toBe('completed');
    expect(run.progress).toBe(100);
    expect(run.steps.map((s) => s.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen.at(-1)).toEqual(run);
    expect(await client.getRun(started.jobId)).toMatchObject({ jobId: started.jobId, status: 'completed' });
  });

  it('runs an agent and defers a run, and reads and cancels the deferred run', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Agent flow');
    const deferred = await client.runWorkflow(workflowId, { defer: true, maxMultiplier: 0.01 });
    expect(deferred).toMatchObject({ deferred: true, workflowId });
    expect(await client.getDeferredRun(deferred.deferredJobId)).toMatchObject({
      status: 'waiting',
      maxMultiplier: 0.01,
    });
    expect(await client.cancelDeferredRun(deferred.deferredJobId)).toMatchObject({ status: 'cancelled' });
    const conflict = await client.cancelDeferredRun(deferred.deferredJobId).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ConflictError);

    const otherTeam = await seedTeam(stack.deps);
    const otherClient = createClient({ baseUrl: stack.baseUrl, apiKey: otherTeam.key });
    await createWorkflow(stack, otherTeam, chainSteps, 'Only one');
    const started = await otherClient.runAgent(otherTeam.agentId);
    expect(started.status).toBe('queued');
    expect((await otherClient.waitForRun(started.jobId, { intervalMs: 100 })).status).toBe('completed');
  });
});

describe('typed errors', () => {
  it('401 UnauthorizedError for an unknown key', async () => {
    const error = await createClient({ baseUrl: stack.baseUrl, apiKey: 'wra_nope' })
      .listWorkflows()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 401, body: { error: 'Unauthorized' }, message: '401 Unauthorized' });
  });

  it('404 NotFoundError and 422 ValidationError', async () => {
    await expect(client.getRun(randomUUID())).rejects.toMatchObject({
      name: 'NotFoundError',
      status: 404,
      body: { error: 'Run not found' },
    });
    await expect(client.getDeferredRun(randomUUID())).rejects.toBeInstanceOf(NotFoundError);
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Invalid input');
    const error = await client.runWorkflow(workflowId, { inputs: { nope: 'x' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).body).toMatchObject({ validKeys: ['topic'] });
  });

  it('409 ConflictError carries activeJobId; cancelling an ended run is a ConflictError too', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Busy');
    const first = await client.runWorkflow(workflowId);
    const error = await client.runWorkflow(workflowId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).activeJobId).toBe(first.jobId);
    await client.waitForRun(first.jobId, { intervalMs: 100 });
    const ended = await client.cancelRun(first.jobId).catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(ConflictError);
    expect((ended as ConflictError).activeJobId).toBeUndefined();
  });

  it('429 RateLimitError carries retryAfterSeconds', async () => {
    const { key } = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 1 });
    const limited = createClient({ baseUrl: stack.baseUrl, apiKey: key });
    await limited.listWorkflows();
    const error = await limited.listWorkflows().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).status).toBe(429);
    expect((error as RateLimitError).retryAfterSeconds).toBeGreaterThan(0);
    // The window is sliding over two minutes, so the wait can pass 60 seconds.
    expect((error as RateLimitError).retryAfterSeconds).toBeLessThanOrEqual(120);
  });
});

describe('waitForRun politeness', () => {
  it('waits Retry-After on a 429 before reading again', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Polite');
    const started = await client.runWorkflow(workflowId);
    await client.waitForRun(started.jobId, { intervalMs: 100 });
    const scripted = scriptedFetch((_request, call) =>
      call === 1
        ? new Response(JSON.stringify({ error: 'Rate limit exceeded' }), {
            status: 429,
            headers: { 'content-type': 'application/json', 'retry-after': '1' },
          })
        : undefined,
    );
    const polite = createClient({ baseUrl: stack.baseUrl, apiKey: team.key, fetch: scripted.fetch });
    const run = await polite.waitForRun(started.jobId, { intervalMs: 50 });
    expect(run.status).toBe('completed');
    expect(scripted.calls).toHaveLength(2);
    expect((scripted.calls[1] ?? 0) - (scripted.calls[0] ?? 0)).toBeGreaterThanOrEqual(990);
  });

  it('backs off exponentially up to the cap while nothing changes, then times out with the last run', async () => {
    const scripted = scriptedFetch(() => runJson({ status: 'processing', progress: 50 }));
    const polling = createClient({ baseUrl: 'http://127.0.0.1:1/api/v1', apiKey: 'k', fetch: scripted.fetch });
    const error = await polling
      .waitForRun(randomUUID(), { intervalMs: 40, backoffFactor: 2, maxIntervalMs: 160, timeoutMs: 900 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect((error as WaitTimeoutError<Run>).lastRun).toMatchObject({ status: 'processing', progress: 50 });
    const gaps = scripted.calls.slice(1).map((t, i) => t - (scripted.calls[i] ?? 0));
    // 40 (first), 80, 160, then capped at 160.
    expect(gaps[0]).toBeGreaterThanOrEqual(35);
    expect(gaps[1]).toBeGreaterThanOrEqual(75);
    expect(gaps[2]).toBeGreaterThanOrEqual(155);
    expect(Math.max(...gaps)).toBeLessThan(300);
  });

  it('retries a 5xx with back-off, and gives up after maxConsecutiveErrors in a row', async () => {
    const serverError = () =>
      new Response(JSON.stringify({ error: 'Server error: storage unavailable (request r1)' }), { status: 500 });
    const flaky = scriptedFetch((_request, call) => (call === 1 ? serverError() : runJson({ status: 'completed' })));
    const recovering = createClient({ baseUrl: 'http://127.0.0.1:1/api/v1', apiKey: 'k', fetch: flaky.fetch });
    expect((await recovering.waitForRun(randomUUID(), { intervalMs: 10 })).status).toBe('completed');
    const broken = scriptedFetch(serverError);
    const failing = createClient({ baseUrl: 'http://127.0.0.1:1/api/v1', apiKey: 'k', fetch: broken.fetch });
    const error = await failing
      .waitForRun(randomUUID(), { intervalMs: 10, maxConsecutiveErrors: 2 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(broken.calls).toHaveLength(2);
  });

  it('stops at every ended status, failed included', async () => {
    for (const status of ['failed', 'cancelled', 'stopped'] as const) {
      const scripted = scriptedFetch(() => runJson({ status }));
      const polling = createClient({ baseUrl: 'http://127.0.0.1:1/api/v1', apiKey: 'k', fetch: scripted.fetch });
      expect((await polling.waitForRun(randomUUID(), { intervalMs: 10 })).status).toBe(status);
      expect(scripted.calls).toHaveLength(1);
    }
  });
});

describe('webhook verification', () => {
  const body = JSON.stringify({ event: 'run.completed', jobId: randomUUID(), status: 'completed' });

  it('verifyWebhook accepts the service signature and refuses anything else', () => {
    const header = signatureHeader(body, 's3cret');
    expect(verifyWebhook(body, header, 's3cret')).toBe(true);
    expect(verifyWebhook(Buffer.from(body), header, 's3cret')).toBe(true);
    expect(verifyWebhook(body, header, 'other')).toBe(false);
    expect(verifyWebhook(`${body} `, header, 's3cret')).toBe(false);
    expect(verifyWebhook(body, undefined, 's3cret')).toBe(false);
    expect(verifyWebhook(body, header.replace('sha256=', 'sha1='), 's3cret')).toBe(false);
    expect(verifyWebhook(body, header.slice(0, -2), 's3cret')).toBe(false);
    expect(verifyWebhook(body, 'sha256=', 's3cret')).toBe(false);
  });

  it('verifyStandardWebhook checks the signature and the timestamp window', () => {
    const nowSeconds = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders({
      jobId: randomUUID(),
      event: 'run.completed',
      rawBody: body,
      secret: 's3cret',
      nowSeconds,
    });
    expect(verifyStandardWebhook(body, headers, 's3cret')).toBe(true);
    expect(verifyStandardWebhook(body, new Headers(headers), 's3cret')).toBe(true);
    expect(verifyStandardWebhook(body, headers, 'other')).toBe(false);
    expect(verifyStandardWebhook(`${body} `, headers, 's3cret')).toBe(false);
    const later = () => (nowSeconds + 301) * 1000;
    expect(verifyStandardWebhook(body, headers, 's3cret', { now: later })).toBe(false);
    expect(verifyStandardWebhook(body, headers, 's3cret', { now: later, toleranceSeconds: 600 })).toBe(true);
    const { 'webhook-signature': _, ...unsigned } = headers;
    expect(verifyStandardWebhook(body, unsigned, 's3cret')).toBe(false);
  });
});

describe('workflow-run CLI', () => {
  it('workflows list --json prints the list', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Listed by CLI');
    const result = await cli(['workflows', 'list', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const parsed = JSON.parse(result.stdout) as { workflows: { id: string; name: string }[] };
    expect(parsed.workflows).toContainEqual(expect.objectContaining({ id: workflowId, name: 'Listed by CLI' }));
  });

  it('workflows show prints the inputs, final steps, price range and licence; --json the description', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Shown by CLI');
    const described = await client.getWorkflow(workflowId);
    expect(described).toMatchObject({ id: workflowId, name: 'Shown by CLI', version: 1 });
    expect(Object.keys(described.inputs.properties)).toEqual(['topic']);
    const result = await cli(['workflows', 'show', workflowId]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('name: Shown by CLI');
    expect(result.stdout).toContain(`price: ${described.price.minCredits} to ${described.price.maxCredits} credits`);
    expect(result.stdout).toMatch(/inputs:\n {2}topic: text\noutputs:\n {2}show \(TextConsole\): text\n/);
    const json = await cli(['workflows', 'show', workflowId, '--json']);
    // The same description (its licence's facts stamped when each answer was made).
    const { inputs, outputs, price } = described;
    expect(JSON.parse(json.stdout)).toMatchObject({ id: workflowId, inputs, outputs, price });
    expect((await cli(['workflows', 'show'])).code).toBe(2);
  });

  it('workflows create reads a YAML file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'workflow-run-cli-'));
    try {
      const file = join(dir, 'flow.yaml');
      await writeFile(
        file,
        [
          'name: From YAML',
          'steps:',
          '  - key: topic',
          '    type: TextEntry',
          '    config: { text: otters, apiInputKey: topic }',
          '  - key: show',
          '    type: TextConsole',
          '    inputs: [topic]',
          '',
        ].join('\n'),
      );
      const result = await cli(['workflows', 'create', '--file', file, '--agent', team.agentId, '--json']);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ agentId: team.agentId, stepsCount: 2 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('run --watch --json exits 0 with the final run', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Watched by CLI');
    const result = await cli(['run', workflowId, '--input', 'topic=cats', '--watch', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as Run;
    expect(run).toMatchObject({ status: 'completed', progress: 100 });
    expect(run.steps).toHaveLength(4);
  });

  it('watch prints plain progress lines when not on a terminal, and exits 3 for a failed run', async () => {
    const workflowId = await createWorkflow(stack, team, failingSteps, 'Fails');
    const started = await client.runWorkflow(workflowId);
    const result = await cli(['watch', started.jobId]);
    expect(result.code, result.stderr).toBe(3);
    expect(result.stdout).toContain(`run ${started.jobId} failed`);
    expect(result.stdout).toMatch(/step ✗ data \(JsonLoader\): failed/);
    expect(result.stdout).not.toContain('\x1b[');
  });

  it('watch on a terminal redraws a progress bar and the step lines in place', async () => {
    const jobId = randomUUID();
    const ids = ['a', 'b'];
    const scripted = scriptedFetch((_request, call) => {
      const done = Math.min(2, call - 1);
      return runJson({
        jobId,
        status: done === 2 ? 'completed' : 'processing',
        progress: done * 50,
        steps: ids.map((node_id, i) => ({
          node_id,
          step_type: 'LlmWorker',
          status: i < done ? 'completed' : i === done ? 'processing' : 'queued',
        })),
      });
    });
    let written = '';
    const stdout = Object.assign(
      new Writable({
        write(chunk, _encoding, callback) {
          written += chunk;
          callback();
        },
      }),
      { isTTY: true, columns: 120 },
    );
    const code = await main(['watch', jobId, '--key', 'k', '--base-url', 'http://127.0.0.1:1/api/v1'], {
      stdout,
      stderr: stdout,
      env: {},
      fetch: scripted.fetch,
    });
    expect(code).toBe(0);
    expect(written).toContain(`Run ${jobId}  [${'░'.repeat(30)}]   0%  processing`);
    expect(written).toContain(`[${'█'.repeat(15)}${'░'.repeat(15)}]  50%  processing`);
    expect(written).toContain('  ▸ b (LlmWorker): processing');
    expect(written).toContain('  ✓ b (LlmWorker): completed');
    // Each redraw (one per change, and one a second for the elapsed time) moves back over the three lines.
    expect(written.split('\x1b[3F').length).toBeGreaterThanOrEqual(3);
    expect(written).toContain(`Run ${jobId} completed.`);
  });

  it('download saves every ready output file', async () => {
    const workflowId = await createWorkflow(stack, team, imageSteps, 'Pictures');
    const started = await client.runWorkflow(workflowId);
    const run = await client.waitForRun(started.jobId, { intervalMs: 100 });
    expect(run.status, JSON.stringify(run)).toBe('completed');
    const ready = outputFiles(run).filter((f) => f.file.availability === 'ready');
    expect(ready.length).toBeGreaterThan(0);
    const dir = await mkdtemp(join(tmpdir(), 'workflow-run-download-'));
    try {
      const result = await cli(['download', started.jobId, '--dir', dir, '--json']);
      expect(result.code, result.stderr).toBe(0);
      const { files } = JSON.parse(result.stdout) as { files: { file: string; bytes: number }[] };
      expect(files).toHaveLength(ready.length);
      for (const saved of files) {
        expect(saved.file.startsWith(dir)).toBe(true);
        // Named for the stored file, read from its file link.
        expect(saved.file).toMatch(/\/[\w.-]+\.png$/);
        expect((await stat(saved.file)).size).toBe(saved.bytes);
        expect([...(await readFile(saved.file)).subarray(1, 4)]).toEqual([0x50, 0x4e, 0x47]); // PNG
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('run --queue sends onConflict: queue (a busy workflow queues it); --queue with --replace is a usage error', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Queued by CLI');
    const first = await cli(['run', workflowId, '--queue', '--json']);
    expect(first.code, first.stderr).toBe(0);
    const second = await cli(['run', workflowId, '--queue', '--json']);
    expect(second.code, second.stderr).toBe(0);
    const answer = JSON.parse(second.stdout) as { jobId: string; queuePosition?: number };
    // Either the first had ended (it started at once) or the second waits behind it: never a 409.
    expect(answer.jobId).toMatch(/^[0-9a-f-]{36}$/);
    const both = await cli(['run', workflowId, '--queue', '--replace']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--queue and --replace cannot be given together');
  });

  it('deferred show prints the deferred run', async () => {
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Deferred by CLI');
    const deferred = await cli(['run', workflowId, '--defer', '--max-multiplier', '0.01', '--json']);
    expect(deferred.code, deferred.stderr).toBe(0);
    const { deferredJobId } = JSON.parse(deferred.stdout) as { deferredJobId: string };
    const shown = await cli(['deferred', 'show', deferredJobId]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`deferredJobId: ${deferredJobId}`);
    expect(shown.stdout).toContain('status: waiting');
  });

  it('run --defer --start-by and --deadline send startBy and deadlineSeconds, as the client sends them', async () => {
    // A key of its own: the file's key has a rate limit the other tests spend.
    const own = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 100_000 });
    const ownClient = createClient({ baseUrl: stack.baseUrl, apiKey: own.key });
    const ownCli = (args: string[]) => runCli({ baseUrl: stack.baseUrl, key: own.key }, args);
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Deferred with a deadline by CLI');
    const timed = await ownClient.runWorkflow(workflowId, { deadlineSeconds: 3_600 });
    expect(timed.status).toBe('queued');
    expect(await ownClient.cancelRun(timed.jobId)).not.toHaveProperty('endReason');
    const startBy = new Date(Date.now() + 3 * 24 * 3600_000).toISOString();
    const deferred = await ownCli([
      'run',
      workflowId,
      '--defer',
      '--max-multiplier',
      '0.01',
      '--start-by',
      startBy,
      '--deadline',
      '600',
      '--json',
    ]);
    expect(deferred.code, deferred.stderr).toBe(0);
    const { deferredJobId } = JSON.parse(deferred.stdout) as { deferredJobId: string };
    const shown = await ownClient.getDeferredRun(deferredJobId);
    expect(shown).toMatchObject({ status: 'waiting', expiresAt: startBy });
    await ownClient.cancelDeferredRun(deferredJobId);
    for (const args of [
      ['run', workflowId, '--start-by', startBy],
      ['run', workflowId, '--deadline', '1.5'],
      ['resume', randomUUID(), '--deadline', 'soon'],
    ]) {
      const result = await ownCli(args);
      expect(result.code, args.join(' ')).toBe(2);
    }
    const tooFar = await ownCli(['run', workflowId, '--defer', '--start-by', '2099-01-01T00:00:00Z', '--json']);
    expect(tooFar.code).toBe(1);
    expect(JSON.parse(tooFar.stderr)).toMatchObject({
      status: 422,
      body: { error: 'startBy must lie in the future and no later than latestStartBy' },
    });
  });

  it('exits 2 on a usage error, printing the usage', async () => {
    for (const args of [
      ['run'],
      ['frobnicate'],
      ['workflows', 'list', '--dir', 'x'],
      ['run', 'id', '--mode', 'fast'],
    ]) {
      const result = await cli(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('Usage: workflow-run');
      expect(result.stdout).toBe('');
    }
    expect((await cli(['workflows', 'list'], { WORKFLOW_RUN_API_KEY: '' })).code).toBe(2);
  });

  it('exits 1 on an API error, printing the error body', async () => {
    const missing = await cli(['watch', randomUUID(), '--json']);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(JSON.parse(missing.stderr)).toEqual({ status: 404, body: { error: 'Run not found' } });
    const unauthorised = await cli(['workflows', 'list'], { WORKFLOW_RUN_API_KEY: 'wra_nope' });
    expect(unauthorised.code).toBe(1);
    expect(unauthorised.stderr).toContain('401 Unauthorized');
  });
});

describe('webhook deliveries through the client and the CLI', () => {
  /** Hands the run's waiting webhook message (sent just after the run reads ended) to the real webhook worker. */
  const deliverWaiting = async (jobId: string, handed: Set<string>) => {
    let waiting: Awaited<ReturnType<typeof queueContents>> = [];
    for (let i = 0; i < 600 && waiting.length === 0; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      waiting = (await queueContents(stack.resources, 'Webhooks')).filter(
        (m) => JSON.parse(m.body).jobId === jobId && m.state !== 'inflight' && !handed.has(m.messageId),
      );
    }
    expect(waiting).toHaveLength(1);
    const worker = makeWebhookWorker(stack.deps, { fetchOptions: { allowLoopback: true, ca: receiverCa } });
    for (const m of waiting) {
      await invokedAs('WebhookDelivery', worker)({ Records: [recordOf(m)] } as never);
      handed.add(m.messageId);
    }
  };

  it('listDeliveries and redeliverWebhook; the CLI lists and redelivers; the receiver gets one webhook-id', async () => {
    // A team of its own, with room in its rate limit: the file's other tests spend the shared key's minute.
    const own = await seedTeam(stack.deps, { credits: 100, key: { rateLimitPerMinute: 100_000 } });
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: own.key });
    const env = { WORKFLOW_RUN_API_KEY: own.key };
    const receiver = await startReceiver();
    try {
      const workflowId = await createWorkflow(stack, own, chainSteps, 'Delivered');
      const started = await client.runWorkflow(workflowId, { callbackUrl: receiver.url });
      await client.waitForRun(started.jobId, { intervalMs: 100 });
      const handed = new Set<string>();
      await deliverWaiting(started.jobId, handed);
      const log = await client.listDeliveries(started.jobId);
      expect(log).toMatchObject({ state: 'delivered', attempts: 1, event: 'run.completed' });
      expect(log.deliveries).toEqual([expect.objectContaining({ attempt: 1, statusCode: 200 })]);

      const queued = await client.redeliverWebhook(started.jobId);
      expect(queued).toMatchObject({
        attempt: 2,
        state: 'pending',
        webhookId: webhookId(started.jobId, 'run.completed'),
      });
      const conflict = await client.redeliverWebhook(started.jobId).catch((error: unknown) => error);
      expect(conflict).toBeInstanceOf(ConflictError);
      expect((conflict as ConflictError).body).toMatchObject({ error: 'Webhook delivery pending' });
      await deliverWaiting(started.jobId, handed);

      const listed = await cli(['deliveries', started.jobId], env);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toContain('state: delivered');
      expect(listed.stdout).toMatch(/ATTEMPT +AT +RESULT/);
      expect(listed.stdout).toMatch(/^2 +\S+ +200 /m);
      // A delivery's next redelivery within the minute is refused (429), and the CLI says so.
      const refused = await cli(['deliveries', started.jobId, '--redeliver', '--json'], env);
      expect(refused.code).toBe(1);
      expect(refused.stdout + refused.stderr).toMatch(/Too many redeliveries/);
      // The CLI redelivers another run's delivery (its first redelivery needs no wait).
      const second = await client.runWorkflow(workflowId, { callbackUrl: receiver.url });
      await client.waitForRun(second.jobId, { intervalMs: 100 });
      await deliverWaiting(second.jobId, handed);
      const again = await cli(['deliveries', second.jobId, '--redeliver', '--json'], env);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ jobId: second.jobId, attempt: 2 });
      await deliverWaiting(second.jobId, handed);
      const asJson = await cli(['deliveries', second.jobId, '--json'], env);
      expect(JSON.parse(asJson.stdout)).toMatchObject({ state: 'delivered', attempts: 2 });
      expect(new Set(receiver.received.map((r) => r.headers['webhook-id']))).toEqual(
        new Set([queued.webhookId, webhookId(second.jobId, 'run.completed')]),
      );
      expect(receiver.received).toHaveLength(4);

      // A run without callbackUrl has no deliveries: NotFoundError, and the CLI exits 1.
      const plain = await client.runWorkflow(await createWorkflow(stack, own, chainSteps, 'Silent'));
      await expect(client.listDeliveries(plain.jobId)).rejects.toBeInstanceOf(NotFoundError);
      expect((await cli(['deliveries', plain.jobId, '--redeliver'], env)).code).toBe(1);
    } finally {
      await receiver.close();
    }
  });
});

describe('run lists through the client and the CLI', () => {
  const pairSteps: WorkflowStep[] = [
    { key: 'in', type: 'TextEntry', config: { text: 'hi' } },
    { key: 'out', type: 'TextConsole', inputs: ['in'] },
  ];

  // Five runs to their end, then about a dozen CLI processes: longer than the default timeout.
  it('listRuns reads a page, runs() every run across pages (filtered pages too), and the deferred lists', {
    timeout: 180_000,
  }, async () => {
    const lister = await seedTeam(stack.deps, { credits: 100 });
    const listing = createClient({ baseUrl: stack.baseUrl, apiKey: lister.key });
    const { workflowId: first } = await listing.createWorkflow({
      name: 'L1',
      steps: pairSteps,
      agentId: lister.agentId,
    });
    const { workflowId: second } = await listing.createWorkflow({
      name: 'L2',
      steps: pairSteps,
      agentId: lister.agentId,
    });
    const jobIds: string[] = [];
    for (const workflowId of [first, second, first, second, first]) {
      const started = await listing.runWorkflow(workflowId);
      expect((await listing.waitForRun(started.jobId, { intervalMs: 50 })).status).toBe('completed');
      jobIds.push(started.jobId);
    }
    const newestFirst = [...jobIds].reverse();

    const page = await listing.listRuns({ limit: 2 });
    expect(page.runs.map((r) => r.jobId)).toEqual(newestFirst.slice(0, 2));
    expect(page.nextCursor).toEqual(expect.any(String));
    const next = await listing.listRuns({ limit: 2, cursor: page.nextCursor ?? '' });
    expect(next.runs.map((r) => r.jobId)).toEqual(newestFirst.slice(2, 4));

    const all: string[] = [];
    for await (const run of listing.runs({ limit: 2 })) all.push(run.jobId);
    expect(all).toEqual(newestFirst);
    // Filtered, a page of one entry may be empty: the iterator goes on to the end.
    const ofSecond: string[] = [];
    for await (const run of listing.runs({ workflowId: second, limit: 1 })) {
      expect(run).toMatchObject({ workflowId: second, status: 'completed', chargedCredits: 0.02 });
      ofSecond.push(run.jobId);
    }
    expect(ofSecond).toEqual([jobIds[3], jobIds[1]]);

    const deferred = await listing.runWorkflow(first, { defer: true, maxMultiplier: 0.01 });
    expect((await listing.listDeferredRuns()).deferredRuns).toEqual([
      await listing.getDeferredRun(deferred.deferredJobId),
    ]);
    const waiting: string[] = [];
    for await (const entry of listing.deferredRuns({ status: 'waiting', limit: 1 })) waiting.push(entry.deferredJobId);
    expect(waiting).toEqual([deferred.deferredJobId]);

    const refused = await listing.listRuns({ cursor: 'altered' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 400 });

    // The CLI: one page (with how to read the next), every page, and its errors.
    const env = { WORKFLOW_RUN_API_KEY: lister.key };
    const onePage = await cli(['runs', 'list', '--limit', '2', '--json'], env);
    expect(onePage.code, onePage.stderr).toBe(0);
    expect((JSON.parse(onePage.stdout) as { runs: { jobId: string }[] }).runs.map((r) => r.jobId)).toEqual(
      newestFirst.slice(0, 2),
    );
    const everything = await cli(['runs', 'list', '--all', '--limit', '2', '--workflow-id', first, '--json'], env);
    expect(everything.code, everything.stderr).toBe(0);
    expect((JSON.parse(everything.stdout) as { jobId: string }[]).map((r) => r.jobId)).toEqual([
      jobIds[4],
      jobIds[2],
      jobIds[0],
    ]);
    const plain = await cli(['runs', 'list', '--limit', '2', '--status', 'completed'], env);
    expect(plain.code, plain.stderr).toBe(0);
    const lines = plain.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^JOB ID\s+STATUS\s+WORKFLOW ID\s+CREATED\s+CREDITS\s+TAGS$/);
    expect(lines[1]).toMatch(new RegExp(`^${newestFirst[0]}\\s+completed\\s+`));
    expect(lines.at(-1)).toMatch(/^More: workflow-run runs list --status completed --limit 2 --cursor \S+$/);
    const cursor = lines.at(-1)?.split(' ').at(-1) ?? '';
    const following = await cli(['runs', 'list', '--limit', '2', '--status', 'completed', '--cursor', cursor], env);
    expect(following.stdout).toContain(newestFirst[2]);
    const deferredList = await cli(['deferred', 'list'], env);
    expect(deferredList.stdout).toMatch(new RegExp(`^${deferred.deferredJobId}\\s+waiting\\s+`, 'm'));

    for (const args of [
      ['runs', 'list', '--limit', '0'],
      ['runs', 'list', '--all', '--cursor', 'x'],
      ['runs', 'list', 'extra'],
      ['runs', 'list', '--redeliver'],
    ]) {
      const usageError = await cli(args, env);
      expect(usageError.code, args.join(' ')).toBe(2);
      expect(usageError.stderr).toContain('Usage: workflow-run');
    }
    const badStatus = await cli(['runs', 'list', '--status', 'claimed', '--json'], env);
    expect(badStatus.code).toBe(1);
    expect(JSON.parse(badStatus.stderr)).toEqual({
      status: 400,
      body: { error: 'Invalid query: status must be one of queued, processing, completed, failed, cancelled, stopped' },
    });
  });
});

describe('waiting for a run in the request (Prefer: wait) through the client and the CLI', () => {
  it('runWorkflow and getRun with `wait` answer the ended run; run --wait and runs show --wait print it', async () => {
    // A key of its own: the file's key has a rate limit the other tests spend.
    const own = await addKey(stack.deps, team.teamId, { rateLimitPerMinute: 100_000 });
    const client = createClient({ baseUrl: stack.baseUrl, apiKey: own.key });
    const cli = (args: string[]) => runCli({ baseUrl: stack.baseUrl, key: own.key }, args);
    const workflowId = await createWorkflow(stack, team, chainSteps, 'Waited in the request');
    const started = await client.runWorkflow(workflowId, { inputs: { topic: 'voles' } }, { wait: 25 });
    expect(started.run, JSON.stringify(started)).toMatchObject({ jobId: started.jobId, status: 'completed' });
    expect(await client.getRun(started.jobId, { wait: 25 })).toEqual(started.run);

    const printed = await cli(['run', workflowId, '--input', 'topic=moles', '--wait', '25']);
    expect(printed.code, printed.stderr).toBe(0);
    const jobId = /^jobId: (\S+)$/m.exec(printed.stdout)?.[1] ?? '';
    expect(printed.stdout).toContain(`Run ${jobId} completed.`);
    const shown = await cli(['runs', 'show', jobId, '--wait', '5', '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ jobId, status: 'completed', progress: 100 });
    const plain = await cli(['runs', 'show', jobId]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toMatch(/^status: completed$/m);

    for (const args of [
      ['run', workflowId, '--wait', '0'],
      ['run', workflowId, '--wait', '26'],
      ['run', workflowId, '--wait', '2.5'],
      ['run', workflowId, '--wait', '5', '--watch'],
      ['runs', 'show', jobId, '--wait', 'x'],
    ]) {
      const usageError = await cli(args);
      expect(usageError.code, args.join(' ')).toBe(2);
      expect(usageError.stderr).toContain('--wait');
    }
  });
});

describe('webhook endpoints through the client and the CLI', () => {
  it('creates, lists, changes, rotates, tests, reads the log of and deletes an endpoint; the CLI too', async () => {
    const owner = await seedTeam(stack.deps, { credits: 10 });
    const hooksClient = createClient({ baseUrl: stack.baseUrl, apiKey: owner.key });
    const created = await hooksClient.createWebhookEndpoint({
      url: 'https://hooks.example.com/client',
      events: ['run.completed', 'run.failed'],
      tags: ['nightly'],
    });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await hooksClient.listWebhookEndpoints()).map((e) => e.endpointId)).toEqual([created.endpointId]);
    const disabled = await hooksClient.updateWebhookEndpoint(created.endpointId, { disabled: true });
    expect(disabled).toMatchObject({ disabled: true, disabledReason: 'requested' });
    const rotated = await hooksClient.rotateWebhookEndpointSecret(created.endpointId);
    expect(rotated.secret).not.toBe(created.secret);
    const queued = await hooksClient.testWebhookEndpoint(created.endpointId);
    expect(queued).toMatchObject({ endpointId: created.endpointId, state: 'pending' });
    const log = [];
    for await (const delivery of hooksClient.webhookEndpointDeliveries(created.endpointId)) log.push(delivery);
    expect(log.map((d) => [d.deliveryId, d.event, d.state])).toEqual([[queued.deliveryId, 'ping', 'pending']]);
    await expect(
      hooksClient.redeliverWebhookEndpointDelivery(created.endpointId, queued.deliveryId),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(await hooksClient.getWebhookEndpoint(created.endpointId)).toMatchObject({ disabled: true });
    await hooksClient.deleteWebhookEndpoint(created.endpointId);
    await expect(hooksClient.getWebhookEndpoint(created.endpointId)).rejects.toBeInstanceOf(NotFoundError);

    const run = (args: string[]) => runCli({ baseUrl: stack.baseUrl, key: owner.key }, args);
    const made = await run([
      'hooks',
      'create',
      '--url',
      'https://hooks.example.com/cli',
      '--event',
      'run.completed',
      '--json',
    ]);
    expect(made.code, made.stderr).toBe(0);
    const { endpointId } = JSON.parse(made.stdout) as { endpointId: string };
    const listed = await run(['hooks', 'list']);
    expect(listed.stdout).toContain(`${endpointId}  enabled  run.completed  https://hooks.example.com/cli`);
    expect((await run(['hooks', 'disable', endpointId])).stdout).toContain('disabledReason: requested');
    expect((await run(['hooks', 'enable', endpointId])).stdout).toContain('disabled: false');
    expect((await run(['hooks', 'deliveries', endpointId])).stdout).toContain('No delivery yet.');
    const missingUrl = await run(['hooks', 'create', '--event', 'run.completed']);
    expect([missingUrl.code, missingUrl.stderr]).toEqual([2, expect.stringContaining('hooks create needs --url')]);
  });
});
