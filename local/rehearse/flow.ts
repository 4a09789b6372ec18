/**
 * The rehearsal's flow, driven only through the bundles (`bundle-stack.ts`): HTTP requests to the
 * API front, the steps and webhooks through the event source mappings, the dispatcher through its
 * rule. The operators' CLI (`local/admin.ts`) seeds the team, key and prices into the table, as an
 * operator would. Each step passes or throws; `runFlow` stops at the first failure (the later steps
 * build on the earlier ones). It reaches every route, mapping and rule, and its last step checks that
 * every function of the assembly was invoked: `npm run rehearse` and `test/rehearse.int.test.ts` both run it.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Webhook } from 'standardwebhooks';
import type { Deps } from '../../functions/deps.ts';
import { formatResult, formatSummary, runSmoke, smokeModelTypes } from '../../packages/client/src/smoke/index.ts';
import type { SmokeModelType } from '../../packages/client/src/smoke/models.ts';
import { catalogueDefaults } from '../../platform/model-defaults.ts';
import { routes } from '../../platform/routes.ts';
import { type Received, startReceiver } from '../../test/support/webhook-receiver.ts';
import { runAdmin } from '../admin.ts';
import { localAwsConfig } from '../emulators.ts';
import type { LocalResources } from '../provision.ts';
import type { BundleStack } from './bundle-stack.ts';
import { type RehearsalProviders, rehearsalProviders } from './providers.ts';
import type { BatchRecord } from './queue-mapping.ts';

export interface FlowStep {
  name: string;
  ok: boolean;
  detail: string;
  ms: number;
}

class FlowFailure extends Error {
  override readonly name = 'FlowFailure';
}

const check = (condition: unknown, message: string): void => {
  if (!condition) throw new FlowFailure(message);
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Response {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  text: string;
}

const request = async (
  baseUrl: string,
  path: string,
  options: { key?: string; method?: string; body?: unknown } = {},
): Promise<Response> => {
  const response = await fetch(`${baseUrl}${path}`, {
    method: options.method ?? 'GET',
    headers: {
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (the docs page): the text is what the caller reads.
  }
  return { status: response.status, headers: response.headers, body, text };
};

const expectStatus = (response: Response, status: number, what: string) =>
  check(response.status === status, `${what}: ${response.status} ${response.text.slice(0, 300)}`);

/** The first `{ url, availability, expiresAt }` file in a run's outputs. */
const findFile = (value: unknown): { url: string; availability: string } | undefined => {
  if (!value || typeof value !== 'object') return undefined;
  if ('availability' in value && 'url' in value) return value as { url: string; availability: string };
  for (const inner of Object.values(value)) {
    const found = findFile(inner);
    if (found) return found;
  }
  return undefined;
};

const ended = ['completed', 'failed', 'cancelled', 'stopped'];

export interface FlowOptions {
  stack: BundleStack;
  resources: LocalResources;
  /** Deps over the local table, for the operators' CLI. */
  adminDeps: Deps;
  onStep?: (step: FlowStep) => void;
  /** The model providers' stand-ins the bundles were pointed at (providers.ts); without, those steps are skipped. */
  providers?: RehearsalProviders;
}

