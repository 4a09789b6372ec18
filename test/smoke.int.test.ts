/**
 * The smoke run (packages/client/src/smoke/) against the local API with the real step executor
 * polling the steps queue, and Bedrock's defaults on the Bedrock Runtime stand-in: a default that
 * ran on Bedrock passes and says so; a planted AccessDeniedException, a key lacking a scope and a
 * LEGACY lifecycle each fail the run, naming the cause; the CLI exits 1 on a failure. That every
 * check passes against the deployed bundles is the rehearsal's (local/rehearse/flow.ts).
 */
import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { main } from '../packages/client/src/cli.ts';
import { runSmoke } from '../packages/client/src/smoke/index.ts';
import { stepsQueue } from '../platform/definitions.ts';
import { bedrockDefaultModels } from '../platform/providers.ts';
import { type BedrockStandIn, startBedrockStandIn } from './stand-ins/bedrock.ts';
import { bedrockProcessEnv, closeWithStack, fakeAwsCredentials, stageStepExecutor } from './support/provider-steps.ts';
import { addKey, jobsStackPerFile, type SeededTeam, seedTeam } from './support/stack.ts';

let bedrock: BedrockStandIn;
const settings = (): NodeJS.ProcessEnv => ({
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
  AWS_REGION: fakeAwsCredentials.AWS_REGION,
});
const { stack, closers } = jobsStackPerFile(settings);
let team: SeededTeam;

beforeAll(async () => {
  bedrock = await startBedrockStandIn();
  const { startQueuePoller } = await import('../local/event-source.ts');
  const { handler } = stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl });
  const poller = startQueuePoller({
    endpoint: stack.resources.sqsS3Endpoint,
    queueUrl: stack.resources.queueUrls.Steps,
    definition: stepsQueue,
    handler: handler as never,
    waitSeconds: 1,
  });
  closeWithStack(closers, bedrock, bedrockProcessEnv(bedrock.url), { close: () => poller.stop() });
  team = await seedTeam(stack.deps, { credits: 100 });
});

const smoke = (only: string[], key = team.key) =>
  runSmoke({ baseUrl: stack.baseUrl, apiKey: key, home: { agentId: team.agentId }, only, timeoutSeconds: 60 });

describe('the smoke run', () => {
  it('passes a model check that ran on Bedrock, naming the model and what it cost', async () => {
    const report = await smoke(['model LlmWorker']);
    expect(report.results).toEqual([
      expect.objectContaining({
        name: 'model LlmWorker',
        status: 'pass',
        detail: `bedrock ${bedrockDefaultModels.text}`,
        ranOn: { provider: 'bedrock', model: bedrockDefaultModels.text },
      }),
    ]);
    expect(report.ok).toBe(true);
    expect(report.results[0]?.credits).toBeGreaterThan(0);
  });

  it('fails naming "access not granted" when Bedrock refuses the model', async () => {
    bedrock.failNextWith('AccessDeniedException', 403, {
      message:
        'Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model.',
    });
    const report = await smoke(['model Embedder']);
    expect(report.ok).toBe(false);
    expect(report.results[0]).toMatchObject({
      status: 'fail',
      cause: 'access not granted',
      detail: expect.stringContaining('aws-marketplace:Subscribe'),
    });
  });

  it('fails naming "key lacks a scope" for a key without runs:create', async () => {
    const { key } = await addKey(stack.deps, team.teamId, { scopes: ['runs:read', 'workflows:read'] });
    const report = await smoke(['upload'], key);
    expect(report.results[0]).toMatchObject({ name: 'upload', status: 'fail', cause: 'key lacks a scope' });
  });

  it('fails the lifecycle of a LEGACY Bedrock model, and passes an ACTIVE one', async () => {
    const report = await runSmoke({
      baseUrl: stack.baseUrl,
      apiKey: team.key,
      home: { agentId: team.agentId },
      only: ['none'],
      bedrockModels: ['us.anthropic.claude-3-5-haiku-20241022-v1:0', 'amazon.titan-embed-text-v2:0'],
      getLifecycleStatus: async (id) => (id.startsWith('anthropic.') ? 'LEGACY' : 'ACTIVE'),
    });
    expect(report.results.map((r) => [r.name, r.status, r.cause])).toEqual([
      ['lifecycle us.anthropic.claude-3-5-haiku-20241022-v1:0', 'fail', 'lifecycle'],
      ['lifecycle amazon.titan-embed-text-v2:0', 'pass', undefined],
    ]);
  });

  it('CLI: exits 1 and prints the cause on a failed check, 0 with one line per check and the credits', async () => {
    const run = async (argv: string[]) => {
      let out = '';
      const stdout = new Writable({
        write(chunk, _encoding, done) {
          out += chunk;
          done();
        },
      });
      const code = await main(argv, { stdout, stderr: stdout, env: {} });
      return { code, out };
    };
    const base = ['smoke', '--base-url', stack.baseUrl, '--agent', team.agentId];
    bedrock.failNextWith('ValidationException', 400, { message: 'The provided model identifier is invalid.' });
    const failed = await run([...base, '--key', team.key, '--check', 'model Embedder']);
    expect(failed.code).toBe(1);
    expect(failed.out).toMatch(/FAIL {2}model Embedder .*cause: model not served in region/);
    const passed = await run([...base, '--key', team.key, '--check', 'hops']);
    expect(passed.out).toMatch(/PASS {2}hops +\d+\.\d\d credits/);
    expect(passed.out).toMatch(/smoke: PASSED: 1 passed, 0 skipped, 0 failed/);
    expect(passed.code).toBe(0);
  });
});
