/**
 * A provider's Content Credentials survive the service, over the real path: an ImageGen step on
 * Amazon Nova Canvas (the Bedrock stand-in, test/stand-ins/bedrock.ts) answers with a PNG or a JPEG
 * signed by a real C2PA library (test/support/c2pa.ts); the run's file is the same bytes, downloaded
 * through its file link, its credential still validating in the C2PA reference SDK, its file object
 * saying `aiMark: provider_c2pa`, and its stored object marked AI-generated in its metadata. An
 * unsigned answer is marked by the service, as before.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { readMediaMark } from '../functions/nodes/media/marks.ts';
import { encodePng, makeImage } from '../functions/nodes/media/png.ts';
import { type BedrockStandIn, startBedrockStandIn } from './stand-ins/bedrock.ts';
import {
  greyJpeg,
  makeTestCredentials,
  type SignableFormat,
  signAsset,
  type TestCredentials,
  validateWithReferenceSdk,
} from './support/c2pa.ts';
import { bedrockProcessEnv, closeWithStack, fakeAwsCredentials, stageStepExecutor } from './support/provider-steps.ts';
import { drainSteps, runParts } from './support/runs.ts';
import { call, createWorkflow, jobsStackPerFile, seedTeam, startRunOk } from './support/stack.ts';

let bedrock: BedrockStandIn;
let credentials: TestCredentials;

const settings = (): NodeJS.ProcessEnv => ({
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
  AWS_REGION: fakeAwsCredentials.AWS_REGION,
});
const { stack, closers } = jobsStackPerFile(settings);

beforeAll(async () => {
  bedrock = await startBedrockStandIn();
  credentials = await makeTestCredentials();
  closeWithStack(closers, bedrock, bedrockProcessEnv(bedrock.url));
});

const model = 'amazon.nova-canvas-v1:0';

interface RunFileView {
  availability: string;
  url: string;
  contentType: string;
  bytes: number;
  aiMark: string | null;
}

/** Runs prompt → ImageGen on Nova Canvas, whose answer is `image`; the run, its file and the step's stored file. */
const runImageGen = async (image: Uint8Array) => {
  const team = await seedTeam(stack.deps, { credits: 100 });
  const workflowId = await createWorkflow(stack, team, [
    { key: 'prompt', type: 'TextEntry', config: { text: 'a brass lantern' } },
    { key: 'image', type: 'ImageGen', inputs: ['prompt'], config: { provider: 'bedrock', model } },
  ]);
  bedrock.imagesNext([image]);
  const jobId = await startRunOk(stack, team.key, workflowId);
  const handler = stageStepExecutor(stack.deps, settings(), { baseUrl: stack.baseUrl }).handler;
  await drainSteps(stack.deps, handler);
  const run = (await call(stack.baseUrl, `/runs/${jobId}`, { key: team.key })).body as unknown as {
    status: string;
    output: { node_id: string; result: { images?: RunFileView[] } | RunFileView[] | RunFileView }[];
  };
  expect(run.status, JSON.stringify(run)).toBe('completed');
  const result = run.output.find((o) => o.node_id === 'image')?.result;
  const file = JSON.stringify(result).match(/\{"availability":[^}]*\}/)?.[0];
  const view = JSON.parse(file ?? '{}') as RunFileView;
  const { steps } = await runParts(stack.deps, jobId);
  const stored = JSON.stringify(steps.get('image')?.outputs).match(/"key":"([^"]+)"/)?.[1] ?? '';
  const head = await stack.deps.s3.send(new HeadObjectCommand({ Bucket: stack.deps.bucket, Key: stored }));
  const response = await fetch(view.url);
  expect(response.status).toBe(200);
  return { view, bytes: new Uint8Array(await response.arrayBuffer()), metadata: head.Metadata };
};

describe('an image model that signs its images (C2PA)', { timeout: 60_000 }, () => {
  it.each([
    ['image/png', () => encodePng(makeImage(16, 16, (x, y) => [x * 16, y * 16, 128, 255]))],
    ['image/jpeg', greyJpeg],
  ] as const)('its signed %s is stored byte for byte and its credential still validates', async (format, make) => {
    const signed = await signAsset(make(), format as SignableFormat, credentials);
    const before = await validateWithReferenceSdk(signed, format, credentials);
    expect(before).toMatchObject({ state: 'Trusted', failures: [] });

    const { view, bytes, metadata } = await runImageGen(signed);
    expect(view).toMatchObject({ availability: 'ready', contentType: format, bytes: signed.length });
    expect(view.aiMark).toBe('provider_c2pa');
    expect(Buffer.from(bytes).equals(Buffer.from(signed))).toBe(true);
    expect(await validateWithReferenceSdk(bytes, format, credentials)).toEqual(before);
    // Still marked as AI-generated in its metadata, beside the bytes.
    expect(metadata).toMatchObject({
      'ai-generated': 'true',
      'digital-source-type': 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia',
      'ai-mark': 'provider_c2pa',
    });
  });

  it('an unsigned image from the same model is marked by the service inside the file', async () => {
    const plain = encodePng(makeImage(16, 16, () => [40, 80, 120, 255]));
    const { view, bytes, metadata } = await runImageGen(plain);
    expect(view.aiMark).toBe('service');
    expect(bytes.length).toBeGreaterThan(plain.length);
    expect(readMediaMark(bytes)).not.toBeNull();
    expect(metadata).toMatchObject({ 'ai-generated': 'true', 'ai-mark': 'service' });
  });
});