/** A plain-http JSON service on loopback: answers the statuses queued in `replies` (then 200) with `body`. */
const startJsonService = async (replies: number[], body: unknown) => {
  const received: string[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => {
      text += chunk;
    });
    req.on('end', () => {
      received.push(text);
      res.writeHead(replies.shift() ?? 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/document`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

export const runFlow = async (options: FlowOptions): Promise<FlowStep[]> => {
  const { stack, resources, adminDeps } = options;
  const { baseUrl } = stack;
  const steps: FlowStep[] = [];
  const receiver = await startReceiver();
  const sqs = new SQSClient({ ...localAwsConfig, endpoint: resources.sqsS3Endpoint });

  const step = async (name: string, body: () => Promise<string>) => {
    const began = performance.now();
    let result: FlowStep;
    try {
      result = { name, ok: true, detail: await body(), ms: 0 };
    } catch (error) {
      result = { name, ok: false, detail: (error as Error).message, ms: 0 };
    }
    result.ms = Math.round(performance.now() - began);
    steps.push(result);
    options.onStep?.(result);
    if (!result.ok) throw new FlowFailure(name);
  };

  const admin = async (...argv: string[]) => {
    const result = await runAdmin([...argv, '--json'], adminDeps);
    check(result.exitCode === 0, `admin ${argv.join(' ')}: ${result.output}`);
    return JSON.parse(result.output) as Record<string, unknown>;
  };

  const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = await probe();
      if (found !== undefined) return found;
      check(Date.now() < deadline, `${what}: not within ${timeoutMs / 1000} s`);
      await sleep(150);
    }
  };

  let key = '';
  const waitForRun = (jobId: string) =>
    waitFor(`run ${jobId} to end`, async () => {
      const run = await request(baseUrl, `/runs/${jobId}`, { key });
      expectStatus(run, 200, `GET /runs/${jobId}`);
      return ended.includes(String(run.body.status)) ? run : undefined;
    });

  const webhookFor = (jobId: string) =>
    waitFor(`the webhook of ${jobId}`, async () =>
      receiver.received.find((r: Received) => (JSON.parse(r.body) as { jobId?: string }).jobId === jobId),
    );

  const startRun = async (workflowId: string, body: Record<string, unknown>) => {
    const started = await request(baseUrl, `/workflows/${workflowId}/runs`, { key, method: 'POST', body });
    return started;
  };

  try {
    let teamId = '';
    let agentId = '';
    await step('operator: team, project, agent and API key (operators CLI, into the table)', async () => {
      ({ teamId } = (await admin('team', 'create', '--name', 'Rehearsal team', '--credits', '500')) as {
        teamId: string;
      });
      const { projectId } = (await admin('project', 'create', '--team', teamId, '--name', 'Rehearsal')) as {
        projectId: string;
      };
      ({ agentId } = (await admin('agent', 'create', '--project', projectId, '--name', 'Rehearsal agent')) as {
        agentId: string;
      });
      // Above the default 60 a minute: the flow polls runs; the limit itself is not what it rehearses.
      ({ key } = (await admin('key', 'create', '--team', teamId, '--rate-limit', '600')) as { key: string });
      return `team ${teamId}, agent ${agentId}`;
    });

    await step('GET /openapi.json (public)', async () => {
      const doc = await request(baseUrl, '/openapi.json');
      expectStatus(doc, 200, 'GET /openapi.json');
      check(typeof doc.body.paths === 'object', 'the document has no paths');
      return `${Object.keys(doc.body.paths as object).length} paths`;
    });
    await step('GET /docs and one of its assets (public)', async () => {
      const page = await request(baseUrl, '/docs');
      expectStatus(page, 200, 'GET /docs');
      const href = /src="\.\/docs\/assets\/([^"?]+)\?v=([^"]+)"/.exec(page.text);
      check(href, 'the page names no script asset');
      const asset = await request(baseUrl, `/docs/assets/${href?.[1]}?v=${href?.[2]}`);
      expectStatus(asset, 200, `GET /docs/assets/${href?.[1]}`);
      return `page ${page.text.length} B, ${href?.[1]} ${asset.text.length} B`;
    });
    await step('GET /workflows: none yet', async () => {
      const list = await request(baseUrl, '/workflows', { key });
      expectStatus(list, 200, 'GET /workflows');
      check(JSON.stringify(list.body).includes('[]'), `expected no workflows: ${list.text}`);
      return list.text;
    });

    let workflowId = '';
    await step('POST /workflows: TextEntry → PromptBuilder → ImageGen', async () => {
      const created = await request(baseUrl, '/workflows', {
        key,
        method: 'POST',
        body: {
          name: 'Rehearsal',
          agentId,
          steps: [
            { key: 'topic', type: 'TextEntry', config: { text: 'a lighthouse', apiInputKey: 'topic' } },
            { key: 'prompt', type: 'PromptBuilder', config: { template: 'A picture of {{0}}' }, inputs: ['topic'] },
            { key: 'image', type: 'ImageGen', inputs: ['prompt'] },
          ],
        },
      });
      expectStatus(created, 201, 'POST /workflows');
      workflowId = String(created.body.workflowId);
      return `workflow ${workflowId}`;
    });

    await step('GET /workflows: lists it', async () => {
      const list = await request(baseUrl, '/workflows', { key });
      expectStatus(list, 200, 'GET /workflows');
      check(list.text.includes(workflowId), `the list misses ${workflowId}: ${list.text}`);
      return 'listed';
    });

    await step('GET /workflows/{id}: its inputs, outputs, price range and licence', async () => {
      const described = await request(baseUrl, `/workflows/${workflowId}`, { key });
      expectStatus(described, 200, 'GET /workflows/{id}');
      const inputs = described.body.inputs as { properties?: Record<string, unknown> } | undefined;
      check(inputs?.properties?.topic !== undefined, `the inputs miss topic: ${described.text}`);
      const price = described.body.price as { minCredits?: number; maxCredits?: number } | undefined;
      check((price?.minCredits ?? 0) > 0, `no price range: ${described.text}`);
      return `${price?.minCredits} to ${price?.maxCredits} credits`;
    });

    let jobId = '';
    await step('POST /workflows/{id}/runs with a signed callback', async () => {
      const started = await startRun(workflowId, {
        inputs: { topic: 'a lighthouse at dusk' },
        callbackUrl: receiver.url,
        callbackSecret: 'rehearsal-secret',
      });
      expectStatus(started, 200, 'POST /workflows/{id}/runs');
      jobId = String(started.body.jobId);
      return `job ${jobId}`;
    });

    let run: Response | undefined;
    await step('the steps run through the Steps queue mapping, the run completes', async () => {
      run = await waitForRun(jobId);
      check(run.body.status === 'completed', `run ended ${run.body.status}: ${run.text.slice(0, 500)}`);
      check(run.body.progress === 100, `progress ${run.body.progress}`);
      const ourBatches = () =>
        (stack.mappings.get('StepExecutor')?.batches ?? []).filter((b) =>
          b.bodies.some((body) => body.includes(jobId)),
        );
      const count = (batches: readonly BatchRecord[]) =>
        batches.reduce((n, b) => n + b.bodies.filter((body) => body.includes(jobId)).length, 0);
      // The mapping records a batch after its invocation returns and its deletes: the run reads as
      // ended before the last batch is recorded, so wait for the record, then count.
      const ours = await waitFor('the mapping to record the step batches', async () => {
        const batches = ourBatches();
        return count(batches) >= 2 ? batches : undefined;
      });
      const messages = count(ours);
      // topic's message runs prompt too (a chain's next step runs in its invocation); the model step has its own.
      check(messages === 2, `expected 2 step messages, the mapping handed over ${messages}`);
      check(
        ours.every((b) => b.failed.length === 0),
        `a batch failed: ${JSON.stringify(ours.map((b) => b.functionError ?? b.failed))}`,
      );
      return `3 steps from 2 messages in ${ours.length} batch(es), all deleted`;
    });

    await step('GET /runs/{jobId}: the image file, through its file link (302) to the bucket', async () => {
      const file = findFile(run?.body.output);
      check(file, `no file in the outputs: ${JSON.stringify(run?.body.output).slice(0, 300)}`);
      check(file?.availability === 'ready', `file ${file?.availability}`);
      check(new URL(file?.url ?? '').pathname.includes('/file-links/'), `not a file link: ${file?.url}`);
      const link = await fetch(file?.url ?? '', { redirect: 'manual' });
      await link.arrayBuffer();
      check(link.status === 302, `GET the file link: ${link.status}`);
      const location = link.headers.get('location') ?? '';
      const fetched = await fetch(location);
      check(fetched.status === 200, `GET the file: ${fetched.status}`);
      const bytes = new Uint8Array(await fetched.arrayBuffer());
      check(bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47, 'the file is not a PNG');
      return `${bytes.length} B PNG from ${new URL(location).host}, by way of ${new URL(file?.url ?? '').host}`;
    });

    await step(
      'POST /mcp: the MCP SDK client lists the workflow as a tool, calls it, reads its file link',
      async () => {
        const client = new McpClient({ name: 'rehearsal', version: '1.0.0' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${key}` } },
          }),
        );
        try {
          const { tools } = await client.listTools();
          const tool = tools.find((t) => t.name === `run_${workflowId}`);
          check(tool, `tools/list misses run_${workflowId}: ${tools.map((t) => t.name).join(', ')}`);
          type Block = { type: string; text?: string; uri?: string };
          let result = await client.callTool({ name: `run_${workflowId}`, arguments: { topic: 'a harbour' } });
          check(!result.isError, `tools/call refused: ${JSON.stringify(result.content).slice(0, 300)}`);
          const { jobId: mcpJob } = JSON.parse((result.content as Block[])[0]?.text ?? '{}') as { jobId: string };
          // A run not ended within the call's wait is read again with get_run.
          await waitFor('the tool call run to end', async () => {
            const status = (result.structuredContent as { status?: string } | undefined)?.status;
            if (status === 'completed') return true;
            check(status !== 'failed' && status !== 'cancelled', `the run ended ${status}`);
            result = await client.callTool({ name: 'get_run', arguments: { jobId: mcpJob } });
            return undefined;
          });
          const link = (result.content as Block[]).find((b) => b.type === 'resource_link');
          check(link?.uri, `no resource link: ${JSON.stringify(result.content).slice(0, 300)}`);
          const served = await fetch(link?.uri ?? '');
          await served.arrayBuffer();
          check(served.status === 200, `GET the resource link: ${served.status}`);
          return `${tools.length} tools; job ${mcpJob}, its file served by its link`;
        } finally {
          await client.close();
        }
      },
    );

    await step('the webhook: delivered by the Webhooks queue mapping, verified (Standard Webhooks)', async () => {
      const received = await webhookFor(jobId);
      const verifier = new Webhook(new TextEncoder().encode('rehearsal-secret'), { format: 'raw' });
      const payload = verifier.verify(received.body, received.headers as Record<string, string>) as Record<
        string,
        unknown
      >;
      check(payload.event === 'run.completed', `event ${payload.event}`);
      check(payload.jobId === jobId && payload.status === 'completed', `payload ${received.body.slice(0, 200)}`);
      return `run.completed, ${received.body.length} B, signature verified`;
    });

    await step('GET /runs/{jobId}/deliveries: the attempt, logged', async () => {
      const log = await request(baseUrl, `/runs/${jobId}/deliveries`, { key });
      expectStatus(log, 200, 'GET /runs/{jobId}/deliveries');
      check(log.body.state === 'delivered' && log.body.attempts === 1, `deliveries ${log.text.slice(0, 300)}`);
      return `${log.body.event}, ${log.body.state} in ${log.body.attempts} attempt`;
    });

    await step('GET /runs/{jobId}/events: the GetRunEvents bundle streams the ended run, then done', async () => {
      const stream = await request(baseUrl, `/runs/${jobId}/events`, { key });
      expectStatus(stream, 200, 'GET /runs/{jobId}/events');
      const type = stream.headers.get('content-type') ?? '';
      check(type.startsWith('text/event-stream'), `content-type ${type}`);
      const names = [...stream.text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
      check(names.at(-1) === 'done', `events ${names.join(', ')}`);
      check(names.filter((n) => n === 'step').length === 3, `step events ${names.join(', ')}`);
      return names.join(', ');
    });

    await step(
      'POST /runs/{jobId}/tokens: a run token reads the run and its stream with no key, cross-origin',
      async () => {
        const made = await request(baseUrl, `/runs/${jobId}/tokens`, { key, method: 'POST', body: {} });
        expectStatus(made, 201, 'POST /runs/{jobId}/tokens');
        const query = `?access_token=${encodeURIComponent(String(made.body.token))}`;
        const run = await request(baseUrl, `/runs/${jobId}${query}`);
        expectStatus(run, 200, 'GET /runs/{jobId} with the token');
        const stream = await request(baseUrl, `/runs/${jobId}/events${query}`);
        expectStatus(stream, 200, 'GET /runs/{jobId}/events with the token');
        for (const answer of [run, stream])
          check(answer.headers.get('access-control-allow-origin') === '*', 'no Access-Control-Allow-Origin: *');
        for (const path of [`/runs/${jobId}`, `/runs/${jobId}/events`]) {
          const preflight = await fetch(`${baseUrl}${path}${query}`, {
            method: 'OPTIONS',
            headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
          });
          check(preflight.status === 204, `the preflight of ${path}: ${preflight.status}`);
        }
        return 'read, streamed and preflighted with the token';
      },
    );

    await step('POST /runs/{jobId}/deliveries/redeliver: the Webhooks mapping delivers it again', async () => {
      const queued = await request(baseUrl, `/runs/${jobId}/deliveries/redeliver`, { key, method: 'POST' });
      expectStatus(queued, 202, 'POST /runs/{jobId}/deliveries/redeliver');
      const ours = () =>
        receiver.received.filter((r: Received) => (JSON.parse(r.body) as { jobId?: string }).jobId === jobId);
      const [first, again] = await waitFor('the redelivered webhook', async () => {
        const received = ours();
        return received.length >= 2 ? received : undefined;
      });
      const id = (r: Received | undefined) => (r?.headers as Record<string, string> | undefined)?.['webhook-id'];
      check(id(first) === id(again), `webhook-id ${id(first)} then ${id(again)}`);
      const log = await waitFor('the second attempt logged', async () => {
        const log = await request(baseUrl, `/runs/${jobId}/deliveries`, { key });
        return log.body.state === 'delivered' && log.body.attempts === 2 ? log : undefined;
      });
      return `attempt ${queued.body.attempt}, same webhook-id, ${log.body.attempts} attempts logged`;
    });

    // Lambda gives the runner its own CPU; here it shares a machine that may be loaded, where a cold
    // load of Pyodide inside a step can outlast the step executor's 25 s node timeout. A first
    // invocation of its own (under the function's 60 s timeout) loads it, as a warm environment would.
    await step('the PythonRunner bundle: its first invocation loads Pyodide', async () => {
      const runner = stack.functions.get('PythonRunner');
      check(runner, 'no PythonRunner function in the assembly');
      const outcome = await runner?.invoke({ code: 'result = 1', inputs: [], timeoutMs: 10_000 });
      check(outcome?.ok, `the runner failed: ${JSON.stringify(outcome)}`);
      const answer = (outcome?.ok ? outcome.result : undefined) as { ok?: boolean } | undefined;
      check(answer?.ok, `the run failed: ${JSON.stringify(answer)}`);
      return 'loaded, ran';
    });

    await step(
      'a PythonSandbox step: the step executor invokes the PythonRunner bundle (Pyodide beside it)',
      async () => {
        const created = await request(baseUrl, '/workflows', {
          key,
          method: 'POST',
          body: {
            name: 'Rehearsal Python',
            agentId,
            steps: [
              { key: 'word', type: 'TextEntry', config: { text: 'lighthouse' } },
              {
                key: 'python',
                type: 'PythonSandbox',
                config: { code: 'import json\nresult = {"word": inputs[0], "letters": len(inputs[0])}' },
                inputs: [{ from: 'word', targetHandle: 'values' }],
              },
            ],
          },
        });
        expectStatus(created, 201, 'POST /workflows (Python)');
        const started = await startRun(String(created.body.workflowId), {});
        expectStatus(started, 200, 'POST /workflows/{id}/runs (Python)');
        // The runner's first invocation loads Pyodide (seconds of cpu): a longer wait than a run's.
        const ran = await waitFor(
          'the Python run to end',
          async () => {
            const run = await request(baseUrl, `/runs/${String(started.body.jobId)}`, { key });
            return ended.includes(String(run.body.status)) ? run : undefined;
          },
          90_000,
        );
        check(ran.body.status === 'completed', `run ended ${ran.body.status}: ${ran.text.slice(0, 500)}`);
        const output = (ran.body.output as { node_id: string; result: unknown }[]).find((o) => o.node_id === 'python');
        const expected = JSON.stringify({ word: 'lighthouse', letters: 10 });
        check(JSON.stringify(output?.result) === expected, `result ${JSON.stringify(output?.result)}`);
        const invoked = stack.functions.get('PythonRunner');
        check(invoked, 'no PythonRunner function in the assembly');
        return `result ${expected} from the PythonRunner bundle`;
      },
    );

    const { providers } = options;
    if (providers) {
      await step(
        'a Replicate model step: submitted, announced by its signed webhook (the ProviderWebhook bundle), completed',
        async () => {
          const created = await request(baseUrl, '/workflows', {
            key,
            method: 'POST',
            body: {
              name: 'Rehearsal Replicate',
              agentId,
              steps: [
                { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
                {
                  key: 'image',
                  type: 'ImageGen',
                  inputs: ['prompt'],
                  config: { provider: 'replicate', model: 'black-forest-labs/flux-schnell' },
                },
              ],
            },
          });
          expectStatus(created, 201, 'POST /workflows (Replicate)');
          const started = await startRun(String(created.body.workflowId), {});
          expectStatus(started, 200, 'POST /workflows/{id}/runs (Replicate)');
          const jobId = String(started.body.jobId);
          const prediction = await waitFor('the step to submit its prediction', async () =>
            [...providers.replicate.jobs.values()].find((j) => String(j.prediction.webhook ?? '').includes(jobId)),
          );
          const sent = await providers.replicate.complete(prediction.prediction.id, [providers.outputUrl]);
          check(sent?.status === 202, `the webhook was answered ${sent?.status}`);
          const done = await waitForRun(jobId);
          check(done.body.status === 'completed', `run ended ${done.body.status}: ${done.text.slice(0, 500)}`);
          const image = (done.body.output as { node_id: string; result: unknown; generated_by?: unknown }[]).find(
            (o) => o.node_id === 'image',
          );
          check(findFile(image?.result)?.availability === 'ready', `no stored file: ${JSON.stringify(image)}`);
          check(!done.text.includes(providers.outputUrl), "the provider's URL reached the caller");
          return `prediction ${prediction.prediction.id}: webhook 202, run completed, file copied into the library`;
        },
      );

      // A deadline's timer is a message of the steps queue, of its own kind, through the same mapping:
      // here it comes while a Replicate job is in flight (its step's delivery ended at the submit).
      await step(
        'deadlineSeconds: a run with its Replicate job in flight at its deadline ends cancelled (endReason deadline), the job cancelled',
        async () => {
          const created = await request(baseUrl, '/workflows', {
            key,
            method: 'POST',
            body: {
              name: 'Rehearsal deadline',
              agentId,
              steps: [
                { key: 'prompt', type: 'TextEntry', config: { text: 'a lighthouse at dusk' } },
                {
                  key: 'image',
                  type: 'ImageGen',
                  inputs: ['prompt'],
                  config: { provider: 'replicate', model: 'black-forest-labs/flux-schnell' },
                },
              ],
            },
          });
          expectStatus(created, 201, 'POST /workflows (deadline)');
          const started = await startRun(String(created.body.workflowId), {
            deadlineSeconds: 2,
            callbackUrl: receiver.url,
          });
          expectStatus(started, 200, 'POST /workflows/{id}/runs (deadline)');
          const jobId = String(started.body.jobId);
          const prediction = await waitFor('the step to submit its prediction', async () =>
            [...providers.replicate.jobs.values()].find((j) => String(j.prediction.webhook ?? '').includes(jobId)),
          );
          const done = await waitForRun(jobId);
          check(
            done.body.status === 'cancelled' && done.body.endReason === 'deadline',
            `run ended ${done.body.status} (${done.body.endReason}): ${done.text.slice(0, 300)}`,
          );
          const hook = JSON.parse((await webhookFor(jobId)).body) as { event: string; endReason?: string };
          check(hook.event === 'run.cancelled' && hook.endReason === 'deadline', `webhook ${JSON.stringify(hook)}`);
          await waitFor('the job to be cancelled at the provider', async () =>
            providers.replicate.cancels.includes(prediction.prediction.id) ? true : undefined,
          );
          return `job ${jobId}: cancelled at its deadline, prediction ${prediction.prediction.id} cancelled, webhook run.cancelled`;
        },
      );

      // Lambda's loop guard stops a function fed by its own queue after 16 hops along one trace; the
      // step executor runs with it set to Allow and bounds its own loops (docs/operations.md). This
      // chain goes past 16 hops, a provider job's polls among them: its webhook is lost, so only
      // polling (the real 5 s, then 10 s backoff) finds the job's end, and the chain goes on from there.
      await step(
        'a chain of more than 16 queued hops with provider polls (8 text steps, a Replicate job found by polling, 9 more) completes, charged once per step',
        async () => {
          const text = { maxTokens: 1 }; // the work each text step does is then the work it was estimated for
          const chain = [
            { key: 's0', type: 'TextEntry', config: { text: 'one word' } },
            ...Array.from({ length: 8 }, (_, i) => ({
              key: `s${i + 1}`,
              type: 'LlmWorker',
              config: text,
              inputs: [`s${i}`],
            })),
            {
              key: 'image',
              type: 'ImageGen',
              inputs: ['s8'],
              config: { provider: 'replicate', model: 'black-forest-labs/flux-schnell' },
            },
            {
              key: 's9',
              type: 'VisionInterrogator',
              config: text,
              inputs: [{ from: 'image', targetHandle: 'image' }],
            },
            ...Array.from({ length: 8 }, (_, i) => ({
              key: `s${i + 10}`,
              type: 'LlmWorker',
              config: text,
              inputs: [`s${i + 9}`],
            })),
          ];
          const last = chain.at(-1)?.key;
          const created = await request(baseUrl, '/workflows', {
            key,
            method: 'POST',
            body: { name: 'Rehearsal chain with polls', agentId, steps: chain },
          });
          expectStatus(created, 201, 'POST /workflows (chain)');
          const credits = async () => {
            const shown = (await admin('credits', 'show', '--team', teamId)) as { balance: number; held: number };
            return { balance: Math.round(shown.balance * 100), held: Math.round(shown.held * 100) };
          };
          const before = await credits();
          const started = await startRun(String(created.body.workflowId), {});
          expectStatus(started, 200, 'POST /workflows/{id}/runs (chain)');
          const jobId = String(started.body.jobId);
          const prediction = await waitFor('the job step to submit its prediction', async () =>
            [...providers.replicate.jobs.values()].find((j) => String(j.prediction.webhook ?? '').includes(jobId)),
          );
          // Its second read (the second poll) finds it succeeded; no webhook ever says so.
          const pollsToEnd = 2;
          providers.replicate.endByPolling(prediction.prediction.id, pollsToEnd, [providers.outputUrl]);
          const done = await waitFor(
            'the chain to end',
            async () => {
              const run = await request(baseUrl, `/runs/${jobId}`, { key });
              return ended.includes(String(run.body.status)) ? run : undefined;
            },
            120_000,
          );
          check(done.body.status === 'completed', `run ended ${done.body.status}: ${done.text.slice(0, 500)}`);

          // The hops: every step message of this run the Steps mapping handed to the step executor,
          // counted once the last step's is recorded (the mapping records a batch after its deletes).
          const mapping = stack.mappings.get('StepExecutor');
          const ours = () =>
            (mapping?.batches ?? []).flatMap((b) =>
              b.bodies.flatMap((body) => {
                if (!body.includes(jobId)) return [];
                const message = JSON.parse(body) as { jobId?: string; nodeId?: string; check?: string };
                return message.jobId === jobId ? [message] : [];
              }),
            );
          const hops = await waitFor('the mapping to record the last step', async () => {
            const messages = ours();
            return messages.some((m) => m.nodeId === last) ? messages : undefined;
          });
          const polls = hops.filter((m) => m.check === 'poll');
          const looks = hops.filter((m) => m.check === 'look');
          check(hops.length > 16, `only ${hops.length} queued hops`);
          check(polls.length === pollsToEnd, `${polls.length} polls: ${JSON.stringify(polls)}`);
          check(looks.length === 0, `${looks.length} webhook looks, but the webhook was lost`);
          // One chain, in order, each hop sent by the one before: s0 (it runs nothing else, s1 is a
          // model step), each model step once, the job's polls between its submit and s9.
          const hop = (m: { nodeId?: string; check?: string }) => (m.check ? `${m.nodeId}:${m.check}` : m.nodeId);
          const expected = chain.flatMap((s) => (s.key === 'image' ? ['image', 'image:poll', 'image:poll'] : [s.key]));
          check(
            JSON.stringify(hops.map(hop)) === JSON.stringify(expected),
            `the hops were ${hops.map(hop).join(' → ')}`,
          );
          const batches = (mapping?.batches ?? []).filter((b) => b.bodies.some((body) => body.includes(jobId)));
          check(batches.length === hops.length, `${hops.length} hops in ${batches.length} batches: some ran together`);
          check(
            batches.every((b) => b.failed.length === 0),
            `a batch of the chain failed: ${JSON.stringify(batches.map((b) => b.functionError ?? b.failed))}`,
          );
          check(prediction.reads === pollsToEnd, `the prediction was read ${prediction.reads} times`);
          check(
            !providers.replicate.webhooks.some((w) => w.url.includes(jobId)),
            'the stand-in sent a webhook for the job',
          );
          const outputs = done.body.output as { node_id: string }[];
          check(outputs.length === 1 && outputs[0]?.node_id === last, `outputs ${done.text.slice(0, 300)}`);

          // The charge: each step once at the work it did, the hold released. The text steps' work is
          // their estimate; the job step's is the stand-in's 16 × 16 image, far below the estimate's
          // size, so the run is charged less than it held, and more than nothing.
          const listed = await request(baseUrl, '/runs?limit=100', { key });
          expectStatus(listed, 200, 'GET /runs');
          const summary = (
            listed.body.runs as { jobId: string; estimatedCredits: number; chargedCredits: number }[]
          ).find((r) => r.jobId === jobId);
          check(summary, `GET /runs misses ${jobId}`);
          const charged = Math.round((summary?.chargedCredits ?? Number.NaN) * 100);
          const estimated = Math.round(Number(started.body.estimatedCredits) * 100);
          check(
            charged > 0 && charged < estimated,
            `charged ${charged / 100} credits, estimated ${estimated / 100}: not the work done`,
          );
          const after = await credits();
          check(
            before.balance - after.balance === charged && after.held === before.held,
            `balance ${before.balance / 100} → ${after.balance / 100}, held ${before.held / 100} → ${after.held / 100}, charged ${charged / 100}`,
          );
          return (
            `${hops.length} queued hops, one at a time, ${polls.length} of them polls (no webhook): ` +
            `${hops.map(hop).join(' → ')}; ` +
            `${chain.length} steps completed, charged ${charged / 100} credits for the work done (estimate ${estimated / 100}), taken from the balance once`
          );
        },
      );
    }

    await step('Steps mapping: a redelivered step is a no-op, a malformed message alone goes back', async () => {
      const duplicate = run?.body.steps as { node_id?: string }[] | undefined;
      check(duplicate, 'the run has no steps');
      const sent = await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: resources.queueUrls.Steps,
          Entries: [
            { Id: 'duplicate', MessageBody: JSON.stringify({ jobId, workflowId, nodeId: 'topic' }) },
            { Id: 'malformed', MessageBody: 'not a step message' },
          ],
        }),
      );
      const ids = Object.fromEntries((sent.Successful ?? []).map((s) => [s.Id, s.MessageId ?? '']));
      const mapping = stack.mappings.get('StepExecutor');
      const batchOf = (id: string | undefined) =>
        waitFor(`a batch with ${id}`, async () => mapping?.batches.find((b) => b.messageIds.includes(id ?? '')));
      const bad = await batchOf(ids.malformed);
      const good = await batchOf(ids.duplicate);
      check(bad.failed.includes(ids.malformed ?? ''), 'the malformed message was deleted');
      check(good.deleted.includes(ids.duplicate ?? ''), 'the redelivered step went back');
      const again = await request(baseUrl, `/runs/${jobId}`, { key });
      check(again.body.status === 'completed', 'the run changed');
      check(JSON.stringify(again.body.steps) === JSON.stringify(run?.body.steps), "the run's steps changed");
      return bad === good
        ? `one batch of ${bad.messageIds.length}: batchItemFailures named only the malformed one`
        : 'separate batches: the malformed one failed alone, the redelivered step was deleted';
    });

    await step('POST /agents/{id}/runs (the agent runs its active workflow)', async () => {
      await admin('agent', 'activate', '--agent', agentId, '--workflow', workflowId);
      const started = await request(baseUrl, `/agents/${agentId}/runs`, {
        key,
        method: 'POST',
        body: { inputs: { topic: 'a harbour' } },
      });
      expectStatus(started, 200, 'POST /agents/{id}/runs');
      const agentRun = await waitForRun(String(started.body.jobId));
      check(agentRun.body.status === 'completed', `agent run ${agentRun.body.status}`);
      return `job ${started.body.jobId} completed`;
    });

    await step('PUT /workflows/{id} makes version 2; a run pinned to version 1 runs version 1', async () => {
      const textStep = (text: string) => [{ key: 'word', type: 'TextEntry', config: { text } }];
      const created = await request(baseUrl, '/workflows', {
        key,
        method: 'POST',
        body: { name: 'Rehearsal versions', agentId, steps: textStep('first') },
      });
      expectStatus(created, 201, 'POST /workflows (versions)');
      const versioned = String(created.body.workflowId);
      const updated = await request(baseUrl, `/workflows/${versioned}`, {
        key,
        method: 'PUT',
        body: { name: 'Rehearsal versions', agentId, steps: textStep('second') },
      });
      expectStatus(updated, 200, 'PUT /workflows/{id}');
      check(updated.body.version === 2, `made version ${updated.body.version}`);
      const started = await startRun(versioned, { version: 1 });
      expectStatus(started, 200, 'POST /workflows/{id}/runs (version 1)');
      const pinned = await waitForRun(String(started.body.jobId));
      check(pinned.body.status === 'completed', `pinned run ${pinned.body.status}`);
      check(pinned.body.workflowVersion === 1, `the run says version ${pinned.body.workflowVersion}`);
      const text = JSON.stringify(pinned.body.output);
      check(text.includes('first') && !text.includes('second'), `version 1's output expected: ${text.slice(0, 300)}`);
      return `version 2 made; job ${started.body.jobId} ran version 1`;
    });

    await step('lifecycle events: the stream mapping opens them, the Webhooks mapping delivers', async () => {
      const started = await startRun(workflowId, {
        inputs: { topic: 'a harbour at dawn' },
        callbackUrl: receiver.url,
        webhookEvents: ['run.started', 'step.completed', 'run.completed'],
      });
      expectStatus(started, 200, 'POST /workflows/{id}/runs');
      const eventsJob = String(started.body.jobId);
      const events = await waitFor('run.started, a step event per step and run.completed', async () => {
        const got = receiver.received
          .filter((r: Received) => (JSON.parse(r.body) as { jobId?: string }).jobId === eventsJob)
          .map((r: Received) => (r.headers as Record<string, string>)['x-service-event']);
        return got.length >= 5 ? got : undefined;
      });
      const counts: Record<string, number> = {};
      for (const e of events) counts[e ?? ''] = (counts[e ?? ''] ?? 0) + 1;
      check(
        counts['run.started'] === 1 && counts['step.completed'] === 3 && counts['run.completed'] === 1,
        `events ${JSON.stringify(counts)}`,
      );
      return `job ${eventsJob}: ${JSON.stringify(counts)}`;
    });

    await step('POST /runs/{jobId}/cancel: cancelled or stopped, its webhook sent', async () => {
      const started = await startRun(workflowId, { callbackUrl: receiver.url });
      expectStatus(started, 200, 'POST /workflows/{id}/runs');
      const cancelled = await request(baseUrl, `/runs/${started.body.jobId}/cancel`, { key, method: 'POST' });
      if (cancelled.status === 409) return 'the run had already completed (409): nothing to cancel';
      expectStatus(cancelled, 200, 'POST /runs/{jobId}/cancel');
      check(['cancelled', 'stopped'].includes(String(cancelled.body.status)), `status ${cancelled.body.status}`);
      const hook = await webhookFor(String(started.body.jobId));
      return `${cancelled.body.status}, webhook ${(JSON.parse(hook.body) as { event: string }).event}`;
    });

    await step('POST /runs/{jobId}/resume: a run failed at its second step resumes there and completes', async () => {
      // A JSON service that answers 500 first (its call step fails the run), then the document.
      const source = await startJsonService([500], { word: 'lighthouse' });
      try {
        const created = await request(baseUrl, '/workflows', {
          key,
          method: 'POST',
          body: {
            name: 'Rehearsal resume',
            agentId,
            steps: [
              { key: 'doc', type: 'JsonLoader', config: { data: { word: 'lighthouse' } } },
              { key: 'call', type: 'CustomApiCall', config: { url: source.url, method: 'POST' }, inputs: ['doc'] },
              { key: 'pick', type: 'JsonExtractor', config: { path: '$.word' }, inputs: ['call'] },
            ],
          },
        });
        expectStatus(created, 201, 'POST /workflows (resume)');
        const started = await startRun(String(created.body.workflowId), {});
        expectStatus(started, 200, 'POST /workflows/{id}/runs (resume)');
        const failed = await waitForRun(String(started.body.jobId));
        check(
          failed.body.status === 'failed',
          `the first run ended ${failed.body.status}: ${failed.text.slice(0, 300)}`,
        );
        const resumed = await request(baseUrl, `/runs/${started.body.jobId}/resume`, { key, method: 'POST', body: {} });
        expectStatus(resumed, 200, 'POST /runs/{jobId}/resume');
        const again = await waitForRun(String(resumed.body.jobId));
        check(
          again.body.status === 'completed',
          `the resumed run ended ${again.body.status}: ${again.text.slice(0, 300)}`,
        );
        check(again.body.resumedFrom === started.body.jobId, `resumedFrom ${again.body.resumedFrom}`);
        const output = (again.body.output as { node_id: string; result: unknown }[]).find((o) => o.node_id === 'pick');
        check(JSON.stringify(output?.result) === '"lighthouse"', `output ${JSON.stringify(output?.result)}`);
        check(source.received.length === 2, `the service was called ${source.received.length} times, not 2`);
        const carried = JSON.stringify(resumed.body.carriedSteps);
        check(carried === '["doc"]', `carried over ${carried}, not ["doc"]`);
        return `job ${resumed.body.jobId} completed from ${started.body.jobId}, carrying ${carried}`;
      } finally {
        await source.close();
      }
    });

    let deferredJobId = '';
    await step('a deferred run waits, then a dispatcher tick (the rule) dispatches it', async () => {
      await admin('price', 'set', '--multiplier', '1');
      const deferred = await startRun(workflowId, { defer: true, maxMultiplier: 0.6 });
      expectStatus(deferred, 202, 'POST /workflows/{id}/runs (defer)');
      const id = String(deferred.body.deferredJobId);
      deferredJobId = id;
      const ticked = async () => {
        for (const outcome of await stack.tick()) {
          check(outcome.ok, `the tick failed: ${outcome.ok ? '' : outcome.error.errorMessage}`);
        }
      };
      await ticked();
      const waiting = await request(baseUrl, `/deferred-runs/${id}`, { key });
      expectStatus(waiting, 200, 'GET /deferred-runs/{id}');
      check(waiting.body.status === 'waiting', `at multiplier 1 it is ${waiting.body.status}`);
      await admin('price', 'set', '--multiplier', '0.5');
      await ticked();
      const dispatched = await request(baseUrl, `/deferred-runs/${id}`, { key });
      check(dispatched.body.status === 'dispatched', `at multiplier 0.5 it is ${dispatched.body.status}`);
      const done = await waitForRun(String(dispatched.body.jobId));
      check(done.body.status === 'completed', `the dispatched run ${done.body.status}`);
      return `deferred ${id} → job ${dispatched.body.jobId}, completed`;
    });

    await step('DELETE /deferred-runs/{id}: a waiting deferred run is cancelled', async () => {
      await admin('price', 'set', '--multiplier', '1');
      const deferred = await startRun(workflowId, { defer: true, maxMultiplier: 0.6 });
      expectStatus(deferred, 202, 'POST /workflows/{id}/runs (defer)');
      const cancelled = await request(baseUrl, `/deferred-runs/${deferred.body.deferredJobId}`, {
        key,
        method: 'DELETE',
      });
      expectStatus(cancelled, 200, 'DELETE /deferred-runs/{id}');
      check(cancelled.body.status === 'cancelled', `status ${cancelled.body.status}`);
      return 'cancelled';
    });

    await step('GET /runs and GET /deferred-runs: the runs and deferred runs, listed', async () => {
      const runs = await request(baseUrl, '/runs?limit=100', { key });
      expectStatus(runs, 200, 'GET /runs');
      const jobIds = (runs.body.runs as { jobId: string }[]).map((r) => r.jobId);
      check(jobIds.includes(jobId), `GET /runs misses ${jobId}`);
      const deferredRuns = await request(baseUrl, '/deferred-runs?limit=100', { key });
      expectStatus(deferredRuns, 200, 'GET /deferred-runs');
      const deferredIds = (deferredRuns.body.deferredRuns as { deferredJobId: string }[]).map((r) => r.deferredJobId);
      check(deferredIds.includes(deferredJobId), `GET /deferred-runs misses ${deferredJobId}`);
      return `${jobIds.length} runs, ${deferredIds.length} deferred runs`;
    });

    // The smoke run an operator runs after `cdk deploy`, in-process, against the bundles: each model
    // check runs its type's catalogue default, on that provider's stand-in when the rehearsal's stage
    // turns the provider on (providers.ts), else on the sandbox, which the smoke reports as skipped.
    await step(
      'npm run smoke: the smoke run passes (each default whose provider the stage turns on ran on it, the rest skipped on the sandbox)',
      async () => {
        const report = await runSmoke({
          baseUrl,
          apiKey: key,
          home: { agentId },
          webhook: { url: receiver.url, secret: 'smoke-secret' },
          streamBaseUrl: baseUrl,
        });
        const lines = report.results.map(formatResult);
        const all = `${formatSummary(report)}\n${lines.join('\n')}`;
        check(report.ok, all);
        const result = (name: string) => report.results.find((r) => r.name === name);
        for (const name of ['upload', 'file link', 'events', 'python', 'hops', 'webhook'])
          check(result(name)?.status === 'pass', `the smoke's ${name} check did not pass:\n${all}`);
        const turnedOn = new Set<string>(options.providers ? rehearsalProviders : []);
        const ran: SmokeModelType[] = [];
        for (const type of smokeModelTypes) {
          const { provider, model } = catalogueDefaults[type];
          const seen = result(`model ${type}`);
          if (turnedOn.has(provider)) {
            check(
              seen?.status === 'pass' && seen.ranOn?.provider === provider && seen.ranOn.model === model,
              `model ${type} did not run on its default ${provider} ${model}:\n${all}`,
            );
            ran.push(type);
          } else {
            check(
              seen?.status === 'skip' && seen.detail.includes('ran on the offline sandbox'),
              `model ${type} (${provider}, not turned on) was not skipped on the sandbox:\n${all}`,
            );
          }
        }
        const onEach = [...turnedOn].flatMap((provider) => {
          const count = ran.filter((t) => catalogueDefaults[t].provider === provider).length;
          return count ? [`${provider} ${count}`] : [];
        });
        return `${formatSummary(report)}; model checks on the stand-ins: ${onEach.join(', ') || 'none'}\n${lines.join('\n')}`;
      },
    );

    // A route the steps above did not call (a new one, say) still answers through its bundle, so
    // the check below holds for every function without the flow naming each route.
    await step(
      'every route answers through its own bundle (a request of its own for any not called above)',
      async () => {
        const called: string[] = [];
        for (const route of routes) {
          if ((stack.functions.get(route.id)?.invocations.length ?? 0) > 0) continue;
          const path = route.path.replace(/\{(\w+)\}/g, () => randomUUID());
          const answer = await request(baseUrl, path, {
            ...(route.scope ? { key } : {}),
            method: route.method,
            ...(route.method === 'POST' ? { body: {} } : {}),
          });
          check(answer.status < 500, `${route.method} ${route.path}: ${answer.status} ${answer.text.slice(0, 200)}`);
          called.push(`${route.id} ${answer.status}`);
        }
        return called.length === 0 ? 'each was called above' : called.join(', ');
      },
    );

    await step('every function was invoked, none failed unexpectedly', async () => {
      const idle = [...stack.functions].filter(([, fn]) => fn.invocations.length === 0).map(([id]) => id);
      check(idle.length === 0, `never invoked: ${idle.join(', ')}`);
      const failed = [...stack.functions].flatMap(([id, fn]) =>
        fn.invocations
          .filter((i) => !i.outcome.ok)
          // The malformed step message's batch fails as a whole when it is alone in its batch.
          .filter(
            (i) => !(id === 'StepExecutor' && !i.outcome.ok && i.outcome.error.errorType === 'FullBatchFailureError'),
          )
          .map((i) => `${id}: ${i.outcome.ok ? '' : i.outcome.error.errorMessage}`),
      );
      check(failed.length === 0, failed.join('; '));
      const count = [...stack.functions.values()].reduce((n, fn) => n + fn.invocations.length, 0);
      return `${stack.functions.size} functions, ${count} invocations`;
    });
  } catch (error) {
    if (!(error instanceof FlowFailure)) {
      steps.push({ name: 'the flow', ok: false, detail: (error as Error).stack ?? String(error), ms: 0 });
    }
  } finally {
    sqs.destroy();
    await receiver.close();
  }
  return steps;
};
